#!/usr/bin/env bash
# Time from a client's start to its first device call, through the pool
# (RGPU_POOL: ask rgpu-pool, get a lease, connect with it) and direct
# (RGPU_SERVER), side by side in one run: one rgpu-pool and one rgpud in
# pool mode (CPU device, loopback), and rgpu-pool-startup run against them
# in turns (direct, pool, direct, pool ...). The direct runs use a lease
# signed for each run the way the pool would (a server in pool mode admits
# nothing else), so the difference is the pool's round trip and queue.
#
#   benchmarks/pool/startup.sh [BUILD] [ROUNDS]
#
# Prints each round's times and the medians.
set -euo pipefail
build="${1:-build}"
rounds="${2:-11}"
out=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT
export UCX_TLS="${UCX_TLS:-tcp}"
export LD_LIBRARY_PATH="$build/lib/rgpu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$out/key"
chmod 600 "$out/key"

# wait_addr LOG PREFIX: the address after PREFIX in LOG, once it is there.
wait_addr() {
  local i addr=""
  for ((i = 0; i < 300; i++)); do
    addr="$(sed -n "s/^$2 listening on \\([^ ]*\\).*/\\1/p" "$1")"
    [ -n "$addr" ] && { echo "$addr"; return; }
    sleep 0.1
  done
  cat "$1" >&2
  echo "startup.sh: $2 did not start" >&2
  exit 1
}

"$build/bin/rgpu-pool" --listen 127.0.0.1:0 --key-file "$out/key" >"$out/pool.log" 2>&1 &
pids+=($!)
pool="$(wait_addr "$out/pool.log" rgpu-pool)"
"$build/bin/rgpud" --listen 127.0.0.1:0 --device cpu --pool "$pool" --pool-key-file "$out/key" \
  --pool-id bench >"$out/rgpud.log" 2>&1 &
pids+=($!)
server="$(wait_addr "$out/rgpud.log" rgpud)"
for ((i = 0; i < 100; i++)); do
  "$build/bin/rgpu" pool status --pool "$pool" 2>/dev/null | grep -q "bench at" && break
  sleep 0.1
done

# One run of the program; prints its milliseconds to the first call.
run_direct() {
  # A lease for this run from the pool (not timed; rgpu run hands it to its
  # child and gives it back to the pool when the child ends, which leaves
  # the token valid at rgpud, good for one session), then the timed start.
  "$build/bin/rgpu" run --pool "$pool" --kind cpu -- \
    sh -c 'printf %s "$RGPU_LEASE" >"$0/lease"; printf %s "$RGPU_SERVER" >"$0/server"' "$out"
  local lease
  lease="$(cat "$out/lease"; printf x)"  # keeps the token's last newline
  RGPU_SERVER="$(cat "$out/server")" RGPU_LEASE="${lease%x}" \
    bash -c 'RGPU_BENCH_START_NS=$(date +%s%N) exec "$0"' "$build/bin/rgpu-pool-startup" |
    sed -n 's/^first_call_ms=//p'
}
# The same start (a shell taking the time, then exec) for both, so that
# only what the client library does differs.
run_pool() {
  RGPU_POOL="$pool" RGPU_POOL_KIND=cpu bash -c 'RGPU_BENCH_START_NS=$(date +%s%N) exec "$0"' \
    "$build/bin/rgpu-pool-startup" | sed -n 's/^first_call_ms=//p'
}

direct=()
viapool=()
printf "%-6s %12s %12s\n" round direct_ms pool_ms
for ((r = 1; r <= rounds; r++)); do
  d="$(run_direct)"
  p="$(run_pool)"
  direct+=("$d")
  viapool+=("$p")
  printf "%-6s %12s %12s\n" "$r" "$d" "$p"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
md="$(median "${direct[@]}")"
mp="$(median "${viapool[@]}")"
printf "%-6s %12s %12s\n" median "$md" "$mp"
awk -v d="$md" -v p="$mp" 'BEGIN { printf "pool adds %.3f ms to the first call (%.2fx)\n", p - d, p / d }'
