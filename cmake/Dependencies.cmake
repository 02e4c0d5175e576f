# Finds rgpu's dependencies; a missing one stops configuration with the Debian
# package that provides it.

function(rgpu_require found what package)
  if(NOT ${found})
    message(FATAL_ERROR "rgpu: ${what} not found. Install it with: apt-get install ${package}")
  endif()
endfunction()

find_package(PkgConfig)
rgpu_require(PKG_CONFIG_FOUND "pkg-config" "pkg-config")

find_package(Threads REQUIRED)

# UCX (ucp): the transport.
pkg_check_modules(UCX IMPORTED_TARGET ucx)
rgpu_require(UCX_FOUND "UCX (ucx.pc)" "libucx-dev ucx-utils")
find_library(UCP_LIB ucp)
find_library(UCT_LIB uct)
find_library(UCS_LIB ucs)
rgpu_require(UCP_LIB "UCX libucp" "libucx-dev")
add_library(rgpu::ucx INTERFACE IMPORTED)
target_include_directories(rgpu::ucx INTERFACE ${UCX_INCLUDE_DIRS})
target_link_libraries(rgpu::ucx INTERFACE ${UCP_LIB} ${UCT_LIB} ${UCS_LIB})
find_program(UCX_PERFTEST ucx_perftest)

# Cap'n Proto: the wire schema.
find_package(CapnProto QUIET CONFIG)
rgpu_require(CapnProto_FOUND "Cap'n Proto (CapnProtoConfig.cmake)" "libcapnp-dev capnproto")
find_program(CAPNP_EXECUTABLE capnp)
rgpu_require(CAPNP_EXECUTABLE "the capnp compiler" "capnproto")

# OpenSSL's libcrypto: HMAC-SHA256 and random nonces for authentication, SHA-256
# content hashes of module images (fatbin).
find_package(OpenSSL QUIET COMPONENTS Crypto)
rgpu_require(OpenSSL_FOUND "OpenSSL libcrypto" "libssl-dev")

# toml++: configuration files (rgpud --config, pool.toml), used header-only.
find_path(TOMLPP_INCLUDE toml++/toml.h)
rgpu_require(TOMLPP_INCLUDE "toml++ (toml++/toml.h)" "libtomlplusplus-dev")

# rdma-core: only for listing HCAs where UCX cannot answer.
find_library(IBVERBS_LIB ibverbs)
find_path(IBVERBS_INCLUDE infiniband/verbs.h)
rgpu_require(IBVERBS_LIB "libibverbs" "libibverbs-dev")
rgpu_require(IBVERBS_INCLUDE "infiniband/verbs.h" "libibverbs-dev")
find_library(RDMACM_LIB rdmacm)
rgpu_require(RDMACM_LIB "librdmacm" "librdmacm-dev")

# Compression used inside fatbins.
find_path(LZ4_INCLUDE lz4.h)
find_library(LZ4_LIB lz4)
rgpu_require(LZ4_LIB "liblz4" "liblz4-dev")
find_path(ZSTD_INCLUDE zstd.h)
find_library(ZSTD_LIB zstd)
rgpu_require(ZSTD_LIB "libzstd" "libzstd-dev")

if(RGPU_BUILD_TESTS)
  find_package(GTest CONFIG QUIET)
  if(NOT GTest_FOUND)
    find_package(GTest QUIET)
  endif()
  rgpu_require(GTest_FOUND "GoogleTest" "libgtest-dev libgmock-dev")
endif()
if(RGPU_BUILD_BENCHMARKS)
  find_package(benchmark QUIET)
  rgpu_require(benchmark_FOUND "Google Benchmark" "libbenchmark-dev")
endif()

# CUDA toolkit: headers for the API definitions and nvcc for test programs.
# No NVIDIA library is ever linked into an rgpu binary.
set(CUDA_HOME "$ENV{CUDA_HOME}" CACHE PATH "CUDA toolkit root")
if(NOT CUDA_HOME)
  set(CUDA_HOME "/usr/local/cuda" CACHE PATH "CUDA toolkit root" FORCE)
endif()
if(NOT EXISTS "${CUDA_HOME}/include/cuda.h")
  message(FATAL_ERROR "rgpu: CUDA toolkit headers not found at CUDA_HOME=${CUDA_HOME} (cuda.h). "
                      "Set CUDA_HOME to the toolkit (13.0).")
endif()
find_program(NVCC_EXECUTABLE nvcc HINTS "${CUDA_HOME}/bin" NO_DEFAULT_PATH)
if(NOT NVCC_EXECUTABLE)
  message(FATAL_ERROR "rgpu: nvcc not found in ${CUDA_HOME}/bin")
endif()
add_library(rgpu::cuda_headers INTERFACE IMPORTED)
target_include_directories(rgpu::cuda_headers SYSTEM INTERFACE "${CUDA_HOME}/include")

# OpenBLAS (Debian's pthread build): the CPU BLAS behind the CPU stand-in for
# cuBLAS (cpu-libs/cublas).
pkg_check_modules(OPENBLAS IMPORTED_TARGET openblas)
rgpu_require(OPENBLAS_FOUND "OpenBLAS (openblas.pc)" "libopenblas-dev")
add_library(rgpu::openblas INTERFACE IMPORTED)
target_link_libraries(rgpu::openblas INTERFACE PkgConfig::OPENBLAS)

# LAPACKE (Debian's liblapacke-dev, over the reference LAPACK or OpenBLAS's):
# the factorizations and decompositions behind the CPU stand-ins for cuSOLVER
# (cpu-libs/cusolver) and cuBLAS's batched LU, QR and least squares.
pkg_check_modules(LAPACKE IMPORTED_TARGET lapacke)
rgpu_require(LAPACKE_FOUND "LAPACKE (lapacke.pc)" "liblapacke-dev")
add_library(rgpu::lapacke INTERFACE IMPORTED)
target_link_libraries(rgpu::lapacke INTERFACE PkgConfig::LAPACKE)

# oneDNN (Debian's libdnnl-dev, 2.x): the CPU convolutions and batch norm
# behind the CPU stand-in for cuDNN (cpu-libs/cudnn).
find_library(RGPU_DNNL_LIBRARY dnnl)
find_path(RGPU_DNNL_INCLUDE dnnl.hpp)
rgpu_require(RGPU_DNNL_LIBRARY "oneDNN (libdnnl.so)" "libdnnl-dev")
add_library(rgpu::dnnl INTERFACE IMPORTED)
target_link_libraries(rgpu::dnnl INTERFACE ${RGPU_DNNL_LIBRARY})
target_include_directories(rgpu::dnnl SYSTEM INTERFACE ${RGPU_DNNL_INCLUDE})

# FFTW 3 (Debian's libfftw3-dev), single and double precision: the
# transforms behind the CPU stand-in for cuFFT (cpu-libs/cufft).
pkg_check_modules(FFTW3F IMPORTED_TARGET fftw3f)
pkg_check_modules(FFTW3 IMPORTED_TARGET fftw3)
rgpu_require(FFTW3_FOUND "FFTW 3 (fftw3.pc, fftw3f.pc)" "libfftw3-dev")
add_library(rgpu::fftw3 INTERFACE IMPORTED)
target_link_libraries(rgpu::fftw3 INTERFACE PkgConfig::FFTW3F PkgConfig::FFTW3)

find_package(Python3 REQUIRED COMPONENTS Interpreter)
