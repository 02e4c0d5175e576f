#!/usr/bin/env bash
# Small-call round trip of two rgpu builds side by side in one run: A and B
# take turns (A B A B ...), each turn a whole `rgpu run` of `rgpu-bench
# latency` on an embedded rgpud (CPU device), and the ratio B/A is taken turn
# by turn, so that a machine whose speed drifts affects both alike.
#
#   benchmarks/ab_latency.sh BUILD_A BUILD_B [ROUNDS] [ITERS]
#
# BUILD_* are build folders (with bin/rgpu, bin/rgpu-bench, lib/librgpu.so);
# UCX_TLS picks the transport as usual. Prints each round's p50 per call and
# the median ratio B/A per call.
set -euo pipefail
a="${1:?usage: ab_latency.sh BUILD_A BUILD_B [ROUNDS] [ITERS]}"
b="${2:?usage: ab_latency.sh BUILD_A BUILD_B [ROUNDS] [ITERS]}"
rounds="${3:-7}"
iters="${4:-5000}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((i = 0; i < rounds; ++i)); do
  for side in a b; do
    build=$a
    [ "$side" = b ] && build=$b
    "$build/bin/rgpu" run --device cpu -- "$build/bin/rgpu-bench" latency --iters "$iters" \
      --json "$out/$side.jsonl" >/dev/null
  done
done
python3 - "$out/a.jsonl" "$out/b.jsonl" "$a" "$b" <<'EOF'
import json, statistics, sys
def p50s(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    return [{op["op"]: op["p50_us"] for op in r["ops"]} for r in rows]
a, b = p50s(sys.argv[1]), p50s(sys.argv[2])
print(f"A = {sys.argv[3]}\nB = {sys.argv[4]}\nrounds = {len(a)}")
print(f"{'call':<18} {'A p50 us (median)':>18} {'B p50 us (median)':>18} {'B/A (median of rounds)':>24}")
for op in a[0]:
    ra = [r[op] for r in a]
    rb = [r[op] for r in b]
    ratio = statistics.median(y / x for x, y in zip(ra, rb))
    print(f"{op:<18} {statistics.median(ra):>18.2f} {statistics.median(rb):>18.2f} {ratio:>24.3f}")
EOF
