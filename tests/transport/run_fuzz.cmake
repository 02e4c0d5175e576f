# Runs the frame-layer fuzzer (cmake/FuzzRun.cmake: about ten seconds, a
# seed fixed per commit) on a fresh corpus seeded with a few valid frame
# scripts. Fails when the fuzzer finds a crash, a leak or a broken
# invariant; the input is kept in ARTIFACTS.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/FuzzRun.cmake)
file(REMOVE_RECURSE ${CORPUS})
file(MAKE_DIRECTORY ${CORPUS})
rgpu_run_fuzzer(CORPUS ${CORPUS} SEEDS ${SEEDS}
                OPTIONS -timeout=10 -rss_limit_mb=2048 -max_len=512)
