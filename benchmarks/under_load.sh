#!/usr/bin/env bash
# Latency under load: the small-call round trip through rgpu and the raw UCX
# ping-pong, each measured quiet and while another session's kernels keep
# every core of the CPU device busy, side by side in one run.
#
#   benchmarks/under_load.sh [--rounds N] [--iters N] [--json FILE]
#
# The load is `rgpu-bench busy` in a session of its own on the same rgpud
# (kernels on as many streams as the CPU device has workers, one long
# dependent loop each); the measured client is `rgpu-bench latency`
# (ctx_synchronize, mem_get_info, a 4-byte copy), the raw figure
# `rgpu-ucx-bench latency --size 128`. Quiet and loaded runs alternate for
# --rounds rounds; each figure is the median of the rounds' p50s (and p99s).
# Transport: UCX_TLS (default tcp).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
rounds=3
iters=3000
json=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    --json) json="$2"; shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--iters N] [--json FILE]" >&2; exit 2 ;;
  esac
done
BUILD_DIR="$build" "$root/scripts/build.sh" --target rgpud rgpu_cli rgpu rgpu_cpudev rgpu-bench rgpu-ucx-bench >/dev/null
export UCX_TLS="${UCX_TLS:-tcp}"
bin="$build/bin"
out="$(mktemp -d)"
key="$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export RGPU_AUTH_TOKEN="$key"
cores="$(nproc)"

server_pid=""
busy_pid=""
cleanup() {
  [ -n "$busy_pid" ] && kill "$busy_pid" 2>/dev/null || true
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT

"$bin/rgpud" --listen 127.0.0.1:0 --device cpu >"$out/rgpud.log" 2>&1 &
server_pid=$!
address=""
for _ in $(seq 1 300); do
  address="$(sed -n 's/^rgpud listening on \([^ ]*\).*/\1/p' "$out/rgpud.log" | head -1)"
  [ -n "$address" ] && break
  sleep 0.1
done
[ -n "$address" ] || { echo "under_load.sh: rgpud did not start" >&2; cat "$out/rgpud.log" >&2; exit 1; }

measure() {  # $1: quiet|loaded, $2: round
  local tag="$1-$2"
  if [ "$1" = loaded ]; then
    "$bin/rgpu" run --server "$address" -- "$bin/rgpu-bench" busy --seconds 600 --streams $((2 * cores)) \
      --blocks "$cores" >/dev/null 2>&1 &
    busy_pid=$!
    sleep 2  # its kernels running
  fi
  "$bin/rgpu" run --server "$address" -- "$bin/rgpu-bench" latency --iters "$iters" --warmup 200 \
    --json "$out/rgpu-$tag.json" >/dev/null
  "$bin/rgpu-ucx-bench" latency --size 128 --iters "$iters" --warmup 200 --json "$out/raw-$tag.json" >/dev/null
  if [ -n "$busy_pid" ]; then
    kill "$busy_pid" 2>/dev/null || true
    wait "$busy_pid" 2>/dev/null || true
    busy_pid=""
    sleep 3  # its session's last kernels end before the next quiet run
  fi
}
for r in $(seq 1 "$rounds"); do
  measure quiet "$r"
  measure loaded "$r"
  echo "round $r of $rounds" >&2
done

python3 - "$out" "$rounds" "$cores" "$json" <<'PYEOF'
import json, statistics, sys
out, rounds, cores, dest = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

def figures(path, op=None):
    d = json.load(open(path))
    if op is None:  # rgpu-ucx-bench: one latency figure
        return d["p50_us"], d["p99_us"]
    for o in d["ops"]:
        if o["op"] == op:
            return o["p50_us"], o["p99_us"]
    raise KeyError(op)

rows = []
for what, op in (("raw UCX ping-pong (128 B)", None), ("rgpu ctx_synchronize", "ctx_synchronize"),
                 ("rgpu mem_get_info", "mem_get_info"), ("rgpu 4-byte copy", "memcpy_dtoh_4b")):
    row = {"what": what}
    for state in ("quiet", "loaded"):
        p50s, p99s = [], []
        for r in range(1, rounds + 1):
            f = figures(f"{out}/{'raw' if op is None else 'rgpu'}-{state}-{r}.json", op)
            p50s.append(f[0])
            p99s.append(f[1])
        row[state] = {"p50_us": statistics.median(p50s), "p99_us": statistics.median(p99s)}
    rows.append(row)
raw = rows[0]
print(f"cores {cores}, {rounds} rounds, medians of the rounds")
print(f"{'':28} {'quiet p50':>10} {'p99':>9} {'loaded p50':>11} {'p99':>9} {'loaded/raw p50':>15}")
for r in rows:
    q, l = r["quiet"], r["loaded"]
    ratio = l["p50_us"] / raw["loaded"]["p50_us"]
    r["loaded_over_raw_p50"] = ratio
    print(f"{r['what']:28} {q['p50_us']:10.1f} {q['p99_us']:9.1f} {l['p50_us']:11.1f} {l['p99_us']:9.1f} {ratio:15.2f}")
if dest:
    json.dump({"cores": cores, "rounds": rounds, "rows": rows}, open(dest, "w"), indent=1)
PYEOF
