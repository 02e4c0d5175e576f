#!/usr/bin/env bash
# Builds rgpu with sanitizers in a folder of its own and runs ctest there.
#   scripts/sanitize.sh address|thread [ctest args...]
# address: ASan + UBSan in build-asan/; thread: TSan in build-tsan/
# (SANITIZE_BUILD_DIR overrides). Without ctest arguments every test runs.
# SANITIZE_TARGETS="t1 t2" builds only those targets (default: all);
# SANITIZE_PROGRAMS="p1 p2" runs only the tests whose command runs one of
# those programs (directly or through `rgpu run`), e.g. rgpu_server_tests.
# See docs/testing.md, "Sanitizer runs".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kind="${1:-}"
[ $# -gt 0 ] && shift
supp="$root/scripts/sanitize"
case "$kind" in
  address)
    build="${SANITIZE_BUILD_DIR:-$root/build-asan}"
    sanitize="address;undefined"
    runtime="$(gcc -print-file-name=libasan.so)"
    # halt_on_error: the first report fails the test. verify_asan_link_order=0:
    # `rgpu run` puts librgpu.so first in LD_PRELOAD, ahead of the runtime
    # preloaded below; the runtime still comes before libc, which is what
    # its interceptors need. Leaks are left to the leak runs of LSan below.
    export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:verify_asan_link_order=0:detect_leaks=${SANITIZE_LEAKS:-0}:print_summary=1:malloc_context_size=30:${ASAN_OPTIONS:-}"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:print_summary=1:${UBSAN_OPTIONS:-}"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
    ;;
  thread)
    build="${SANITIZE_BUILD_DIR:-$root/build-tsan}"
    sanitize="thread"
    runtime="$(gcc -print-file-name=libtsan.so)"
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4:suppressions=$supp/tsan.supp:${TSAN_OPTIONS:-}"
    # UCX's memory hooks (malloc/mmap interposition for its registration
    # cache) crash under TSan when a thread exits; the tests do not need them.
    export UCX_MEM_EVENTS="${UCX_MEM_EVENTS:-no}"
    ;;
  *)
    echo "usage: scripts/sanitize.sh address|thread [ctest args...]" >&2
    exit 2
    ;;
esac

targets=()
for t in ${SANITIZE_TARGETS:-}; do targets+=(--target "$t"); done
BUILD_DIR="$build" BUILD_TYPE="${BUILD_TYPE:-Sanitize}" \
  CMAKE_ARGS="${CMAKE_ARGS:-} -DRGPU_SANITIZE=$sanitize" "$root/scripts/build.sh" "${targets[@]}"

cd "$build"
select=()
if [ -n "${SANITIZE_PROGRAMS:-}" ]; then
  names="$(ctest --show-only=json-v1 | python3 -c '
import json, os, sys
programs = set(sys.argv[1].split())
tests = json.load(sys.stdin)["tests"]
names = [t["name"] for t in tests if any(os.path.basename(a) in programs for a in (t.get("command") or []))]
quote = lambda n: "".join("\\" + c if c in "^$.[]|()*+?\\" else c for c in n)
print("^(" + "|".join(quote(n) for n in names) + ")$" if names else "^$")
' "$SANITIZE_PROGRAMS")"
  select=(-R "$names")
fi
# Programs built by nvcc (the samples) carry no sanitizer, yet get the
# sanitized librgpu.so preloaded by `rgpu run`: the runtime must be loaded
# before libc for its interceptors to work, so every test process gets it.
export LD_PRELOAD="$runtime${LD_PRELOAD:+:$LD_PRELOAD}"
ctest "${select[@]}" --output-on-failure -j"${JOBS:-1}" --timeout "${SANITIZE_TIMEOUT:-1200}" "$@"
