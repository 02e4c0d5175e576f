// Tests of context destruction: it returns promptly even when the context's
// kernels never end, and leaves other contexts working.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>

#include "cuda_lib.h"

namespace rgpu::cpudev::test {
namespace {

// Kernels that never end: a one-instruction loop, and a loop around a block
// barrier (every warp of the block waits there on each round); and one that
// ends, storing 1 to its argument.
constexpr char kEndlessPtx[] = R"(
.version 7.0
.target sm_75
.address_size 64

.visible .entry tight_loop()
{
$L_top:
	bra.uni 	$L_top;
}

.visible .entry barrier_loop()
{
$L_top:
	bar.sync 	0;
	bra.uni 	$L_top;
}

.visible .entry store_one(.param .u64 store_one_param_0)
{
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<3>;
	ld.param.u64 	%rd1, [store_one_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, 1;
	st.global.u32 	[%rd2], %r1;
	ret;
}
)";

// Runs cuCtxDestroy(ctx) on another thread; a destroy that has not returned
// after 20 s (a safety net, far above what it takes) ends the test process
// rather than hanging it.
CUresult destroy_bounded(CudaLib& cu, CUcontext ctx) {
  std::promise<CUresult> done;
  auto result = done.get_future();
  std::thread t([&cu, ctx, &done] { done.set_value(cu.cuCtxDestroy(ctx)); });
  if (result.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    std::fprintf(stderr, "cuCtxDestroy did not return\n");
    std::_Exit(1);
  }
  t.join();
  return result.get();
}

TEST_F(CpuDeviceTest, DestroyReturnsWhileKernelsLoopForever) {
  CUcontext doomed;
  CU_OK(cu.cuCtxCreate(&doomed, nullptr, 0, 0));
  CUmodule m;
  CU_OK(cu.cuModuleLoadData(&m, kEndlessPtx));
  CUfunction tight, barrier;
  CU_OK(cu.cuModuleGetFunction(&tight, m, "tight_loop"));
  CU_OK(cu.cuModuleGetFunction(&barrier, m, "barrier_loop"));
  CUstream s1, s2;
  CU_OK(cu.cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CU_OK(cu.cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  // More blocks than kernel workers, on several streams, with more work
  // queued behind the endless kernels.
  CU_OK(cu.cuLaunchKernel(tight, 64, 1, 1, 128, 1, 1, 0, s1, nullptr, nullptr));
  CU_OK(cu.cuLaunchKernel(barrier, 16, 1, 1, 256, 1, 1, 0, s2, nullptr, nullptr));
  CU_OK(cu.cuLaunchKernel(tight, 4, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
  CU_OK(cu.cuLaunchKernel(tight, 4, 1, 1, 32, 1, 1, 0, s1, nullptr, nullptr));
  CUdeviceptr p;
  CU_OK(cu.cuMemAlloc(&p, 64));
  CU_OK(cu.cuMemsetD8Async(p, 1, 64, s2));
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cu.cuStreamQuery(s1));
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cu.cuStreamQuery(s2));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let them get going
  EXPECT_EQ(CUDA_SUCCESS, destroy_bounded(cu, doomed));

  // The test's own context (current again) still runs kernels.
  CU_OK(cu.cuCtxSetCurrent(ctx));
  CUmodule own;
  CU_OK(cu.cuModuleLoadData(&own, kEndlessPtx));
  CUfunction store;
  CU_OK(cu.cuModuleGetFunction(&store, own, "store_one"));
  CUdeviceptr q;
  CU_OK(cu.cuMemAlloc(&q, 4));
  CU_OK(cu.cuMemsetD32(q, 7, 1));
  void* args[] = {&q};
  CU_OK(cu.cuLaunchKernel(store, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  unsigned v = 0;
  CU_OK(cu.cuMemcpyDtoH(&v, q, 4));
  EXPECT_EQ(1u, v);
  CU_OK(cu.cuCtxSynchronize());
}

}  // namespace
}  // namespace rgpu::cpudev::test
