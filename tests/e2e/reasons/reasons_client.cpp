// A program whose calls fail for reasons only the server knows: a kernel the
// device refuses, an illegal address, a quota, a library call rgpu does not
// implement. It checks the codes it gets and exits 0; the test around it
// (reasons_test.py) checks what the client library printed on stderr.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

// A kernel that calls a function no device has: the CPU device refuses it
// at launch ("call to external function ...").
const char* kRefusedPtx = R"(
.version 7.0
.target sm_75
.address_size 64
.extern .func (.param .b64 r) rgpu_test_no_such_function (.param .b64 p);
.visible .entry refused_kernel(.param .u64 out)
{
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  {
    .param .b64 p0;
    .param .b64 r0;
    st.param.b64 [p0], %rd1;
    call.uni (r0), rgpu_test_no_such_function, (p0);
    ld.param.b64 %rd2, [r0];
  }
  st.global.u64 [%rd1], %rd2;
  ret;
}
)";

// A kernel that stores to the address it is given.
const char* kStorePtx = R"(
.version 7.0
.target sm_75
.address_size 64
.visible .entry store_kernel(.param .u64 out)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 7;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

int fail(const char* what, CUresult got, CUresult want) {
  std::fprintf(stdout, "FAIL %s: result %d, expected %d\n", what, static_cast<int>(got), static_cast<int>(want));
  return 1;
}

#define CHECK(call, want)                                       \
  do {                                                          \
    CUresult r_ = (call);                                       \
    if (r_ != (want)) return fail(#call, r_, (want));           \
  } while (0)

// `want_launch` from the launch itself, `want_sync` from the next
// synchronizing call (a fault in the kernel comes there: launches are one-way).
int launch(const char* ptx, const char* name, CUdeviceptr arg, CUresult want_launch, CUresult want_sync) {
  CUmodule module = nullptr;
  CHECK(cuModuleLoadData(&module, ptx), CUDA_SUCCESS);
  CUfunction f = nullptr;
  CHECK(cuModuleGetFunction(&f, module, name), CUDA_SUCCESS);
  void* params[] = {&arg};
  CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), want_launch);
  CHECK(cuCtxSynchronize(), want_sync);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "unimplemented") {
    // Resolved in the preloaded library, as a program linked to cuDNN would.
    using Fn = int (*)();
    auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "cudnnCTCLoss"));
    if (fn == nullptr) {
      std::printf("FAIL cudnnCTCLoss not found\n");
      return 1;
    }
    for (int i = 0; i < 2; ++i) {
      if (int s = fn(); s != 3000) {  // CUDNN_STATUS_NOT_SUPPORTED
        std::printf("FAIL cudnnCTCLoss returned %d\n", s);
        return 1;
      }
    }
    std::printf("PASS unimplemented\n");
    return 0;
  }
  CHECK(cuInit(0), CUDA_SUCCESS);
  CUdevice dev = 0;
  CHECK(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  CUcontext ctx = nullptr;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  CHECK(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  if (mode == "refused") {
    CUdeviceptr out = 0;
    CHECK(cuMemAlloc(&out, 8), CUDA_SUCCESS);
    // Refused by the launch call itself, as a GPU refuses a kernel it has no
    // image for; nothing is left to fail a later call, and the context stays
    // usable. Twice: the reason is printed once.
    for (int i = 0; i < 2; ++i) {
      if (int rc = launch(kRefusedPtx, "refused_kernel", out, CUDA_ERROR_NOT_SUPPORTED, CUDA_SUCCESS)) return rc;
    }
    if (int rc = launch(kStorePtx, "store_kernel", out, CUDA_SUCCESS, CUDA_SUCCESS)) return rc;
    uint32_t seven = 0;
    CHECK(cuMemcpyDtoH(&seven, out, sizeof seven), CUDA_SUCCESS);
    if (seven != 7) {
      std::printf("FAIL the kernel after a refused one stored %u\n", seven);
      return 1;
    }
  } else if (mode == "illegal") {
    if (int rc = launch(kStorePtx, "store_kernel", 0x10, CUDA_SUCCESS, CUDA_ERROR_ILLEGAL_ADDRESS)) return rc;
    CHECK(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);  // sticky, as on a GPU
  } else if (mode == "quota") {
    CUdeviceptr p = 0;
    CHECK(cuMemAlloc(&p, size_t{48} << 20), CUDA_SUCCESS);
    CUdeviceptr more = 0;
    CHECK(cuMemAlloc(&more, size_t{32} << 20), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK(cuMemFree(p), CUDA_SUCCESS);
  } else if (mode == "backpressure") {
    // Copies in flight past the server's limit (rgpud --limit
    // inflight-bytes=8M): they wait for room instead of failing, and every
    // byte arrives; one copy larger than the limit is refused.
    constexpr size_t kPiece = size_t{2} << 20;
    constexpr int kPieces = 16;
    CUdeviceptr d = 0;
    CHECK(cuMemAlloc(&d, kPiece * kPieces), CUDA_SUCCESS);
    unsigned char* up = nullptr;
    unsigned char* down = nullptr;
    CHECK(cuMemAllocHost(reinterpret_cast<void**>(&up), kPiece * kPieces), CUDA_SUCCESS);
    CHECK(cuMemAllocHost(reinterpret_cast<void**>(&down), kPiece * kPieces), CUDA_SUCCESS);
    for (size_t i = 0; i < kPiece * kPieces; ++i) up[i] = static_cast<unsigned char>(i * 7 + i / kPiece);
    std::memset(down, 0, kPiece * kPieces);
    CUstream streams[4];
    for (CUstream& st : streams) CHECK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    for (int rep = 0; rep < 2; ++rep) {
      for (int i = 0; i < kPieces; ++i) {
        CHECK(cuMemcpyHtoDAsync(d + i * kPiece, up + i * kPiece, kPiece, streams[i % 4]), CUDA_SUCCESS);
      }
      for (int i = 0; i < kPieces; ++i) {
        CHECK(cuMemcpyDtoHAsync(down + i * kPiece, d + i * kPiece, kPiece, streams[i % 4]), CUDA_SUCCESS);
      }
      CHECK(cuCtxSynchronize(), CUDA_SUCCESS);
      if (std::memcmp(up, down, kPiece * kPieces) != 0) {
        std::printf("FAIL backpressure: the bytes differ\n");
        return 1;
      }
    }
    // Larger than all the server may hold in flight for a session: refused.
    unsigned char* big = nullptr;
    CHECK(cuMemAllocHost(reinterpret_cast<void**>(&big), size_t{16} << 20), CUDA_SUCCESS);
    CUdeviceptr dbig = 0;
    CHECK(cuMemAlloc(&dbig, size_t{16} << 20), CUDA_SUCCESS);
    CHECK(cuMemcpyDtoHAsync(big, dbig, size_t{16} << 20, streams[0]), CUDA_SUCCESS);
    CHECK(cuStreamSynchronize(streams[0]), CUDA_ERROR_OUT_OF_MEMORY);
    for (CUstream& st : streams) CHECK(cuStreamDestroy(st), CUDA_SUCCESS);
  } else if (mode == "exit-failing") {
    std::printf("exiting with status 3\n");
    return 3;
  } else {
    std::printf("usage: reasons_client refused|illegal|quota|unimplemented|backpressure|exit-failing\n");
    return 2;
  }
  std::printf("PASS %s\n", mode.c_str());
  return 0;
}
