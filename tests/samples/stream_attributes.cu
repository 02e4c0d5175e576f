// stream_attributes: what programs using access-policy windows query and
// set (persisting L2, stream attributes, the profiler switches) is answered.
#include <cstdio>
#include <cstdlib>

#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#define CHECK(call)                                                                    \
  do {                                                                                 \
    cudaError_t err_ = (call);                                                         \
    if (err_ != cudaSuccess) {                                                         \
      std::printf("FAIL stream_attributes: %s: %s\n", #call, cudaGetErrorName(err_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)
#define EXPECT(cond)                                                   \
  do {                                                                 \
    if (!(cond)) {                                                     \
      std::printf("FAIL stream_attributes: expected %s\n", #cond);   \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)

__global__ void touch(int* p) { p[threadIdx.x] += 1; }

int main() {
  int persisting = 0, window_max = 0;
  CHECK(cudaDeviceGetAttribute(&persisting, cudaDevAttrMaxPersistingL2CacheSize, 0));
  CHECK(cudaDeviceGetAttribute(&window_max, cudaDevAttrMaxAccessPolicyWindowSize, 0));
  EXPECT(persisting > 0);
  EXPECT(window_max > 0);
  CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, persisting));
  CHECK(cudaProfilerStart());

  cudaStream_t s;
  CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, 0));
  int* d;
  CHECK(cudaMalloc(&d, 1 << 20));
  cudaStreamAttrValue v = {};
  v.accessPolicyWindow.base_ptr = d;
  v.accessPolicyWindow.num_bytes = 1 << 20;
  v.accessPolicyWindow.hitRatio = 0.6f;
  v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  CHECK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));
  cudaStreamAttrValue got = {};
  CHECK(cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &got));
  EXPECT(got.accessPolicyWindow.base_ptr == d);
  EXPECT(got.accessPolicyWindow.num_bytes == (1u << 20));
  EXPECT(got.accessPolicyWindow.hitRatio == 0.6f);
  EXPECT(got.accessPolicyWindow.hitProp == cudaAccessPropertyPersisting);
  EXPECT(got.accessPolicyWindow.missProp == cudaAccessPropertyStreaming);
  // A window over the device's maximum is refused.
  v.accessPolicyWindow.num_bytes = static_cast<size_t>(window_max) + 1;
  EXPECT(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v) == cudaErrorInvalidValue);
  cudaGetLastError();

  cudaStreamAttrValue sync = {};
  sync.syncPolicy = cudaSyncPolicyYield;
  CHECK(cudaStreamSetAttribute(s, cudaStreamAttributeSynchronizationPolicy, &sync));
  CHECK(cudaStreamGetAttribute(s, cudaStreamAttributeSynchronizationPolicy, &got));
  EXPECT(got.syncPolicy == cudaSyncPolicyYield);

  int least = 0, greatest = 0;
  CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStreamAttrValue prio = {};
  prio.priority = greatest;
  CHECK(cudaStreamSetAttribute(s, cudaStreamAttributePriority, &prio));
  CHECK(cudaStreamGetAttribute(s, cudaStreamAttributePriority, &got));
  EXPECT(got.priority == greatest);
  int p = 1;
  CHECK(cudaStreamGetPriority(s, &p));
  EXPECT(p == greatest);

  CHECK(cudaMemsetAsync(d, 0, 256 * sizeof(int), s));
  touch<<<1, 256, 0, s>>>(d);
  CHECK(cudaStreamSynchronize(s));
  int h[256];
  CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 256; ++i) EXPECT(h[i] == 1);

  v.accessPolicyWindow.num_bytes = 0;  // resets the window
  CHECK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));
  CHECK(cudaCtxResetPersistingL2Cache());
  CHECK(cudaProfilerStop());
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(d));
  std::printf("PASS stream_attributes\n");
  return 0;
}
