#!/usr/bin/env bash
# One command from a fresh clone: install what is missing, build, start an
# embedded rgpud (CPU device when there is no GPU) and run the demo through rgpu.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
BUILD_DIR="${BUILD_DIR:-$root/build}" "$root/scripts/build.sh" --target rgpu rgpud rgpu_cli rgpu-demo rgpu_cpudev
build="${BUILD_DIR:-$root/build}"
echo "== rgpu run -- rgpu-demo (transport: ${UCX_TLS:-chosen by UCX})"
exec "$build/bin/rgpu" run -- "$build/bin/rgpu-demo"
