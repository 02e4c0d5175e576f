#!/usr/bin/env bash
# The server's threads at 1, 16 and 64 sessions: for each build folder given
# (its bin/rgpud, bin/rgpu, lib/), one rgpud on the CPU device on loopback
# and one round of N load clients at once (tests/load/load_test.py, 4 s, 2
# threads each); prints a markdown table of the idle count and the peak
# sampled while the clients ran. The load client itself comes from BUILD_DIR
# (default build/), built first. See docs/performance.md, "Server threads".
#   scripts/server-threads.sh BUILD [BUILD...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
[ $# -ge 1 ] || { echo "usage: scripts/server-threads.sh BUILD [BUILD...]" >&2; exit 2; }
BUILD_DIR="$build" "$root/scripts/build.sh" --target rgpud rgpu_cli rgpu rgpu_cpudev load_client >/dev/null
export UCX_TLS="${UCX_TLS:-tcp}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "| build | idle | 1 session | 16 sessions | 64 sessions | results |"
echo "| --- | --- | --- | --- | --- | --- |"
for b in "$@"; do
  row="| \`$b\`"
  idle="" peaks="" ok="all right"
  for n in 1 16 64; do
    if ! python3 "$root/tests/load/load_test.py" --bin-dir "$b/bin" --client "$build/bin/load_client" \
        --clients "$n" --seconds 4 --rounds 1 --threads 2 --device-memory 8G --json "$out/$n.json" >/dev/null; then
      ok="FAILED (see the JSON in $out)"
    fi
    read -r i p < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["rows"][0]; print(r["threads"], r["peak_threads"])' "$out/$n.json")
    idle=$i
    peaks="$peaks | $p"
  done
  echo "$row | $idle$peaks | $ok |"
done
