// libcudart.so.12 through a real rgpud on the CPU device (run under `rgpu run
// --device cpu`): the names a CUDA 12 program imports, looked up as the
// dynamic linker binds them (name@libcudart.so.12), fill CUDA 12's layouts;
// and the runtime functions PyTorch imports work or are refused clearly.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr const char* kV12 = "libcudart.so.12";

// The library a CUDA 12 program's DT_NEEDED libcudart.so.12 reaches.
void* cudart12() {
  static void* lib = dlopen(RGPU_CUDART12_PATH, RTLD_NOW);
  return lib;
}

template <typename Fn>
Fn v12(const char* name) {
  return reinterpret_cast<Fn>(dlvsym(cudart12(), name, kV12));
}

// CUDA 12.4's cudaDeviceProp and cudaPointerAttributes, by the offsets its
// headers give (facts, stated here independently of the generated header).
constexpr size_t kProp12Size = 1032;
constexpr size_t kNameAt = 0, kTotalGlobalMemAt = 288, kClockRateAt = 348, kMajorAt = 360, kMinorAt = 364,
                 kMultiProcessorCountAt = 388, kComputeModeAt = 404, kMemoryClockRateAt = 608,
                 kMemoryBusWidthAt = 612, kReservedAt = 792;
constexpr size_t kPointerAttributes12Size = 24;

template <typename T>
T at(const std::vector<unsigned char>& b, size_t offset) {
  T v;
  std::memcpy(&v, b.data() + offset, sizeof v);
  return v;
}

int attribute(CUdevice_attribute a) {
  int v = -1;
  EXPECT_EQ(cuDeviceGetAttribute(&v, a, 0), CUDA_SUCCESS);
  return v;
}

TEST(Runtime12, EveryNameIsExportedUnderTheCuda12NodeThroughTheSymlink) {
  ASSERT_NE(cudart12(), nullptr) << dlerror();
  // The symlink reaches the one loaded library (the same object as libcuda.so.1).
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(driver, cudart12());
  dlclose(driver);
  for (const char* name : {"cudaMalloc", "cudaGetDeviceProperties_v2", "cudaStreamGetCaptureInfo_v2",
                           "cudaThreadExchangeStreamCaptureMode", "__cudaRegisterFatBinary",
                           "cudaGraphInstantiateWithFlags", "cudaThreadSynchronize"}) {
    EXPECT_NE(dlvsym(cudart12(), name, kV12), nullptr) << name;
  }
  // A shared name with the same ABI is one implementation; one whose ABI
  // changed is another.
  EXPECT_EQ(dlvsym(cudart12(), "cudaMalloc", kV12), dlvsym(cudart12(), "cudaMalloc", "libcudart.so.13"));
  EXPECT_NE(dlvsym(cudart12(), "cudaPointerGetAttributes", kV12),
            dlvsym(cudart12(), "cudaPointerGetAttributes", "libcudart.so.13"));
}

TEST(Runtime12, VersionIsCuda12) {
  int v = 0;
  ASSERT_EQ(v12<cudaError_t (*)(int*)>("cudaRuntimeGetVersion")(&v), cudaSuccess);
  EXPECT_EQ(v, 12040);
  ASSERT_EQ(cudaRuntimeGetVersion(&v), cudaSuccess);  // a CUDA 13 program's
  EXPECT_EQ(v, CUDART_VERSION);
}

