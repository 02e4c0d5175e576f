// Tests of contexts: the per-thread stack, creation and destruction, primary
// contexts.
#include <thread>

#include "cuda_lib.h"

namespace rgpu::cpudev::test {
namespace {

TEST(CpuDeviceContext, NoCurrentContextIsInvalidContext) {
  CudaLib& cu = lib();
  std::thread t([&] {
    CUcontext c = reinterpret_cast<CUcontext>(0x1234);
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxGetCurrent(&c));
    EXPECT_EQ(nullptr, c);
    CUdeviceptr p;
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cu.cuMemAlloc(&p, 64));
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cu.cuCtxSynchronize());
    CUstream s;
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cu.cuStreamCreate(&s, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cu.cuStreamSynchronize(nullptr));
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cu.cuCtxPopCurrent(&c));
    CUdevice d;
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cu.cuCtxGetDevice(&d));
  });
  t.join();
}

TEST_F(CpuDeviceTest, CreatePushesAndDestroyPops) {
  CUcontext cur = nullptr;
  CU_OK(cu.cuCtxGetCurrent(&cur));
  EXPECT_EQ(ctx, cur);
  CUcontext second = nullptr;
  CU_OK(cu.cuCtxCreate(&second, nullptr, 0, 1));
  EXPECT_NE(ctx, second);
  CU_OK(cu.cuCtxGetCurrent(&cur));
  EXPECT_EQ(second, cur);
  CUdevice d = -1;
  CU_OK(cu.cuCtxGetDevice(&d));
  EXPECT_EQ(1, d);
  CU_OK(cu.cuCtxDestroy(second));
  CU_OK(cu.cuCtxGetCurrent(&cur));
  EXPECT_EQ(ctx, cur);
  // A destroyed context is gone for good.
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cu.cuCtxPushCurrent(second));
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cu.cuCtxSetCurrent(second));
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cu.cuCtxDestroy(second));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuCtxCreate(nullptr, nullptr, 0, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cu.cuCtxCreate(&second, nullptr, 0, 5));
}

TEST_F(CpuDeviceTest, PushPopAndSetCurrent) {
  CUcontext other = nullptr;
  CU_OK(cu.cuCtxCreate(&other, nullptr, 0, 0));  // pushed
  CUcontext popped = nullptr;
  CU_OK(cu.cuCtxPopCurrent(&popped));
  EXPECT_EQ(other, popped);
  CUcontext cur = nullptr;
  CU_OK(cu.cuCtxGetCurrent(&cur));
  EXPECT_EQ(ctx, cur);
  CU_OK(cu.cuCtxPushCurrent(other));
  CU_OK(cu.cuCtxGetCurrent(&cur));
  EXPECT_EQ(other, cur);
  CU_OK(cu.cuCtxSetCurrent(ctx));  // replaces the top
  CU_OK(cu.cuCtxPopCurrent(&popped));
  EXPECT_EQ(ctx, popped);
  CU_OK(cu.cuCtxGetCurrent(&cur));
  EXPECT_EQ(ctx, cur);  // the original entry below
  CU_OK(cu.cuCtxSetCurrent(nullptr));
  CU_OK(cu.cuCtxGetCurrent(&cur));
  EXPECT_EQ(nullptr, cur);
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cu.cuCtxPushCurrent(nullptr));
  CU_OK(cu.cuCtxSetCurrent(ctx));
  CU_OK(cu.cuCtxDestroy(other));
}

TEST_F(CpuDeviceTest, CurrentContextIsPerThread) {
  CUcontext seen = reinterpret_cast<CUcontext>(0x1);
  std::thread t([&] {
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxGetCurrent(&seen));
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSetCurrent(ctx));  // a context can be current on several threads
    CUdeviceptr p = 0;
    EXPECT_EQ(CUDA_SUCCESS, cu.cuMemAlloc(&p, 128));
    EXPECT_EQ(CUDA_SUCCESS, cu.cuMemFree(p));
  });
  t.join();
  EXPECT_EQ(nullptr, seen);
}

