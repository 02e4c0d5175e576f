// The CPU device's reasons: a refused launch's on the calling thread
// (rgpuTakeErrorReason), a kernel fault's through the context's callback.
#include <mutex>
#include <string>
#include <vector>

#include "cuda_lib.h"

namespace rgpu::cpudev::test {
namespace {

using CpuDeviceReasons = CpuDeviceTest;

const char* kRefusedPtx = R"(
.version 7.0
.target sm_75
.address_size 64
.extern .func (.param .b64 r) no_such_function (.param .b64 p);
.visible .entry refused_kernel(.param .u64 out)
{
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  {
    .param .b64 p0;
    .param .b64 r0;
    st.param.b64 [p0], %rd1;
    call.uni (r0), no_such_function, (p0);
    ld.param.b64 %rd2, [r0];
  }
  st.global.u64 [%rd1], %rd2;
  ret;
}
)";

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

std::string take(CudaLib& cu, CUresult code) {
  char text[600];
  size_t length = 99;
  EXPECT_EQ(CUDA_SUCCESS, cu.rgpuTakeErrorReason(code, text, sizeof text, &length));
  EXPECT_EQ(length, std::string(text).size());
  return std::string(text, length);
}

TEST_F(CpuDeviceReasons, ARefusedLaunchSaysWhyOnTheCallingThreadOnce) {
  CUmodule m;
  CU_OK(cu.cuModuleLoadData(&m, kRefusedPtx));
  CUfunction f;
  CU_OK(cu.cuModuleGetFunction(&f, m, "refused_kernel"));
  CUdeviceptr d = 0;
  CU_OK(cu.cuMemAlloc(&d, 8));
  void* args[] = {&d};
  ASSERT_EQ(CUDA_ERROR_NOT_SUPPORTED, cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  // Another code is not this refusal's, and asking clears it.
  EXPECT_EQ(take(cu, CUDA_ERROR_INVALID_VALUE), "");
  EXPECT_EQ(take(cu, CUDA_ERROR_NOT_SUPPORTED), "");
  ASSERT_EQ(CUDA_ERROR_NOT_SUPPORTED, cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  const std::string why = take(cu, CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(why.rfind("kernel refused_kernel cannot run on the CPU device: unsupported instruction 'call.uni' (call "
                      "to external function no_such_function) at line ",
                      0),
            0u)
      << why;
  EXPECT_NE(why.find(" in refused_kernel"), std::string::npos) << why;
  EXPECT_EQ(take(cu, CUDA_ERROR_NOT_SUPPORTED), "");
  // The next call into the device starts without one.
  ASSERT_EQ(CUDA_ERROR_NOT_SUPPORTED, cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  CU_OK(cu.cuCtxSynchronize());
  EXPECT_EQ(take(cu, CUDA_ERROR_NOT_SUPPORTED), "");
  // A shape the device cannot run says which limit.
  ASSERT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_EQ(take(cu, CUDA_ERROR_INVALID_VALUE),
            "launch of kernel refused_kernel: block past the device's limits (grid 1x1x1, block 2048x1x1)");
  char small[4];
  size_t length = 0;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.rgpuTakeErrorReason(CUDA_ERROR_NOT_SUPPORTED, small, 0, &length));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.rgpuTakeErrorReason(CUDA_ERROR_NOT_SUPPORTED, nullptr, 4, &length));
  CU_OK(cu.cuMemFree(d));
}

// A server asks before the first launch, so that a kernel the device cannot
// run is refused by the program's launch call itself.
TEST_F(CpuDeviceReasons, AFunctionsLaunchRefusalIsKnownBeforeItIsLaunched) {
  CUmodule refused, good;
  CU_OK(cu.cuModuleLoadData(&refused, kRefusedPtx));
  CU_OK(cu.cuModuleLoadData(&good, kStorePtx));
  CUfunction f, g;
  CU_OK(cu.cuModuleGetFunction(&f, refused, "refused_kernel"));
  CU_OK(cu.cuModuleGetFunction(&g, good, "store_kernel"));
  char text[600];
  size_t length = 99;
  CUresult refusal = CUDA_ERROR_UNKNOWN;
  CU_OK(cu.rgpuFuncGetLaunchRefusal(g, &refusal, text, sizeof text, &length));
  EXPECT_EQ(CUDA_SUCCESS, refusal);
  EXPECT_EQ(0u, length);
  EXPECT_STREQ("", text);
  CU_OK(cu.rgpuFuncGetLaunchRefusal(f, &refusal, text, sizeof text, &length));
  EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, refusal);
  const std::string why(text, length);
  EXPECT_EQ(why.rfind("kernel refused_kernel cannot run on the CPU device: unsupported instruction 'call.uni'", 0), 0u)
      << why;
  // The same text the launch notes.
  CUdeviceptr d = 0;
  CU_OK(cu.cuMemAlloc(&d, 8));
  void* args[] = {&d};
  ASSERT_EQ(CUDA_ERROR_NOT_SUPPORTED, cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_EQ(take(cu, CUDA_ERROR_NOT_SUPPORTED), why);
  // Cut to the buffer, NUL-terminated.
  char small[8];
  CU_OK(cu.rgpuFuncGetLaunchRefusal(f, &refusal, small, sizeof small, &length));
  EXPECT_EQ(7u, length);
  EXPECT_STREQ("kernel ", small);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.rgpuFuncGetLaunchRefusal(f, nullptr, text, sizeof text, &length));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.rgpuFuncGetLaunchRefusal(f, &refusal, text, 0, &length));
  CU_OK(cu.cuModuleUnload(refused));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.rgpuFuncGetLaunchRefusal(f, &refusal, text, sizeof text, &length));
  CU_OK(cu.cuModuleUnload(good));
  CU_OK(cu.cuMemFree(d));
}

struct Faults {
  std::mutex mu;
  std::vector<std::pair<CUresult, std::string>> seen;
  static void add(void* user, CUresult code, const char* text, size_t size) {
    auto* self = static_cast<Faults*>(user);
    std::lock_guard<std::mutex> lock(self->mu);
    self->seen.emplace_back(code, std::string(text, size));
  }
};

TEST_F(CpuDeviceReasons, AKernelFaultGoesToTheContextsCallback) {
  Faults faults;
  CU_OK(cu.rgpuCtxSetErrorReasonCallback(ctx, &Faults::add, &faults));
  CUmodule m;
  CU_OK(cu.cuModuleLoadData(&m, kStorePtx));
  CUfunction f;
  CU_OK(cu.cuModuleGetFunction(&f, m, "store_kernel"));
  CUdeviceptr bad = 0x10;
  void* args[] = {&bad};
  CU_OK(cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, cu.cuCtxSynchronize());
  std::lock_guard<std::mutex> lock(faults.mu);
  ASSERT_EQ(faults.seen.size(), 1u);
  EXPECT_EQ(faults.seen[0].first, CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(faults.seen[0].second.rfind("kernel store_kernel: illegal address: illegal write of 4 bytes at 0x10", 0),
            0u)
      << faults.seen[0].second;
}

}  // namespace
}  // namespace rgpu::cpudev::test
