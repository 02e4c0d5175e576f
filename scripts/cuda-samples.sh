#!/usr/bin/env bash
# Builds NVIDIA's cuda-samples unmodified (nvcc -cudart shared, one program
# per sample folder) and runs each through `rgpu run` on the CPU device,
# printing one line per sample: built or not, passed or failed, and the
# last line of its output. Needs a checkout of github.com/NVIDIA/cuda-samples.
#
#   scripts/cuda-samples.sh [--build-dir DIR] [--timeout S] SAMPLES_DIR [CATEGORY...]
#
# CATEGORY is a folder under SAMPLES_DIR/Samples (default: 0_Introduction
# 1_Utilities 2_Concepts_and_Techniques 3_CUDA_Features 6_Performance).
# A sample passes when it exits 0 (the samples exit non-zero on a wrong
# result or a failed call); one that waives itself (exit 2) is counted apart.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"
limit=120
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --timeout) limit="$2"; shift 2 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--build-dir DIR] [--timeout S] SAMPLES_DIR [CATEGORY...]" >&2; exit 2; }
samples="$(cd "$1" && pwd)"; shift
categories=("$@")
[ ${#categories[@]} -gt 0 ] || categories=(0_Introduction 1_Utilities 2_Concepts_and_Techniques 3_CUDA_Features 6_Performance)
nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
cuda="$(dirname "$(dirname "$nvcc")")"
# What the samples' own build links where they need it: the driver API (the
# toolkit's link stub; rgpu's libcuda.so.1 at run time), NVRTC, OpenMP.
libs=(-L"$cuda/lib64/stubs" -L"$cuda/lib64" -Xlinker --as-needed -lcuda -lnvrtc -Xcompiler -fopenmp -lgomp)
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
built=0 passed=0 waived=0 total=0
for category in "${categories[@]}"; do
  for dir in "$samples/Samples/$category"/*/; do
    name="$(basename "$dir")"
    total=$((total + 1))
    mapfile -t sources < <(find "$dir" -maxdepth 1 \( -name '*.cu' -o -name '*.cpp' \) | sort)
    if [ ${#sources[@]} -eq 0 ] ||
       ! timeout 300 "$nvcc" -cudart shared -O2 -w -I"$samples/Common" -I"$dir" -o "$out/$name" "${sources[@]}" "${libs[@]}" \
           >"$out/$name.build" 2>&1; then
      echo "$category/$name: not built: $(grep -m1 -i 'error' "$out/$name.build" | cut -c1-120)"
      continue
    fi
    built=$((built + 1))
    set +e
    (cd "$dir" && timeout "$limit" "$build/bin/rgpu" run -- "$out/$name") >"$out/$name.log" 2>&1
    rc=$?
    set -e
    last="$(grep -v '^\s*$' "$out/$name.log" | grep -v '^rgpu: ' | tail -1 | cut -c1-120)"
    if [ $rc -eq 0 ]; then
      passed=$((passed + 1)); echo "$category/$name: passed"
    elif [ $rc -eq 2 ]; then
      waived=$((waived + 1)); echo "$category/$name: waived: $last"
    elif [ $rc -eq 124 ]; then
      echo "$category/$name: failed: past ${limit} s"
    else
      echo "$category/$name: failed (exit $rc): $last"
    fi
  done
done
echo "samples $total, built $built, passed $passed, waived $waived"
