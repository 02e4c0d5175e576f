#!/bin/sh
# The PTX sweep with CUDA 12.4's compiler: compiles the kernel corpus with
# the NVRTC 12.4 of the PyTorch root (scripts/torch-env.sh; Debian trixie's
# libnvrtc12, which PyTorch's jiterator uses) for compute_75 to compute_90,
# then runs the sweep and the corpus suites on that PTX against the host
# references.
#
#   tests/ptx/cuda12_sweep.sh BUILD_DIR [CUDA12_INCLUDE]
#
# CUDA 12.4's own headers (cuda_fp16.h, cuda_bf16.h, cooperative_groups.h)
# are not in the root; given a folder of them (CUDA12_INCLUDE, or
# /var/cache/rgpu/cuda12/usr/include from scripts/cuda12-facts.sh when
# present) the three corpus files that include them are compiled too,
# otherwise they are left out and their tests skipped, by name.
# RGPU_NVRTC12 names another libnvrtc.so.12 instead of the root's.
set -eu
build="$1"
include="${2:-}"
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$here/../.." && pwd)"
[ -n "$include" ] || { [ -d /var/cache/rgpu/cuda12/usr/include ] && include=/var/cache/rgpu/cuda12/usr/include; } || true
nvrtc="${RGPU_NVRTC12:-}"
if [ -z "$nvrtc" ]; then
  root="$("$src/scripts/torch-env.sh" build --build-dir "$build" | tail -n 1)"
  nvrtc="$root/usr/lib/x86_64-linux-gnu/libnvrtc.so.12"
fi
[ -e "$nvrtc" ] || { echo "cuda12_sweep: no NVRTC 12 at $nvrtc" >&2; exit 1; }
out="$build/tests/ptx/cuda12"
rm -rf "$out"
python3 "$src/tests/kernels/rtc_ptx.py" --nvrtc "$nvrtc" --out "$out" --tag cuda12 \
  ${include:+--include "$include"} sm_75 sm_80 sm_86 sm_89 sm_90 -- "$src"/tests/kernels/*.cu
RGPU_PTX_CUDA12_DIR="$out" exec "$build/bin/rgpu_ptx_tests" \
  --gtest_filter='Cuda12/*:Sweep.Cuda12NvrtcCorpus' --gtest_brief=1
