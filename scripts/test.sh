#!/usr/bin/env bash
# One command from a fresh clone: install what is missing, build everything
# and run every test (ctest). CI runs exactly this (.ci/run).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
build="${BUILD_DIR:-$root/build}"
BUILD_DIR="$build" "$root/scripts/build.sh"
# In CI (CI=true) a test that cannot run here fails instead of skipping
# (RGPU_TEST_STRICT=1, read by the tests that could skip; the configure is
# strict too, cmake/TestStrict.cmake), and a full run's count of tests run
# is checked against tests/expected-count below.
strict=0
if [ "${CI:-}" = true ]; then
  strict=1
  export RGPU_TEST_STRICT=1
fi
# ctest's output is also kept in $log, for the count below.
log="$build/Testing/ctest-output.log"
mkdir -p "$build/Testing"
rm -f "$log"
{
# Every test runs once: a test that fails fails the run (docs/testing.md).
(cd "$build" && ctest --output-on-failure -j"${JOBS:-2}" --timeout 600 "$@")
} 2>&1 | tee "$log"
# Coverage that cannot vanish: with no ctest arguments (the whole suite), at
# least min_run tests ran and none skipped but those named there.
if [ "$strict" = 1 ] && [ $# -eq 0 ]; then
  python3 "$root/.ci/check-test-count.py" "$log" "$root/tests/expected-count"
fi

# Then, when RGPU_TEST_SANITIZE=1 asks for it (CI does: .ci/run), a subset
# under ASan + UBSan in build-asan/: the protocol, transport and server unit
# tests and the driver API and fault end-to-end tests over tcp, about 10
# minutes on two cores with the build; see docs/testing.md.
sanitize="${RGPU_TEST_SANITIZE:-}"
if [ "$sanitize" = "1" ]; then
  programs="rgpu_protocol_tests rgpu_transport_tests rgpu_server_tests driver_e2e_tests fault_tests"
  SANITIZE_TARGETS="$programs rgpud rgpu_cli rgpu rgpu_cpudev" SANITIZE_PROGRAMS="$programs" JOBS="${JOBS:-2}" \
    "$root/scripts/sanitize.sh" address -E '\.(shm|pipelined|nopoll)$|ucx_shm'
fi
