// Stream attributes, the persisting-L2 reset, the profiler switches, and the
// failed-assert output callback of the CPU device, called as rgpud calls it.
#include <cstring>
#include <mutex>
#include <string>

#include "cuda_lib.h"

namespace rgpu::cpudev::test {
namespace {

using CpuDeviceAttributes = CpuDeviceTest;

TEST_F(CpuDeviceAttributes, PersistingL2IsReported) {
  int persisting = 0, window = 0;
  CU_OK(cu.cuDeviceGetAttribute(&persisting, CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, 0));
  CU_OK(cu.cuDeviceGetAttribute(&window, CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, 0));
  EXPECT_GT(persisting, 0);
  EXPECT_GT(window, 0);
  CU_OK(cu.cuCtxResetPersistingL2Cache());
  CU_OK(cu.cuProfilerStart());
  CU_OK(cu.cuProfilerStop());
}

TEST_F(CpuDeviceAttributes, StreamAttributesReadBack) {
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUstreamAttrValue v, got;
  memset(&v, 0, sizeof v);
  v.accessPolicyWindow.base_ptr = reinterpret_cast<void*>(0x100000);
  v.accessPolicyWindow.num_bytes = 4096;
  v.accessPolicyWindow.hitRatio = 0.5f;
  v.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING;
  v.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_STREAMING;
  CU_OK(cu.cuStreamSetAttribute(s, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v));
  memset(&got, 0xff, sizeof got);
  CU_OK(cu.cuStreamGetAttribute(s, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &got));
  EXPECT_EQ(0, memcmp(&got.accessPolicyWindow, &v.accessPolicyWindow, sizeof v.accessPolicyWindow));

  // Refused as a GPU refuses them.
  CUstreamAttrValue bad = v;
  bad.accessPolicyWindow.hitRatio = 1.5f;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuStreamSetAttribute(s, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &bad));
  bad = v;
  bad.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_PERSISTING;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuStreamSetAttribute(s, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &bad));
  int window = 0;
  CU_OK(cu.cuDeviceGetAttribute(&window, CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, 0));
  bad = v;
  bad.accessPolicyWindow.num_bytes = static_cast<size_t>(window) + 1;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuStreamSetAttribute(s, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &bad));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuStreamSetAttribute(s, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, nullptr));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &got));

  v.syncPolicy = CU_SYNC_POLICY_BLOCKING_SYNC;
  CU_OK(cu.cuStreamSetAttribute(s, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
  CU_OK(cu.cuStreamGetAttribute(s, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, &got));
  EXPECT_EQ(CU_SYNC_POLICY_BLOCKING_SYNC, got.syncPolicy);
  v.syncPolicy = static_cast<CUsynchronizationPolicy>(9);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuStreamSetAttribute(s, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));

  v.priority = -100;  // clamped to the greatest priority
  CU_OK(cu.cuStreamSetAttribute(s, CU_STREAM_ATTRIBUTE_PRIORITY, &v));
  CU_OK(cu.cuStreamGetAttribute(s, CU_STREAM_ATTRIBUTE_PRIORITY, &got));
  int least = 0, greatest = 0, prio = 1;
  CU_OK(cu.cuCtxGetStreamPriorityRange(&least, &greatest));
  EXPECT_EQ(greatest, got.priority);
  CU_OK(cu.cuStreamGetPriority(s, &prio));
  EXPECT_EQ(greatest, prio);

  // The default streams have attributes too.
  CU_OK(cu.cuStreamGetAttribute(nullptr, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, &got));
  EXPECT_EQ(CU_SYNC_POLICY_AUTO, got.syncPolicy);
  CU_OK(cu.cuStreamDestroy(s));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuStreamGetAttribute(s, CU_STREAM_ATTRIBUTE_PRIORITY, &got));
}

