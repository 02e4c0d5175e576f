#!/usr/bin/env bash
# Collects what tests/gpu/run.sh needs on a GPU machine into one folder (the
# run tool's carry), from a build: `tests/gpu/run.sh --prepare` calls it.
#   prepare.sh BUILD CARRY
# Layout (that of a build, so that rgpu finds ../lib/librgpu.so and rgpud
# finds its CPU stand-ins):
#   bin/      rgpud, rgpu, rgpu-bench and its PTX
#   lib/      librgpu.so, lib/rgpu/ (its sonames), lib/rgpu-nvrtc/, the CPU
#             device and the libraries' CPU stand-ins (for --device cpu)
#   lib/deps/ the shared libraries they load that a GPU machine may lack
#             (UCX with its cma module, Cap'n Proto, libnuma), RUNPATH $ORIGIN
#   tests/    driver_e2e_tests, rgpu_nvrtc_jit, the cuBLAS programs and the
#             nvcc-built samples (RUNPATH removed: remote runs get our
#             libcuda.so.1 from rgpu run, local ones the machine's)
# Everything is stripped; the folder must stay well under the 64 MiB that a
# run may carry with the working tree.
set -euo pipefail
build="$(readlink -f "${1:?usage: prepare.sh BUILD CARRY}")"
carry="${2:?usage: prepare.sh BUILD CARRY}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
limit_mib=40

die() { echo "prepare: $*" >&2; exit 1; }
command -v patchelf >/dev/null || die "patchelf is needed (apt-get install patchelf)"

need=(bin/rgpud bin/rgpu bin/rgpu-bench lib/librgpu.so lib/librgpu-cpudev.so bin/driver_e2e_tests)
for f in "${need[@]}"; do [ -e "$build/$f" ] || die "$build/$f is missing; build it first (docs/testing.md)"; done

rm -rf "$carry"
mkdir -p "$carry"/{bin,lib/deps/ucx,tests/samples}
carry="$(cd "$carry" && pwd)"

elf() {  # elf SRC DEST RUNPATH|-: a stripped copy; RUNPATH set, or removed with -
  install -m 755 "$1" "$2"
  strip --strip-unneeded "$2"
  if [ "$3" = - ]; then patchelf --remove-rpath "$2"; else patchelf --set-rpath "$3" "$2"; fi
}

elf "$build/bin/rgpud" "$carry/bin/rgpud" '$ORIGIN/../lib/deps'
elf "$build/bin/rgpu" "$carry/bin/rgpu" '$ORIGIN/../lib/deps'
elf "$build/bin/rgpu-bench" "$carry/bin/rgpu-bench" -
cp "$build"/bin/rgpu-bench-*.ptx "$carry/bin/"
# Loaded as lib/librgpu.so (rgpu run's preload) or as lib/rgpu/<soname>.
elf "$build/lib/librgpu.so" "$carry/lib/librgpu.so" '$ORIGIN/deps:$ORIGIN/../deps'
cp -a "$build/lib/rgpu" "$carry/lib/rgpu"
if [ -d "$build/lib/rgpu-nvrtc" ]; then
  mkdir -p "$carry/lib/rgpu-nvrtc"
  for f in "$build"/lib/rgpu-nvrtc/libnvrtc.so.*; do elf "$f" "$carry/lib/rgpu-nvrtc/$(basename "$f")" -; done
fi
elf "$build/lib/librgpu-cpudev.so" "$carry/lib/librgpu-cpudev.so" -
# Every CPU stand-in of a remoted library (cuBLAS, cuDNN, ...); their own
# libraries (OpenBLAS, oneDNN) are not carried: --device cpu runs here.
for f in "$build"/lib/librgpu-cpu-*.so; do
  [ -e "$f" ] && elf "$f" "$carry/lib/$(basename "$f")" '$ORIGIN'
done

elf "$build/bin/driver_e2e_tests" "$carry/tests/driver_e2e_tests" -
[ -e "$build/bin/rgpu_nvrtc_jit" ] && elf "$build/bin/rgpu_nvrtc_jit" "$carry/tests/rgpu_nvrtc_jit" -
for f in cublas_sgemm cublaslt_matmul; do
  [ -e "$build/tests/e2e/libraries/$f" ] && elf "$build/tests/e2e/libraries/$f" "$carry/tests/$f" -
done
for f in "$build"/tests/samples/*; do
  [ -f "$f" ] && [ -x "$f" ] || continue
  case "$(basename "$f")" in *_static | *.cmake | Makefile) continue ;; esac
  elf "$f" "$carry/tests/samples/$(basename "$f")" -
done

# The libraries a GPU machine (a CUDA image: Ubuntu with glibc, libstdc++,
# OpenSSL 3, zlib, zstd and lz4) surely has are not carried; the rest are.
system='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libz|libcrypto|libssl|libzstd|liblz4)\.so'
ucs=""
while read -r name path; do
  [[ "$name" =~ $system ]] && continue
  [ -e "$carry/lib/deps/$name" ] && continue
  elf "$(readlink -f "$path")" "$carry/lib/deps/$name" '$ORIGIN'
  case "$name" in libucs.so.*) ucs="$path" ;; esac
done < <(for f in "$build/bin/rgpud" "$build/bin/rgpu" "$build/lib/librgpu.so"; do ldd "$f"; done |
         awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u)
[ -n "$ucs" ] || die "ldd names no libucs (is UCX installed?)"
# UCX loads its transport modules from ucx/ beside libucs: only cma (shared
# memory between processes; posix and tcp are in libuct itself). The
# InfiniBand modules would need the verbs libraries.
for m in "$(dirname "$(readlink -f "$ucs")")"/ucx/libuct_cma.so.0; do
  [ -e "$m" ] && elf "$(readlink -f "$m")" "$carry/lib/deps/ucx/$(basename "$m")" '$ORIGIN/..'
done

bytes=$(du -sb "$carry" | cut -f1)
{
  echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "made: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(grep -m1 PRETTY_NAME /etc/os-release | cut -d= -f2 | tr -d '"')"
  echo "from: $build"
  echo "bytes: $bytes"
  echo "needs from the machine: $(objdump -T "$carry/bin/rgpud" "$carry/lib/librgpu.so" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)," \
    "$(objdump -T "$carry/bin/rgpud" "$carry/lib/librgpu.so" | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1), libcrypto.so.3, libzstd.so.1, liblz4.so.1"
  echo "files:"
  (cd "$carry" && find . -type f -printf '%s %p\n' | sort -k2)
} >"$carry/MANIFEST.txt"
((bytes < limit_mib * 1024 * 1024)) || die "$carry holds $bytes bytes, over ${limit_mib} MiB"
echo "prepare: $carry ($((bytes / 1024)) KiB); carry it as build/$(basename "$carry") (docs/testing.md)"
