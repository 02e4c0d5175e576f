# Runs the dispatch fuzzer (cmake/FuzzRun.cmake: about ten seconds, a seed
# fixed per commit) on a fresh corpus seeded by rgpu_apigen_fuzz_seeds.
# Fails when it finds a crash; the input is kept in ARTIFACTS.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/FuzzRun.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/seeds)
execute_process(COMMAND ${SEEDGEN} ${WORK}/seeds RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "seed generator failed: rc=${rc}")
endif()
rgpu_run_fuzzer(CORPUS ${WORK}/corpus SEEDS ${WORK}/seeds
                OPTIONS -timeout=20 -rss_limit_mb=2048 -max_len=4096)