TEST(Runtime12, DevicePropertiesUseCuda12Layout) {
  using GetProps = cudaError_t (*)(void*, int);
  for (const char* name : {"cudaGetDeviceProperties_v2", "cudaGetDeviceProperties"}) {
    SCOPED_TRACE(name);
    // A guard after 12's struct must stay untouched.
    std::vector<unsigned char> b(kProp12Size + 256, 0xAB);
    ASSERT_EQ(v12<GetProps>(name)(b.data(), 0), cudaSuccess);
    for (size_t i = kProp12Size; i < b.size(); ++i) ASSERT_EQ(b[i], 0xAB) << "wrote past 12's struct at " << i;
    char want_name[256] = {};
    ASSERT_EQ(cuDeviceGetName(want_name, sizeof want_name, 0), CUDA_SUCCESS);
    EXPECT_STREQ(reinterpret_cast<const char*>(b.data() + kNameAt), want_name);
    size_t total = 0;
    ASSERT_EQ(cuDeviceTotalMem(&total, 0), CUDA_SUCCESS);
    EXPECT_EQ(at<size_t>(b, kTotalGlobalMemAt), total);
    EXPECT_EQ(at<int>(b, kMajorAt), attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
    EXPECT_EQ(at<int>(b, kMinorAt), attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
    EXPECT_EQ(at<int>(b, kMultiProcessorCountAt), attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
    EXPECT_GT(at<int>(b, kMultiProcessorCountAt), 0);
    // Fields CUDA 13 removed, from the driver's attributes.
    EXPECT_EQ(at<int>(b, kClockRateAt), attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE));
    EXPECT_GT(at<int>(b, kClockRateAt), 0);
    EXPECT_EQ(at<int>(b, kMemoryClockRateAt), attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE));
    EXPECT_EQ(at<int>(b, kComputeModeAt), attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE));
    EXPECT_EQ(at<int>(b, kMemoryBusWidthAt), attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH));
    EXPECT_EQ(at<int>(b, kReservedAt), 0);
  }
}

TEST(Runtime12, PointerAttributesWriteOnlyCuda12Struct) {
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 256), cudaSuccess);
  std::vector<unsigned char> b(sizeof(cudaPointerAttributes) + 16, 0xCD);
  using Get = cudaError_t (*)(void*, const void*);
  ASSERT_EQ(v12<Get>("cudaPointerGetAttributes")(b.data(), static_cast<char*>(p) + 8), cudaSuccess);
  EXPECT_EQ(at<int>(b, 0), static_cast<int>(cudaMemoryTypeDevice));
  EXPECT_EQ(at<int>(b, 4), 0);
  EXPECT_EQ(at<void*>(b, 8), static_cast<char*>(p) + 8);
  for (size_t i = kPointerAttributes12Size; i < b.size(); ++i) ASSERT_EQ(b[i], 0xCD) << "wrote at " << i;
  EXPECT_EQ(cudaFree(p), cudaSuccess);
}

// A host function that holds its stream until released (bounded: it gives
// up after ten seconds so that a failing test cannot hang).
std::atomic<bool> g_release{false};
void hold_stream(void*) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!g_release.load() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

uint64_t pool_attribute(cudaMemPool_t pool, cudaMemPoolAttr a) {
  uint64_t v = ~uint64_t{0};
  EXPECT_EQ(cudaMemPoolGetAttribute(pool, a, &v), cudaSuccess);
  return v;
}

