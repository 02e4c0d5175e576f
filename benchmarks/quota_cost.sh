#!/usr/bin/env bash
# The cost of rgpud's quota check, side by side in one run: two rgpud of one
# build on loopback (CPU device), A serving its device whole (no quota) and B
# serving it as one slice with an exact memory quota, and `rgpu-bench
# latency` run against them in turns (A B A B ...). Every allocation on B is
# checked against the slice's quota (docs/sharing.md); the ratio B/A per call
# is that check's cost on the small-call round trip and on allocation.
#
#   benchmarks/quota_cost.sh [BUILD] [ROUNDS] [ITERS]
#
# Prints each round's p50 per call and the median ratio B/A per call.
set -euo pipefail
build="${1:-build}"
rounds="${2:-7}"
iters="${3:-5000}"
out=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT

# start NAME ARGS...: an rgpud on a free loopback port; sets port_NAME.
start() {
  local name="$1"
  shift
  "$build/bin/rgpud" --listen 127.0.0.1:0 --device cpu --insecure "$@" >"$out/$name.log" 2>&1 &
  pids+=($!)
  local i addr=""
  for ((i = 0; i < 300; i++)); do
    addr="$(sed -n 's/^rgpud listening on \([^ ]*\).*/\1/p' "$out/$name.log")"
    [ -n "$addr" ] && break
    sleep 0.1
  done
  [ -n "$addr" ] || { cat "$out/$name.log" >&2; echo "quota_cost: rgpud $name did not start" >&2; exit 1; }
  printf -v "addr_$name" '%s' "$addr"
}
start a
start b --slices 0:1G@1.0
for ((i = 0; i < rounds; ++i)); do
  for side in a b; do
    addr="addr_$side"
    RGPU_SERVER="${!addr}" "$build/bin/rgpu" run --server "${!addr}" -- "$build/bin/rgpu-bench" latency \
      --iters "$iters" --warmup 500 --json "$out/$side.jsonl" >/dev/null
  done
done
python3 - "$out/a.jsonl" "$out/b.jsonl" <<'EOF'
import json, statistics, sys
def p50s(path):
    return [{op["op"]: op["p50_us"] for op in json.loads(l)["ops"]} for l in open(path) if l.strip()]
a, b = p50s(sys.argv[1]), p50s(sys.argv[2])
ops = list(a[0])
print("round  " + "  ".join(f"{op:>28}" for op in ops))
for i, (ra, rb) in enumerate(zip(a, b)):
    print(f"{i:5}  " + "  ".join(f"{ra[op]:12.1f} / {rb[op]:12.1f}" for op in ops))
print("median ratio with quota / without:")
for op in ops:
    print(f"  {op:28} {statistics.median(rb[op] / ra[op] for ra, rb in zip(a, b)):.3f}")
EOF
