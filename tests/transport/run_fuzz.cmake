# Runs the frame-layer fuzzer for about ten seconds on a fresh corpus seeded
# with a few valid frame scripts. Fails when the fuzzer finds a crash, a leak
# or a broken invariant.
file(REMOVE_RECURSE ${CORPUS})
file(MAKE_DIRECTORY ${CORPUS})
execute_process(
  COMMAND ${FUZZER} -max_total_time=10 -timeout=10 -rss_limit_mb=2048 -max_len=512
          -artifact_prefix=${CORPUS}/ ${CORPUS} ${SEEDS}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzzer failed: rc=${rc}; reproducer in ${CORPUS}")
endif()
