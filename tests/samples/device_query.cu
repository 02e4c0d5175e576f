// device_query: lists the CUDA devices and checks that cudaGetDeviceProperties
// and cudaDeviceGetAttribute agree, and that bad device numbers are refused.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorString(err_));                                         \
      std::printf("FAIL device_query: %s\n", cudaGetErrorName(err_));                 \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

static int failures = 0;

static void expect_attr(int dev, cudaDeviceAttr attr, long long expected, const char* what) {
  int value = -1;
  CHECK(cudaDeviceGetAttribute(&value, attr, dev));
  if (value != expected) {
    std::fprintf(stderr, "device %d: attribute %s = %d, properties say %lld\n", dev, what, value, expected);
    ++failures;
  }
}

int main() {
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  if (count < 1) {
    std::printf("FAIL device_query: no device (count=%d)\n", count);
    return 1;
  }
  int runtime = 0, driver = 0;
  CHECK(cudaRuntimeGetVersion(&runtime));
  CHECK(cudaDriverGetVersion(&driver));
  std::printf("runtime %d driver %d devices %d\n", runtime, driver, count);
  if (runtime <= 0 || driver <= 0) {
    std::fprintf(stderr, "bad versions runtime=%d driver=%d\n", runtime, driver);
    ++failures;
  }

  for (int dev = 0; dev < count; ++dev) {
    cudaDeviceProp prop;
    std::memset(&prop, 0, sizeof prop);
    CHECK(cudaGetDeviceProperties(&prop, dev));
    std::printf("device %d: %s, compute capability %d.%d, %d multiprocessors, %zu MiB, warp %d\n", dev,
                prop.name, prop.major, prop.minor, prop.multiProcessorCount, prop.totalGlobalMem >> 20,
                prop.warpSize);
    if (std::strlen(prop.name) == 0 || prop.totalGlobalMem == 0 || prop.major < 1 || prop.warpSize != 32 ||
        prop.maxThreadsPerBlock < 64 || prop.multiProcessorCount < 1 || prop.sharedMemPerBlock < 16 * 1024) {
      std::fprintf(stderr, "device %d: implausible properties\n", dev);
      ++failures;
    }
    expect_attr(dev, cudaDevAttrMaxThreadsPerBlock, prop.maxThreadsPerBlock, "max threads per block");
    expect_attr(dev, cudaDevAttrMaxBlockDimX, prop.maxThreadsDim[0], "max block dim x");
    expect_attr(dev, cudaDevAttrMaxBlockDimY, prop.maxThreadsDim[1], "max block dim y");
    expect_attr(dev, cudaDevAttrMaxBlockDimZ, prop.maxThreadsDim[2], "max block dim z");
    expect_attr(dev, cudaDevAttrMaxGridDimX, prop.maxGridSize[0], "max grid dim x");
    expect_attr(dev, cudaDevAttrMaxGridDimY, prop.maxGridSize[1], "max grid dim y");
    expect_attr(dev, cudaDevAttrMaxSharedMemoryPerBlock, (long long)prop.sharedMemPerBlock, "shared per block");
    expect_attr(dev, cudaDevAttrTotalConstantMemory, (long long)prop.totalConstMem, "constant memory");
    expect_attr(dev, cudaDevAttrWarpSize, prop.warpSize, "warp size");
    expect_attr(dev, cudaDevAttrMultiProcessorCount, prop.multiProcessorCount, "multiprocessors");
    expect_attr(dev, cudaDevAttrComputeCapabilityMajor, prop.major, "cc major");
    expect_attr(dev, cudaDevAttrComputeCapabilityMinor, prop.minor, "cc minor");
    expect_attr(dev, cudaDevAttrMaxRegistersPerBlock, prop.regsPerBlock, "registers per block");
    expect_attr(dev, cudaDevAttrUnifiedAddressing, prop.unifiedAddressing, "unified addressing");
    expect_attr(dev, cudaDevAttrMaxThreadsPerMultiProcessor, prop.maxThreadsPerMultiProcessor,
                "threads per multiprocessor");
    expect_attr(dev, cudaDevAttrPciBusId, prop.pciBusID, "pci bus id");

    CHECK(cudaSetDevice(dev));
    int current = -1;
    CHECK(cudaGetDevice(&current));
    if (current != dev) {
      std::fprintf(stderr, "cudaGetDevice returned %d after cudaSetDevice(%d)\n", current, dev);
      ++failures;
    }
    size_t free_bytes = 0, total_bytes = 0;
    CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (total_bytes == 0 || free_bytes > total_bytes) {
      std::fprintf(stderr, "device %d: cudaMemGetInfo free=%zu total=%zu\n", dev, free_bytes, total_bytes);
      ++failures;
    }
  }

  // A device number past the end is refused, and the refusal becomes the last error.
  cudaDeviceProp prop;
  cudaError_t e = cudaGetDeviceProperties(&prop, count);
  if (e != cudaErrorInvalidDevice) {
    std::fprintf(stderr, "cudaGetDeviceProperties(count) returned %s\n", cudaGetErrorName(e));
    ++failures;
  }
  int value = 0;
  e = cudaDeviceGetAttribute(&value, cudaDevAttrWarpSize, -1);
  if (e != cudaErrorInvalidDevice) {
    std::fprintf(stderr, "cudaDeviceGetAttribute(-1) returned %s\n", cudaGetErrorName(e));
    ++failures;
  }
  e = cudaSetDevice(count + 7);
  if (e != cudaErrorInvalidDevice) {
    std::fprintf(stderr, "cudaSetDevice(count+7) returned %s\n", cudaGetErrorName(e));
    ++failures;
  }
  e = cudaGetLastError();
  if (e != cudaErrorInvalidDevice) {
    std::fprintf(stderr, "cudaGetLastError returned %s, wanted cudaErrorInvalidDevice\n", cudaGetErrorName(e));
    ++failures;
  }
  CHECK(cudaGetLastError());

  if (failures) {
    std::printf("FAIL device_query: %d mismatches\n", failures);
    return 1;
  }
  std::printf("PASS device_query: %d device(s)\n", count);
  return 0;
}
