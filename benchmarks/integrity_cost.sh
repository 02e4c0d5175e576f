#!/usr/bin/env bash
# What per-message integrity costs (docs/security.md, "Integrity after the
# handshake"): the small-call round trip and copy bandwidth of a session
# without it (A) and of a sealed one (B, RGPU_INTEGRITY=on, which an
# embedded rgpud grants even on loopback), side by side in one run. A and B
# take turns, each a whole `rgpu run` on an embedded rgpud (CPU device), and
# the ratio B/A is taken turn by turn.
#
#   benchmarks/integrity_cost.sh [BUILD] [ROUNDS] [ITERS]
#
# UCX_TLS picks the transport as usual. Prints the median p50 per call and
# the median copy rate of each side and the median ratio B/A with its spread.
set -euo pipefail
build="${1:-$(cd "$(dirname "$0")/.." && pwd)/build}"
rounds="${2:-5}"
iters="${3:-3000}"
sizes="65536,1048576,16777216,67108864"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((i = 0; i < rounds; ++i)); do
  for side in a b; do
    mode=auto
    [ "$side" = b ] && mode=on
    RGPU_INTEGRITY=$mode "$build/bin/rgpu" run --device cpu -- "$build/bin/rgpu-bench" latency --iters "$iters" \
      --json "$out/$side-latency.jsonl" >/dev/null
    RGPU_INTEGRITY=$mode "$build/bin/rgpu" run --device cpu -- "$build/bin/rgpu-bench" bandwidth --sizes "$sizes" \
      --reps 5 --json "$out/$side-bandwidth.jsonl" >/dev/null
  done
done
PYTHONPATH="$(cd "$(dirname "$0")" && pwd)" python3 - "$out" <<'PY'
import os, sys
from paired import print_ratios, rows
out = sys.argv[1]
figures = {}
for side in "ab":
    per_round = []
    for lat, bw in zip(rows(os.path.join(out, f"{side}-latency.jsonl")),
                       rows(os.path.join(out, f"{side}-bandwidth.jsonl"))):
        r = {f"{op['op']} (us)": op["p50_us"] for op in lat["ops"]}
        for p in bw["points"]:
            if p["memory"] == "pinned" or not bw.get("pinned_available"):
                r[f"{p['direction']} {p['size'] >> 10} KiB {p['memory']} (MB/s)"] = p["mb_per_s"]
        per_round.append(r)
    figures[side] = per_round
print(f"rounds = {len(figures['a'])}; A = unsealed, B = sealed (RGPU_INTEGRITY=on); "
      f"UCX_TLS={os.environ.get('UCX_TLS', '(UCX default)')}")
print_ratios(figures["a"], figures["b"], "figure")
PY
