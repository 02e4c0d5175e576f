#!/usr/bin/env bash
# Refreshes the committed CUDA 12 facts (api/*.exports, *.decls,
# libcudart12.abi) from Debian trixie's CUDA 12 packages: their headers and,
# for the cross-checks, their libraries. Only needed when a description gains
# a CUDA 12 library or trixie's CUDA moves; building and `gen_api.py --check`
# never need it.
#
#   sudo scripts/cuda12-facts.sh [DIR]
#
# The packages are fetched with apt inside the PyTorch root of
# scripts/torch-env.sh (built or reused; Debian packages only) and unpacked
# into DIR (default: /var/cache/rgpu/cuda12, about 3 GB), which then serves as
# RGPU_CUDA12_ROOT=DIR/usr for the generator. Then the facts are rewritten and
# everything is regenerated: review `git diff` and commit.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-/var/cache/rgpu/cuda12}"
# What the facts are read from: headers (nvidia-cuda-dev, libnvidia-ml-dev)
# and the libraries the export lists are checked against.
packages=(nvidia-cuda-dev libnvidia-ml-dev libnvidia-ml1 libcudart12 libcublas12 libcublaslt12 libnvrtc12)

root="$("$repo/scripts/torch-env.sh" path | tail -1)"
work="$root/tmp/rgpu-cuda12-facts"
rm -rf "$work" && mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
echo "cuda12-facts: downloading ${packages[*]} (trixie)" >&2
chroot "$root" sh -c "cd /tmp/rgpu-cuda12-facts && apt-get download -q ${packages[*]}" >&2
mkdir -p "$dest"
for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$dest"; done

export RGPU_CUDA12_ROOT="$dest/usr"
cd "$repo"
python3 api/gen_api.py --refresh-library-facts --cuda12-root "$RGPU_CUDA12_ROOT"
python3 api/gen_api.py --extract-cuda12 "$RGPU_CUDA12_ROOT/include" \
  --cudart12 "$RGPU_CUDA12_ROOT/lib/x86_64-linux-gnu/libcudart.so.12"
echo "cuda12-facts: done; review git diff client-shim/" >&2
