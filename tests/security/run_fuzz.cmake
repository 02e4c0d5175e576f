# Runs one security fuzzer (cmake/FuzzRun.cmake: about ten seconds, a seed
# fixed per commit) on a fresh corpus seeded by rgpu_security_fuzz_seeds.
# Fails when the fuzzer finds a crash, a broken invariant or (for the
# handshake) a leak; the input is kept in ARTIFACTS.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/FuzzRun.cmake)
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
rgpu_run_fuzzer(CORPUS ${WORK}/corpus SEEDS ${WORK}/seeds-${WHICH}
                OPTIONS -timeout=20 -rss_limit_mb=4096 -max_len=65536 ${leaks})
