#!/usr/bin/env bash
# Configures and builds rgpu into build/ (BUILD_DIR overrides). Extra
# arguments are passed to `cmake --build` (e.g. --target rgpud).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
jobs="${JOBS:-2}"
cmake_args=(-S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}")
if [ "${CI:-}" = "true" ]; then cmake_args+=(-DRGPU_WERROR=ON); fi
cmake "${cmake_args[@]}" ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$jobs" "$@"
