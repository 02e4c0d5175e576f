# Runs the PTX parser fuzzer (cmake/FuzzRun.cmake: about ten seconds, a seed
# fixed per commit) on a fresh corpus seeded with the nvcc-built PTX corpus
# (SEEDS) and with the hand-written PTX of the interpreter's tensor-core and
# parser tests (TESTS run with RGPU_PTX_SEED_DIR: wmma, mma, ldmatrix,
# cp.async, which nvcc's corpus lacks). Fails when it finds a crash; the
# input is kept in ARTIFACTS.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/FuzzRun.cmake)
file(REMOVE_RECURSE ${WORK} ${WORK}-hand)
file(MAKE_DIRECTORY ${WORK} ${WORK}-hand)
execute_process(COMMAND ${CMAKE_COMMAND} -E env RGPU_PTX_SEED_DIR=${WORK}-hand
                        ${TESTS} --gtest_filter=Tensor.*:Wmma.*:PtxParser.*
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "writing the hand-written seeds failed: ${TESTS} rc=${rc}")
endif()
file(GLOB hand ${WORK}-hand/*.ptx)
list(LENGTH hand n)
if(n LESS 10)
  message(FATAL_ERROR "only ${n} hand-written seeds in ${WORK}-hand")
endif()
message(STATUS "seeds: the corpus in ${SEEDS} and ${n} hand-written modules")
rgpu_run_fuzzer(CORPUS ${WORK} SEEDS ${SEEDS} ${WORK}-hand
                OPTIONS -timeout=10 -rss_limit_mb=2048 -max_len=65536)