// nvcc -ptx of: extern "C" __global__ void must_be_small(const int* v) { assert(v[threadIdx.x] < 5); }
const char* kAssertPtx = R"(
.version 9.0
.target sm_75
.address_size 64
.extern .func __assertfail
(
	.param .b64 __assertfail_param_0,
	.param .b64 __assertfail_param_1,
	.param .b32 __assertfail_param_2,
	.param .b64 __assertfail_param_3,
	.param .b64 __assertfail_param_4
)
;
.global .align 1 .b8 __unnamed_1[32] = {118, 111, 105, 100, 32, 109, 117, 115, 116, 95, 98, 101, 95, 115, 109, 97, 108, 108, 40, 99, 111, 110, 115, 116, 32, 105, 110, 116, 32, 42, 41};
.global .align 1 .b8 $str[19] = {118, 91, 116, 104, 114, 101, 97, 100, 73, 100, 120, 46, 120, 93, 32, 60, 32, 53};
.global .align 1 .b8 $str$1[5] = {97, 46, 99, 117};
.visible .entry must_be_small(
	.param .u64 must_be_small_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<3>;
	.reg .b64 	%rd<11>;
	ld.param.u64 	%rd1, [must_be_small_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.u32 	%r2, [%rd4];
	setp.lt.s32 	%p1, %r2, 5;
	@%p1 bra 	$L__BB0_2;
	mov.u64 	%rd5, $str;
	cvta.global.u64 	%rd6, %rd5;
	mov.u64 	%rd7, $str$1;
	cvta.global.u64 	%rd8, %rd7;
	mov.u64 	%rd9, __unnamed_1;
	cvta.global.u64 	%rd10, %rd9;
	{ // callseq 0, 0
	.reg .b32 temp_param_reg;
	.param .b64 param0;
	st.param.b64 	[param0+0], %rd6;
	.param .b64 param1;
	st.param.b64 	[param1+0], %rd8;
	.param .b32 param2;
	st.param.b32 	[param2+0], 2;
	.param .b64 param3;
	st.param.b64 	[param3+0], %rd10;
	.param .b64 param4;
	st.param.b64 	[param4+0], 1;
	call.uni 
	__assertfail, 
	(
	param0, 
	param1, 
	param2, 
	param3, 
	param4
	);
	} // callseq 0
$L__BB0_2:
	ret;
}
)";

struct Captured {
  std::mutex mu;
  std::string text;
  static void add(void* user, const char* t, size_t n) {
    auto* self = static_cast<Captured*>(user);
    std::lock_guard<std::mutex> lock(self->mu);
    self->text.append(t, n);
  }
};

TEST_F(CpuDeviceAttributes, FailedAssertLinesGoToTheErrorCallback) {
  Captured out;
  CU_OK(cu.rgpuCtxSetErrorOutputCallback(ctx, &Captured::add, &out));
  CUmodule m;
  CU_OK(cu.cuModuleLoadData(&m, kAssertPtx));
  CUfunction f;
  CU_OK(cu.cuModuleGetFunction(&f, m, "must_be_small"));
  CUdeviceptr d = 0;
  int h[8] = {0, 1, 2, 9, 4, 3, 7, 1};  // threads 3 and 6 fail
  CU_OK(cu.cuMemAlloc(&d, sizeof h));
  CU_OK(cu.cuMemcpyHtoD(d, h, sizeof h));
  void* args[] = {&d};
  CU_OK(cu.cuLaunchKernel(f, 1, 1, 1, 8, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_EQ(CUDA_ERROR_ASSERT, cu.cuCtxSynchronize());
  std::lock_guard<std::mutex> lock(out.mu);
  EXPECT_EQ(out.text,
            "a.cu:2: void must_be_small(const int *): block: [0,0,0], thread: [3,0,0] Assertion `v[threadIdx.x] < 5` "
            "failed.\n"
            "a.cu:2: void must_be_small(const int *): block: [0,0,0], thread: [6,0,0] Assertion `v[threadIdx.x] < 5` "
            "failed.\n");
}

}  // namespace
}  // namespace rgpu::cpudev::test