TEST_F(CpuDeviceTest, DestroyedContextFailsOnOtherThreads) {
  CUcontext other = nullptr;
  CU_OK(cu.cuCtxCreate(&other, nullptr, 0, 0));
  CU_OK(cu.cuCtxPopCurrent(nullptr));
  std::thread t([&] {
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSetCurrent(other));
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxDestroy(other));
  });
  t.join();
  CU_OK(cu.cuCtxPushCurrent(ctx));
  std::thread t2([&] {
    // Made current before, destroyed elsewhere: calls fail, nothing crashes.
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cu.cuCtxSetCurrent(other));
  });
  t2.join();
}

TEST(CpuDevicePrimary, RetainReleaseStateFlagsReset) {
  CudaLib& cu = lib();
  std::thread t([&] {  // a clean thread: no current context
    unsigned flags = 99;
    int active = 9;
    EXPECT_EQ(CUDA_SUCCESS, cu.cuDevicePrimaryCtxGetState(1, &flags, &active));
    EXPECT_EQ(0, active);
    EXPECT_EQ(CUDA_SUCCESS, cu.cuDevicePrimaryCtxSetFlags(1, CU_CTX_SCHED_BLOCKING_SYNC));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuDevicePrimaryCtxSetFlags(1, 0x7));
    CUcontext a = nullptr, b = nullptr;
    EXPECT_EQ(CUDA_SUCCESS, cu.cuDevicePrimaryCtxRetain(&a, 1));
    EXPECT_EQ(CUDA_SUCCESS, cu.cuDevicePrimaryCtxRetain(&b, 1));
    EXPECT_EQ(a, b);
    EXPECT_EQ(CUDA_SUCCESS, cu.cuDevicePrimaryCtxGetState(1, &flags, &active));
    EXPECT_EQ(1, active);
    EXPECT_EQ(static_cast<unsigned>(CU_CTX_SCHED_BLOCKING_SYNC), flags);
    // Retain does not make it current.
    CUcontext cur = reinterpret_cast<CUcontext>(0x1);
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxGetCurrent(&cur));
    EXPECT_EQ(nullptr, cur);
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSetCurrent(a));
    // The primary context is not destroyed by cuCtxDestroy.
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cu.cuCtxDestroy(a));

    size_t free0 = 0, total = 0, free1 = 0;
    EXPECT_EQ(CUDA_SUCCESS, cu.cuMemGetInfo(&free0, &total));
    CUdeviceptr p = 0;
    EXPECT_EQ(CUDA_SUCCESS, cu.cuMemAlloc(&p, 1 << 20));
    // Reset frees everything but keeps the retained handle usable.
    EXPECT_EQ(CUDA_SUCCESS, cu.cuDevicePrimaryCtxReset(1));
    EXPECT_EQ(CUDA_SUCCESS, cu.cuMemGetInfo(&free1, &total));
    EXPECT_EQ(free0, free1);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemFree(p));

    EXPECT_EQ(CUDA_SUCCESS, cu.cuDevicePrimaryCtxRelease(1));
    EXPECT_EQ(CUDA_SUCCESS, cu.cuDevicePrimaryCtxGetState(1, &flags, &active));
    EXPECT_EQ(1, active);
    EXPECT_EQ(CUDA_SUCCESS, cu.cuDevicePrimaryCtxRelease(1));
    EXPECT_EQ(CUDA_SUCCESS, cu.cuDevicePrimaryCtxGetState(1, &flags, &active));
    EXPECT_EQ(0, active);
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cu.cuDevicePrimaryCtxRelease(1));
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cu.cuMemAlloc(&p, 64));  // current, but released
    EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cu.cuDevicePrimaryCtxRetain(&a, 4));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuDevicePrimaryCtxRetain(nullptr, 0));
    EXPECT_EQ(CUDA_SUCCESS, cu.cuDevicePrimaryCtxSetFlags(1, 0));
  });
  t.join();
}

}  // namespace
}  // namespace rgpu::cpudev::test
