# Runs the dispatch fuzzer for about ten seconds on a fresh corpus seeded by
# rgpu_apigen_fuzz_seeds. Fails when it finds a crash; the reproducer is
# left in WORK.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/seeds)
execute_process(COMMAND ${SEEDGEN} ${WORK}/seeds RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "seed generator failed: rc=${rc}")
endif()
execute_process(
  COMMAND ${FUZZER} -max_total_time=10 -timeout=20 -rss_limit_mb=2048 -max_len=4096
          -artifact_prefix=${WORK}/ ${WORK}/corpus ${WORK}/seeds
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzzer failed: rc=${rc}; reproducer in ${WORK}")
endif()
