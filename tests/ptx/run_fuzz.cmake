# Runs the PTX parser fuzzer (cmake/FuzzRun.cmake: about ten seconds, a seed
# fixed per commit) on a fresh corpus seeded with the nvcc-built PTX corpus
# (SEEDS). Fails when it finds a crash; the input is kept in ARTIFACTS.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/FuzzRun.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
rgpu_run_fuzzer(CORPUS ${WORK} SEEDS ${SEEDS}
                OPTIONS -timeout=10 -rss_limit_mb=2048 -max_len=65536)
