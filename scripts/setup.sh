#!/usr/bin/env bash
# Installs what rgpu needs to build and test on Debian 12, if it is missing.
# Sourced or run by scripts/demo.sh and scripts/test.sh.
set -euo pipefail

packages=(
  build-essential cmake pkg-config python3
  libucx-dev ucx-utils            # transport (UCX: verbs, tcp, shared memory)
  libcapnp-dev capnproto          # wire schema
  libibverbs-dev librdmacm-dev    # rdma-core
  liblz4-dev libzstd-dev          # compressed fatbin entries
  libssl-dev                      # HMAC-SHA256 and nonces for authentication (libcrypto)
  libopenblas-dev                 # CPU BLAS of the cuBLAS stand-in (cpu-libs/cublas)
  libtomlplusplus-dev             # rgpud --config FILE (TOML, header-only use)
  libdnnl-dev                     # oneDNN: convolutions and batch norm of the cuDNN stand-in (cpu-libs/cudnn)
  liblapacke-dev                  # LAPACK(E): the cuSOLVER stand-in (cpu-libs/cusolver), cuBLAS's batched LU/QR
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev        # libFuzzer targets
  debootstrap patchelf            # the PyTorch test environment (scripts/torch-env.sh), the packages' test
  dpkg-dev lintian help2man       # Debian packages of every part (scripts/packages.sh)
  llvm-16-dev                     # the CPU device's compiled kernels (ORC JIT, cpu-device/ptx/src/jit)
  libfftw3-dev                    # FFTW: the transforms of the cuFFT stand-in (cpu-libs/cufft)
  chromium                        # tests: the usage report's page in a headless browser
  systemd                         # tests: systemd-analyze verify of the packaged units
  libcpp-httplib-dev nlohmann-json3-dev  # the pool's etcd client (JSON gateway over HTTP), history and report
  etcd-server                     # several pool instances sharing state; the etcd tests
  prometheus tmux                 # the metrics tests: a real scrape, and rgpu top in a terminal
  libslurm-dev slurm-wlm munge    # the Slurm plugin (slurm/), and a one-node Slurm for its test
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "rgpu setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
fi

cuda_home="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -f "$cuda_home/include/cuda.h" ] || [ ! -x "$cuda_home/bin/nvcc" ]; then
  echo "rgpu setup: the CUDA toolkit (headers and nvcc, 13.0) is needed at CUDA_HOME=$cuda_home" >&2
  echo "            (only the toolkit; no NVIDIA driver is needed on the client side)" >&2
  exit 1
fi