TEST(Runtime12, MallocAsyncAndFreeAsyncKeepStreamOrder) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  ASSERT_NE(pool, nullptr);
  ASSERT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
  uint64_t reserved0 = pool_attribute(pool, cudaMemPoolAttrReservedMemCurrent);

  constexpr size_t n = 1 << 16;
  using MallocAsync = cudaError_t (*)(void**, size_t, cudaStream_t);
  using FreeAsync = cudaError_t (*)(void*, cudaStream_t);
  void* p = nullptr;
  ASSERT_EQ(v12<MallocAsync>("cudaMallocAsync")(&p, n, s), cudaSuccess);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(pool_attribute(pool, cudaMemPoolAttrUsedMemCurrent), n);
  ASSERT_EQ(cudaMemsetAsync(p, 7, n, s), cudaSuccess);
  std::vector<unsigned char> host(n, 0);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), p, n, cudaMemcpyDeviceToHost, s), cudaSuccess);

  // Hold the stream, then free: the memory must stay until the stream gets there.
  g_release = false;
  ASSERT_EQ(cudaLaunchHostFunc(s, hold_stream, nullptr), cudaSuccess);
  ASSERT_EQ(v12<FreeAsync>("cudaFreeAsync")(p, s), cudaSuccess);
  EXPECT_EQ(pool_attribute(pool, cudaMemPoolAttrUsedMemCurrent), 0u);
  ASSERT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
  EXPECT_EQ(pool_attribute(pool, cudaMemPoolAttrReservedMemCurrent), reserved0 + n);
  g_release = true;
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ASSERT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
  EXPECT_EQ(pool_attribute(pool, cudaMemPoolAttrReservedMemCurrent), reserved0);
  EXPECT_GE(pool_attribute(pool, cudaMemPoolAttrUsedMemHigh), n);
  for (size_t i = 0; i < n; i += 4099) ASSERT_EQ(host[i], 7) << i;

  // A freed pointer is no allocation any more.
  EXPECT_EQ(cudaFreeAsync(p, s), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  // Attributes: the release threshold is kept, current values are read-only.
  uint64_t threshold = 1 << 20;
  EXPECT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), cudaSuccess);
  EXPECT_EQ(pool_attribute(pool, cudaMemPoolAttrReleaseThreshold), threshold);
  EXPECT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &threshold), cudaErrorInvalidValue);
  cudaMemAccessDesc own{};
  own.location.type = cudaMemLocationTypeDevice;
  own.location.id = 0;
  own.flags = cudaMemAccessFlagsProtReadWrite;
  EXPECT_EQ(cudaMemPoolSetAccess(pool, &own, 1), cudaSuccess);
  cudaGetLastError();
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST(Runtime12, CaptureModeIsExchangedPerThreadAndNothingCaptures) {
  using Exchange = cudaError_t (*)(cudaStreamCaptureMode*);
  auto exchange = v12<Exchange>("cudaThreadExchangeStreamCaptureMode");
  ASSERT_NE(exchange, nullptr);
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  ASSERT_EQ(exchange(&mode), cudaSuccess);
  EXPECT_EQ(mode, cudaStreamCaptureModeGlobal);
  std::thread([&] {
    cudaStreamCaptureMode other = cudaStreamCaptureModeThreadLocal;
    EXPECT_EQ(exchange(&other), cudaSuccess);
    EXPECT_EQ(other, cudaStreamCaptureModeGlobal);  // its own mode, not this thread's
  }).join();
  mode = cudaStreamCaptureModeGlobal;
  ASSERT_EQ(exchange(&mode), cudaSuccess);
  EXPECT_EQ(mode, cudaStreamCaptureModeRelaxed);
  auto bad = static_cast<cudaStreamCaptureMode>(42);
  EXPECT_EQ(exchange(&bad), cudaErrorInvalidValue);
  cudaGetLastError();

  auto status = static_cast<cudaStreamCaptureStatus>(-1);
  using IsCapturing = cudaError_t (*)(cudaStream_t, cudaStreamCaptureStatus*);
  ASSERT_EQ(v12<IsCapturing>("cudaStreamIsCapturing")(nullptr, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  using InfoV2 = cudaError_t (*)(cudaStream_t, cudaStreamCaptureStatus*, unsigned long long*, cudaGraph_t*,
                                 const cudaGraphNode_t**, size_t*);
  status = static_cast<cudaStreamCaptureStatus>(-1);
  // The other outputs are set only while the stream captures.
  size_t count = 99;
  ASSERT_EQ(v12<InfoV2>("cudaStreamGetCaptureInfo_v2")(nullptr, &status, nullptr, nullptr, nullptr, &count),
            cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
}

TEST(Runtime12, StreamPrioritiesAreKeptAndClamped) {
  int least = 1, greatest = 1;
  ASSERT_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
  ASSERT_LE(greatest, least);
  cudaStream_t hi = nullptr, lo = nullptr;
  ASSERT_EQ(cudaStreamCreateWithPriority(&hi, cudaStreamNonBlocking, greatest), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithPriority(&lo, 0, greatest - 100), cudaSuccess);
  int p = 1;
  ASSERT_EQ(v12<cudaError_t (*)(cudaStream_t, int*)>("cudaStreamGetPriority")(hi, &p), cudaSuccess);
  EXPECT_EQ(p, greatest);
  ASSERT_EQ(cudaStreamGetPriority(lo, &p), cudaSuccess);
  EXPECT_EQ(p, greatest);  // clamped into the range
  ASSERT_EQ(cudaStreamGetPriority(nullptr, &p), cudaSuccess);
  EXPECT_EQ(p, 0);
  EXPECT_EQ(cudaStreamDestroy(hi), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(lo), cudaSuccess);
}

TEST(Runtime12, PeerQueriesWithOneDevice) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  ASSERT_GE(count, 1);
  int can = -1;
  using CanAccess = cudaError_t (*)(int*, int, int);
  ASSERT_EQ(v12<CanAccess>("cudaDeviceCanAccessPeer")(&can, 0, 0), cudaSuccess);
  EXPECT_EQ(can, 0);
  EXPECT_EQ(cudaDeviceCanAccessPeer(&can, 0, count), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaDeviceEnablePeerAccess(0, 0), cudaErrorInvalidDevice);  // not its own peer
  cudaGetLastError();
  // A "peer" copy within one device is a device-to-device copy.
  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(cudaMalloc(&a, 64), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, 64), cudaSuccess);
  ASSERT_EQ(cudaMemset(a, 5, 64), cudaSuccess);
  ASSERT_EQ(cudaMemcpyPeerAsync(b, 0, a, 0, 64, nullptr), cudaSuccess);
  unsigned char host[64] = {};
  ASSERT_EQ(cudaMemcpy(host, b, 64, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host[0], 5);
  EXPECT_EQ(host[63], 5);
  EXPECT_EQ(cudaFree(a), cudaSuccess);
  EXPECT_EQ(cudaFree(b), cudaSuccess);
}

TEST(Runtime12, CapturedWorkReplaysThroughGraphs) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 64), cudaSuccess);
  ASSERT_EQ(cudaMemset(p, 0, 64), cudaSuccess);
  using Begin = cudaError_t (*)(cudaStream_t, cudaStreamCaptureMode);
  ASSERT_EQ(v12<Begin>("cudaStreamBeginCapture")(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  auto status = static_cast<cudaStreamCaptureStatus>(-1);
  using IsCapturing = cudaError_t (*)(cudaStream_t, cudaStreamCaptureStatus*);
  ASSERT_EQ(v12<IsCapturing>("cudaStreamIsCapturing")(s, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  ASSERT_EQ(cudaMemsetAsync(p, 7, 64, s), cudaSuccess);  // recorded, not run
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  ASSERT_NE(graph, nullptr);
  unsigned char host[64] = {};
  ASSERT_EQ(cudaMemcpy(host, p, 64, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host[0], 0);  // capturing ran nothing
  cudaGraphExec_t exec = nullptr;
  using Instantiate = cudaError_t (*)(cudaGraphExec_t*, cudaGraph_t, unsigned long long);
  ASSERT_EQ(v12<Instantiate>("cudaGraphInstantiateWithFlags")(&exec, graph, 0), cudaSuccess);
  using Launch = cudaError_t (*)(cudaGraphExec_t, cudaStream_t);
  ASSERT_EQ(v12<Launch>("cudaGraphLaunch")(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(host, p, 64, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host[0], 7);
  EXPECT_EQ(host[63], 7);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST(Runtime12, RefusedFunctionsReturnNotSupported) {
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 64), cudaSuccess);
  cudaIpcMemHandle_t handle;
  using GetHandle = cudaError_t (*)(cudaIpcMemHandle_t*, void*);
  EXPECT_EQ(v12<GetHandle>("cudaIpcGetMemHandle")(&handle, p), cudaErrorNotSupported);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNotSupported);  // recorded, as any failure
  EXPECT_EQ(cudaIpcOpenMemHandle(&p, handle, cudaIpcMemLazyEnablePeerAccess), cudaErrorNotSupported);
  // Pinned memory on the client has no device pointer on the server.
  void* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, 4096, cudaHostAllocDefault), cudaSuccess);
  void* dev = nullptr;
  EXPECT_EQ(cudaHostGetDevicePointer(&dev, pinned, 0), cudaErrorNotSupported);
  int local = 0;
  EXPECT_EQ(cudaHostGetDevicePointer(&dev, &local, 0), cudaErrorInvalidValue);
  cudaGetLastError();
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
}

TEST(Runtime12, ProfilerAndOldThreadNamesWork) {
  using Fn = cudaError_t (*)();
  EXPECT_EQ(v12<Fn>("cudaProfilerStart")(), cudaSuccess);
  EXPECT_EQ(v12<Fn>("cudaProfilerStop")(), cudaSuccess);
  EXPECT_EQ(v12<Fn>("cudaThreadSynchronize")(), cudaSuccess);
  size_t v = 0;
  EXPECT_EQ(v12<cudaError_t (*)(size_t*, cudaLimit)>("cudaThreadGetLimit")(&v, cudaLimitStackSize), cudaSuccess);
  EXPECT_GT(v, 0u);
  // A name only CUDA 12 has and rgpu does not implement: the stub path.
  EXPECT_EQ(v12<int (*)()>("cudaSetDoubleForDevice")(), 801);
}

}  // namespace
