#!/usr/bin/env bash
# Instructions per operation, client and server, counted by callgrind: a
# figure that does not move with the machine's load, unlike a time.
#
#   benchmarks/instructions.sh [--ops "call launch copy4k copy1m"] [--count N] [--out DIR]
#
# For each operation, rgpud (CPU device) and `rgpu-bench ops` run under
# callgrind twice, with N and 2N operations after the same set-up; the
# difference of the two runs' counts divided by N is the cost of one
# operation, with start-up and teardown cancelled out. Each side's count is
# split into UCX's own instructions (libucp, libuct, libucs, libucm and UCX's
# transport modules) and the rest (rgpu, Cap'n Proto, libc, the kernel's
# work on the CPU device); spinning on locks is counted apart
# (instructions_summary.py). Needs valgrind. Prints a table and writes
# DIR/instructions.json. Transport: UCX_TLS (default tcp).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
ops="call launch copy4k copy1m"
count=200
out="$build/instructions"
while [ $# -gt 0 ]; do
  case "$1" in
    --ops) ops="$2"; shift 2 ;;
    --count) count="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: $0 [--ops LIST] [--count N] [--out DIR]" >&2; exit 2 ;;
  esac
done
command -v valgrind >/dev/null || { echo "instructions.sh: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
BUILD_DIR="$build" "$root/scripts/build.sh" --target rgpud rgpu_cli rgpu rgpu_cpudev rgpu-bench >/dev/null
export UCX_TLS="${UCX_TLS:-tcp}"
# Nothing polls: every wait sleeps until its event, so the counts are the
# work of an operation, not time spent waiting (which callgrind's slowness
# would inflate).
export RGPU_TRANSPORT_SPIN_US=0
key="$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
mkdir -p "$out"

server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap stop_server EXIT

for op in $ops; do
  for n in "$count" "$((2 * count))"; do
    dir="$out/$op-$n"
    rm -rf "$dir" && mkdir -p "$dir"
    RGPU_AUTH_TOKEN="$key" valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$dir/server.cg" \
      "$build/bin/rgpud" --listen 127.0.0.1:0 --device cpu >"$dir/server.log" 2>&1 &
    server_pid=$!
    address=""
    for _ in $(seq 1 1200); do  # up to 120 s: rgpud starts slowly under callgrind
      address="$(sed -n 's/^rgpud listening on \([^ ]*\).*/\1/p' "$dir/server.log" | head -1)"
      [ -n "$address" ] && break
      kill -0 "$server_pid" 2>/dev/null || break
      sleep 0.1
    done
    [ -n "$address" ] || { echo "instructions.sh: rgpud did not start; $dir/server.log:" >&2; cat "$dir/server.log" >&2; exit 1; }
    RGPU_AUTH_TOKEN="$key" RGPU_POLL_US=0 "$build/bin/rgpu" run --server "$address" -- \
      valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$dir/client.cg" \
      "$build/bin/rgpu-bench" ops --op "$op" --count "$n" >"$dir/client.log" 2>&1 \
      || { echo "instructions.sh: the client failed; $dir/client.log:" >&2; cat "$dir/client.log" >&2; exit 1; }
    stop_server
    echo "counted $op x $n" >&2
  done
done

python3 "$root/benchmarks/instructions_summary.py" "$out" "$count" $ops
