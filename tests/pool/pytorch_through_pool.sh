#!/bin/bash
# The PyTorch suite, unchanged, through the pool: an rgpu-pool and a CPU-device
# rgpud registered with it, on loopback; the suite's program asks the pool
# (rgpu run --pool, RGPU_POOL_KIND=cpu), gets a signed lease and runs on the
# server the pool chose. The processes the suite starts (a device count in a
# fresh interpreter, the whole suite again under expandable segments) ask
# the pool for leases of their own; each asks for 1 GiB of the 4 GiB device,
# since a request without memory takes its slice whole and a child would
# wait for its parent to end. Then `rgpu pool status` must show the server again
# and no lease left: the session's end freed it.
#
#   tests/pool/pytorch_through_pool.sh BUILD_DIR [PYTEST ARGS...]
set -euo pipefail
build="$(readlink -f "$1")"
shift
repo="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/rgpu-pool-torch.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${RGPU_POOL_TORCH_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

. "$(dirname "$0")/pool_fixture.sh"
start_pool
start_cpu_server torch-cpu 4G

rc=0
RGPU_POOL_KIND=cpu RGPU_REQUEST=mem=1G RGPU_TENANT=torch UCX_TLS=tcp "$repo/scripts/torch-env.sh" test --pool "$pool" --build-dir "$build" \
  -- "$@" || rc=$?
status="$("$build/bin/rgpu" pool status --pool "$pool")"
echo "$status"
if [ "$rc" -ne 0 ]; then
  echo "the suite failed through the pool (rgpud's log follows)" >&2
  tail -n 40 "$work/rgpud-torch-cpu.log" >&2
  exit "$rc"
fi
sessions=$(grep -c "session accepted" "$work/rgpud-torch-cpu.log" || true)
echo "sessions admitted on pool leases: $sessions"
grep "session accepted" "$work/rgpud-torch-cpu.log" | head -n 2
[ "$sessions" -ge 2 ] || { echo "the suite's processes did not reach rgpud through the pool" >&2; exit 1; }
echo "$status" | grep -q "torch-cpu" || { echo "the server left the pool" >&2; exit 1; }
echo "$status" | grep -q "leases: 0" || { echo "a lease outlived its session" >&2; exit 1; }
