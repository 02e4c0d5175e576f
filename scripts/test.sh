#!/usr/bin/env bash
# One command from a fresh clone: install what is missing, build everything
# and run every test (ctest). CI runs exactly this (.ci/run).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
build="${BUILD_DIR:-$root/build}"
BUILD_DIR="$build" "$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure -j"${JOBS:-2}" --timeout 600 "$@"
