# Runs the fatbin fuzzer (cmake/FuzzRun.cmake: about ten seconds, a seed
# fixed per commit) on a fresh corpus seeded with the generated images.
# Fails when the fuzzer finds a crash or leak; the input is kept in ARTIFACTS.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/FuzzRun.cmake)
file(REMOVE_RECURSE ${CORPUS})
file(MAKE_DIRECTORY ${CORPUS})
rgpu_run_fuzzer(CORPUS ${CORPUS} SEEDS ${SEEDS} ${SEEDS2}
                OPTIONS -timeout=10 -rss_limit_mb=2048 -max_len=65536)
