#!/usr/bin/env bash
# The full load test: 32 clients at once for 60 s a round, 3 rounds (the
# first the warm-up), against one rgpud on the CPU device on loopback.
#   scripts/load.sh [load_test.py args...]   e.g. --rounds 5 --clients 16
# LOAD_CLIENTS, LOAD_SECONDS, LOAD_ROUNDS change the defaults; BUILD_DIR
# (default build/) is built first (only what the test needs). The summary
# goes to $BUILD_DIR/load.json. See docs/testing.md, "Load test".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
BUILD_DIR="$build" "$root/scripts/build.sh" --target rgpud rgpu_cli rgpu rgpu_cpudev load_client
export UCX_TLS="${UCX_TLS:-tcp}"
exec python3 "$root/tests/load/load_test.py" --bin-dir "$build/bin" --client "$build/bin/load_client" \
  --clients "${LOAD_CLIENTS:-32}" --seconds "${LOAD_SECONDS:-60}" --rounds "${LOAD_ROUNDS:-3}" \
  --json "$build/load.json" "$@"
