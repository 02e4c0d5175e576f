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

# The first "PREFIX ADDR" line of a log, waited for (bounded).
address_in() {
  local log="$1" prefix="$2" a=""
  for _ in $(seq 300); do
    a="$(sed -n "s/^$prefix \\([^ ]*\\).*/\\1/p" "$log" | head -n 1)"
    [ -n "$a" ] && { echo "$a"; return 0; }
    sleep 0.1
  done
  echo "no '$prefix' in $log:" >&2
  cat "$log" >&2
  return 1
}

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/key"
chmod 600 "$work/key"
"$build/bin/rgpu-pool" --listen 127.0.0.1:0 --key-file "$work/key" >"$work/pool.log" 2>&1 &
pids+=($!)
pool="$(address_in "$work/pool.log" "rgpu-pool listening on")"
UCX_TLS=tcp RGPU_CPU_DEVICE_MEMORY=4G RGPU_LOG_LEVEL=info "$build/bin/rgpud" --listen 127.0.0.1:0 --device cpu --pool "$pool" --pool-key-file "$work/key" \
  --pool-id torch-cpu >"$work/rgpud.log" 2>&1 &
pids+=($!)
address_in "$work/rgpud.log" "rgpud listening on" >/dev/null
for _ in $(seq 200); do
  "$build/bin/rgpu" pool status --pool "$pool" 2>/dev/null | grep -q torch-cpu && break
  sleep 0.1
done

rc=0
RGPU_POOL_KIND=cpu RGPU_REQUEST=mem=1G RGPU_TENANT=torch UCX_TLS=tcp "$repo/scripts/torch-env.sh" test --pool "$pool" --build-dir "$build" \
  -- "$@" || rc=$?
status="$("$build/bin/rgpu" pool status --pool "$pool")"
echo "$status"
if [ "$rc" -ne 0 ]; then
  echo "the suite failed through the pool (rgpud's log follows)" >&2
  tail -n 40 "$work/rgpud.log" >&2
  exit "$rc"
fi
sessions=$(grep -c "session accepted" "$work/rgpud.log" || true)
echo "sessions admitted on pool leases: $sessions"
grep "session accepted" "$work/rgpud.log" | head -n 2
[ "$sessions" -ge 2 ] || { echo "the suite's processes did not reach rgpud through the pool" >&2; exit 1; }
echo "$status" | grep -q "torch-cpu" || { echo "the server left the pool" >&2; exit 1; }
echo "$status" | grep -q "leases: 0" || { echo "a lease outlived its session" >&2; exit 1; }
