// Tests of the pitched copies and memsets, peer copies, stream callbacks and
// small context and stream queries.
#include <cstring>
#include <vector>

#include "cuda_lib.h"

namespace rgpu::cpudev::test {
namespace {

using CpuDeviceExtras = CpuDeviceTest;

TEST_F(CpuDeviceExtras, PitchedCopiesAndMemsets) {
  const size_t width = 10, height = 4, pitch = 16;
  CUdeviceptr d = 0;
  CU_OK(cu.cuMemAlloc(&d, pitch * height));
  CU_OK(cu.cuMemsetD8(d, 0xee, pitch * height));
  std::vector<uint8_t> host(width * height);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint8_t>(i);
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = host.data();
  c.srcPitch = width;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = d;
  c.dstPitch = pitch;
  c.WidthInBytes = width;
  c.Height = height;
  CU_OK(cu.cuMemcpy2D(&c));
  std::vector<uint8_t> flat(pitch * height);
  CU_OK(cu.cuMemcpyDtoH(flat.data(), d, flat.size()));
  EXPECT_EQ(0, flat[0]);
  EXPECT_EQ(9, flat[9]);
  EXPECT_EQ(0xee, flat[10]);  // padding untouched
  EXPECT_EQ(10, flat[16]);
  EXPECT_EQ(39, flat[3 * 16 + 9]);
  // Back to the host, from row 1, column 2, asynchronously.
  std::vector<uint8_t> back(4 * 3, 0);
  CUDA_MEMCPY2D r{};
  r.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  r.srcDevice = d;
  r.srcXInBytes = 2;
  r.srcY = 1;
  r.srcPitch = pitch;
  r.dstMemoryType = CU_MEMORYTYPE_HOST;
  r.dstHost = back.data();
  r.dstPitch = 4;
  r.WidthInBytes = 4;
  r.Height = 3;
  CU_OK(cu.cuMemcpy2DAsync(&r, nullptr));
  CU_OK(cu.cuStreamSynchronize(nullptr));
  EXPECT_EQ(12, back[0]);
  EXPECT_EQ(22, back[4]);
  EXPECT_EQ(35, back[11]);
  // A copy whose last row would leave the allocation is refused.
  r.srcY = 2;
  r.Height = 3;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpy2D(&r));
  r.srcY = 0;
  r.srcPitch = 2;  // pitch below the width
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpy2D(&r));
  r.srcPitch = pitch;
  r.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, cu.cuMemcpy2D(&r));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpy2D(nullptr));

  CU_OK(cu.cuMemsetD2D8(d, pitch, 7, 3, height));
  CU_OK(cu.cuMemsetD2D32Async(d + 4, pitch, 0x01020304, 2, height, nullptr));
  CU_OK(cu.cuMemcpyDtoH(flat.data(), d, flat.size()));
  EXPECT_EQ(7, flat[0]);
  EXPECT_EQ(7, flat[3 * 16 + 2]);
  EXPECT_EQ(3, flat[3]);  // from the copy above, untouched
  EXPECT_EQ(0x04, flat[16 + 4]);
  EXPECT_EQ(0x01, flat[16 + 11]);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemsetD2D8(d, pitch, 1, 17, 2));  // width above pitch
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemsetD2D8(d, pitch, 1, 4, 5));   // past the end
  CU_OK(cu.cuMemFree(d));
}

TEST_F(CpuDeviceExtras, PeerCopiesBetweenDevices) {
  int can = -1;
  CU_OK(cu.cuDeviceCanAccessPeer(&can, 0, 1));
  EXPECT_EQ(1, can);
  CU_OK(cu.cuDeviceCanAccessPeer(&can, 0, 0));
  EXPECT_EQ(0, can);
  CUdeviceptr on0 = 0;
  CU_OK(cu.cuMemAlloc(&on0, 64));
  CU_OK(cu.cuMemsetD8(on0, 0x3c, 64));
  CUcontext ctx1;
  CU_OK(cu.cuCtxCreate(&ctx1, nullptr, 0, 1));
  CUdeviceptr on1 = 0;
  CU_OK(cu.cuMemAlloc(&on1, 64));
  CU_OK(cu.cuCtxEnablePeerAccess(ctx, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cu.cuCtxEnablePeerAccess(ctx1, 0));  // same device
  CU_OK(cu.cuMemcpyPeer(on1, ctx1, on0, ctx, 64));
  uint8_t h[64] = {};
  CU_OK(cu.cuMemcpyDtoH(h, on1, 64));
  EXPECT_EQ(0x3c, h[63]);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyPeer(on1, ctx1, on0, ctx, 65));
  CU_OK(cu.cuCtxDestroy(ctx1));
  CU_OK(cu.cuMemFree(on0));
}

struct CallbackSeen {
  CUstream stream = nullptr;
  CUresult status = CUDA_ERROR_UNKNOWN;
  int calls = 0;
};

void CUDA_CB on_callback(CUstream s, CUresult status, void* user) {
  auto* seen = static_cast<CallbackSeen*>(user);
  seen->stream = s;
  seen->status = status;
  ++seen->calls;
}

TEST_F(CpuDeviceExtras, StreamCallbacksAndQueries) {
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, 0));
  CallbackSeen seen;
  CU_OK(cu.cuStreamAddCallback(s, &on_callback, &seen, 0));
  CU_OK(cu.cuStreamSynchronize(s));
  EXPECT_EQ(1, seen.calls);
  EXPECT_EQ(s, seen.stream);
  EXPECT_EQ(CUDA_SUCCESS, seen.status);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuStreamAddCallback(s, &on_callback, &seen, 1));
  CUcontext owner = nullptr;
  CU_OK(cu.cuStreamGetCtx(s, &owner));
  EXPECT_EQ(ctx, owner);
  CU_OK(cu.cuStreamGetCtx(nullptr, &owner));
  EXPECT_EQ(ctx, owner);
  unsigned version = 0;
  CU_OK(cu.cuCtxGetApiVersion(ctx, &version));
  EXPECT_GT(version, 0u);
  CUevent e;
  CU_OK(cu.cuEventCreate(&e, 0));
  CU_OK(cu.cuEventRecordWithFlags(e, s, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuEventRecordWithFlags(e, s, 0x10));
  CU_OK(cu.cuEventSynchronize(e));
  CU_OK(cu.cuEventDestroy(e));
  CU_OK(cu.cuStreamDestroy(s));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuStreamGetCtx(s, &owner));
}

}  // namespace
}  // namespace rgpu::cpudev::test
