#!/usr/bin/env bash
# The benchmark suite in one command: sets up, builds (Release, with the
# benchmarks), runs benchmarks/run_suite.sh into benchmarks/results/ and
# regenerates docs/benchmarks.md with its plots in docs/img/.
#   ./scripts/bench.sh           full run (about 10 minutes on 2 cores)
#   ./scripts/bench.sh --smoke   seconds; results and page go to build/bench-smoke/
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
smoke=""
[ "${1:-}" = "--smoke" ] && smoke="--smoke"
"$root/scripts/setup.sh"
# Plots need matplotlib from Debian; the tables are written without it.
if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if ! { $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q python3-matplotlib; }; then
    echo "rgpu bench: python3-matplotlib could not be installed; the page will have no plots" >&2
  fi
fi
build="${BUILD_DIR:-$root/build}"
CMAKE_ARGS="${CMAKE_ARGS:-} -DRGPU_BUILD_BENCHMARKS=ON" "$root/scripts/build.sh"
python=python3
[ -x /usr/bin/python3 ] && python=/usr/bin/python3  # Debian's, where matplotlib is
if [ -n "$smoke" ]; then
  "$root/benchmarks/run_suite.sh" --smoke --build "$build" --out "$build/bench-smoke"
  "$python" "$root/benchmarks/report.py" --results "$build/bench-smoke" --out "$build/bench-smoke/report" --check
else
  "$root/benchmarks/run_suite.sh" --build "$build" --out "$root/benchmarks/results"
  # The pool scheduler's simulator (about a minute); report.py adds its section.
  mkdir -p "$root/benchmarks/pool/results"
  "$build/bin/rgpu-pool-sim" --out "$root/benchmarks/pool/results/pool-sim.json"
  "$python" "$root/benchmarks/report.py" --results "$root/benchmarks/results" --out "$root/docs"
fi
