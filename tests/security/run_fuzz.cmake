# Runs one security fuzzer for about ten seconds on a fresh corpus seeded by
# rgpu_security_fuzz_seeds. Fails when the fuzzer finds a crash, a broken
# invariant or (for the handshake) a leak; the reproducer is left in WORK.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/seeds-handshake ${WORK}/seeds-session)
execute_process(COMMAND ${SEEDGEN} ${WORK}/seeds-handshake ${WORK}/seeds-session RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "seed generator failed: rc=${rc}")
endif()
if(WHICH STREQUAL "session")
  # The CPU device's own threads and caches live across inputs by design.
  set(leaks -detect_leaks=0)
else()
  set(leaks -detect_leaks=1)
endif()
execute_process(
  COMMAND ${FUZZER} -max_total_time=10 -timeout=20 -rss_limit_mb=4096 -max_len=65536 ${leaks}
          -artifact_prefix=${WORK}/ ${WORK}/corpus ${WORK}/seeds-${WHICH}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzzer failed: rc=${rc}; reproducer in ${WORK}")
endif()
