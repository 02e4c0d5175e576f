#!/usr/bin/env bash
# Small-call round trip and launch rate of two rgpu builds side by side in one
# run: A and B take turns (A B A B ...), each turn a whole `rgpu run` of
# `rgpu-bench latency` and one of `rgpu-bench launch` (10,000 empty kernels)
# on an embedded rgpud (CPU device), and the ratio B/A is taken turn by turn,
# so that a machine whose speed drifts affects both alike.
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
    "$build/bin/rgpu" run --device cpu -- "$build/bin/rgpu-bench" launch --launches 10000 \
      --json "$out/$side-launch.jsonl" >/dev/null
  done
done
PYTHONPATH="$(cd "$(dirname "$0")" && pwd)" python3 - "$out/a.jsonl" "$out/b.jsonl" "$a" "$b" \
  "$out/a-launch.jsonl" "$out/b-launch.jsonl" <<'EOF'
import sys
from paired import print_ratios, rows
def p50s(path):
    return [{op["op"]: op["p50_us"] for op in r["ops"]} for r in rows(path)]
a, b = p50s(sys.argv[1]), p50s(sys.argv[2])
for side, path in ((a, sys.argv[5]), (b, sys.argv[6])):
    for r, l in zip(side, rows(path)):
        r["launch_10k_total_us"] = l["total_ms"] * 1000
        r["launch_enqueue_us"] = l["enqueue_p50_us"]
print(f"A = {sys.argv[3]}\nB = {sys.argv[4]}\nrounds = {len(a)}")
# Each figure is microseconds (p50 per call; the launch total is the whole
# 10,000). Compare a build with itself to see the machine's noise.
print_ratios(a, b, "figure (us)")
EOF
