# Strict test configuration: in CI (CI=true in the environment when CMake
# runs, or -DRGPU_STRICT_TESTS=ON) a test suite that cannot be built as it
# should, for want of a tool or library, fails the configure instead of
# dropping its tests quietly. Elsewhere it says what is left out and goes on.
include_guard(GLOBAL)

option(RGPU_STRICT_TESTS "a missing test dependency fails the configure (default: on when CI=true)" OFF)
if("$ENV{CI}" STREQUAL "true")
  set(RGPU_STRICT_TESTS_ON TRUE)
else()
  set(RGPU_STRICT_TESTS_ON ${RGPU_STRICT_TESTS})
endif()

# rgpu_test_dependency_missing(<what is left out and why>): FATAL_ERROR when
# strict, a status line otherwise.
function(rgpu_test_dependency_missing why)
  if(RGPU_STRICT_TESTS_ON)
    message(FATAL_ERROR "rgpu: ${why} (a strict, CI configure does not drop tests; install it or unset CI)")
  else()
    message(STATUS "rgpu: ${why}")
  endif()
endfunction()
