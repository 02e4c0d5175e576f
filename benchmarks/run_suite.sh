#!/usr/bin/env bash
# Runs the benchmark suite against a build tree and writes JSON results:
#   raw UCX (rgpu-ucx-bench, ucx_perftest), rgpu remote (rgpu run) and local
#   (the CPU device's driver library, no rgpu), per UCX transport, plus the
#   module-cache check (two runs of one program against one cache folder).
# Usage: run_suite.sh [--smoke] [--build DIR] [--out DIR] [--transports "tcp shm"]
# Each result is one JSON line; the report (report.py) reads the folder.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"
out="$root/benchmarks/results"
smoke=""
transports="tcp shm"
while (($#)); do
  case "$1" in
    --smoke) smoke="--smoke" ;;
    --build) build="$2"; shift ;;
    --out) out="$2"; shift ;;
    --transports) transports="$2"; shift ;;
    *) echo "run_suite.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
bin="$build/bin"
cpudev="$build/lib/librgpu-cpudev.so"
for f in "$bin/rgpu" "$bin/rgpud" "$bin/rgpu-bench" "$bin/rgpu-ucx-bench" "$cpudev"; do
  [ -e "$f" ] || { echo "run_suite.sh: $f is missing; build first (scripts/build.sh)" >&2; exit 1; }
done
rm -rf "$out"
mkdir -p "$out"
tls_of() { case "$1" in tcp) echo tcp ;; shm) echo posix,cma,tcp ;; *) echo "$1" ;; esac; }
# Every step is bounded; a failure is recorded, not fatal, except in smoke
# mode (where the suite itself is under test).
step() {
  local limit="$1"; shift
  if ! timeout "$limit" "$@"; then
    echo "run_suite.sh: failed: $*" >&2
    [ -z "$smoke" ] || exit 1
  fi
}
commands="$out/commands.txt"
run() {  # run LIMIT ENV... -- COMMAND...: logs the command line, then runs it
  echo "$*" >>"$commands"
  local limit="$1"; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  step "$limit" env "${envs[@]}" "$@"
}

# The machine.
{
  printf '{"date":"%s","host_cpus":%s,"cpu":"%s","kernel":"%s","ucx":"%s","commit":"%s","smoke":%s}\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(nproc)" \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//; s/"//g')" \
    "$(uname -r)" "$(ucx_info -v 2>/dev/null | sed -n 's/^# Version //p' | head -1)" \
    "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    "$([ -n "$smoke" ] && echo true || echo false)"
} >"$out/machine.json"

# ucx_perftest beside our own raw figures: TEST SIZE ITERS -> one JSON line.
perftest() {
  local tls="$1" test="$2" size="$3" iters="$4" port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  UCX_TLS="$tls" timeout 60 ucx_perftest -p "$port" >/dev/null 2>&1 &
  local server=$!
  sleep 0.5
  local line
  line=$(UCX_TLS="$tls" timeout 60 ucx_perftest 127.0.0.1 -p "$port" -t "$test" -s "$size" -n "$iters" 2>&1 |
         grep '^Final:' || true)
  wait "$server" 2>/dev/null || true
  echo "ucx_perftest 127.0.0.1 -p PORT -t $test -s $size -n $iters (UCX_TLS=$tls)" >>"$commands"
  # Final: iterations, typical/avg/overall latency (us, one way), avg/overall MB/s, msg rate.
  if [ -n "$line" ]; then
    set -- $line
    printf '{"tool":"ucx_perftest","test":"%s","ucx_tls":"%s","size":%s,"latency_typical_us":%s,"latency_avg_us":%s,"mb_per_s":%s}\n' \
      "$test" "$tls" "$size" "$3" "$4" "$(awk -v m="$6" 'BEGIN{print m*1.048576}')"
  else
    printf '{"tool":"ucx_perftest","test":"%s","ucx_tls":"%s","size":%s,"error":"no result"}\n' "$test" "$tls" "$size"
  fi
}

lat_iters=20000
if [ -n "$smoke" ]; then lat_iters=200; fi
for tr in $transports; do
  tls=$(tls_of "$tr")
  raw="$out/ucx-raw-$tr.jsonl"
  remote="$out/rgpu-remote-$tr.jsonl"
  run 120 UCX_TLS="$tls" -- "$bin/rgpu-ucx-bench" latency --size 128 $smoke --json "$raw" >/dev/null
  run 300 UCX_TLS="$tls" -- "$bin/rgpu-ucx-bench" bandwidth $smoke --json "$raw" >/dev/null
  {
    perftest "$tls" ucp_am_lat 128 "$lat_iters"
    [ -n "$smoke" ] || perftest "$tls" ucp_am_bw 16777216 50
  } >"$out/perftest-$tr.jsonl"
  for mode in latency bandwidth launch app; do
    run 600 UCX_TLS="$tls" -- "$bin/rgpu" run --device cpu -- "$bin/rgpu-bench" "$mode" $smoke --json "$remote" >/dev/null
  done
done
local_out="$out/rgpu-local.jsonl"
for mode in latency bandwidth launch app; do
  run 600 -- "$bin/rgpu-bench" "$mode" $smoke --driver "$cpudev" --json "$local_out" >/dev/null
done

# Module cache: the same program twice against one cache folder.
cache=$(mktemp -d)
for i in 1 2; do
  run 120 UCX_TLS=tcp RGPU_STATS="$out/module-cache.jsonl" -- \
    "$bin/rgpu" run --device cpu --module-cache "$cache/modules" -- "$bin/rgpu-bench" launch --smoke >/dev/null
done
rm -rf "$cache"
echo "run_suite.sh: results in $out"
