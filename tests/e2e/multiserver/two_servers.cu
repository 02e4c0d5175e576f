// A program that uses the devices of two rgpud servers at once, written as
// a user writes it (nvcc, -cudart shared) and run unmodified through
// `rgpu run --server A,B` by multiserver_test.cpp. It prints one line per
// device ("device I total=BYTES") so the test can tell which server each
// is on, checks its own results and ends with PASS or FAIL.
//   two_servers all    every device: a kernel on each, peer copies between
//                      devices (across servers and within one: cudaMemcpyPeer,
//                      cudaMemcpyPeerAsync, cudaMemcpyDefault, cuMemcpy),
//                      peer access
//   two_servers one    exactly one device: a kernel and a copy on it
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      std::printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(e_)); \
      return 1;                                                                         \
    }                                                                                   \
  } while (0)
#define EXPECT(cond)                                                  \
  do {                                                                \
    if (!(cond)) {                                                    \
      std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);     \
      return 1;                                                       \
    }                                                                 \
  } while (0)

__global__ void fill(unsigned* out, unsigned seed, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = seed * 2654435761u + static_cast<unsigned>(i);
}

namespace {

constexpr size_t kWords = 1 << 16;  // 256 KiB

// Fills a buffer on `device` with a kernel and checks it came back right.
int fill_on(int device, unsigned seed, unsigned** out) {
  CHECK(cudaSetDevice(device));
  CHECK(cudaMalloc(out, kWords * sizeof(unsigned)));
  fill<<<(kWords + 255) / 256, 256>>>(*out, seed, kWords);
  CHECK(cudaGetLastError());
  std::vector<unsigned> host(kWords);
  CHECK(cudaMemcpy(host.data(), *out, kWords * sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < kWords; ++i) EXPECT(host[i] == seed * 2654435761u + static_cast<unsigned>(i));
  return 0;
}

// Checks that `p` on `device` holds what fill(seed) wrote.
int holds(int device, const unsigned* p, unsigned seed) {
  CHECK(cudaSetDevice(device));
  std::vector<unsigned> host(kWords);
  CHECK(cudaMemcpy(host.data(), p, kWords * sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < kWords; ++i) EXPECT(host[i] == seed * 2654435761u + static_cast<unsigned>(i));
  return 0;
}

int all_devices(int count) {
  EXPECT(count >= 2);
  std::vector<unsigned*> buf(count);
  for (int d = 0; d < count; ++d) {
    if (fill_on(d, 100 + d, &buf[d]) != 0) return 1;
  }
  // No device reaches another's memory; enabling it fails as the API says.
  for (int a = 0; a < count; ++a) {
    for (int b = 0; b < count; ++b) {
      int can = -1;
      CHECK(cudaDeviceCanAccessPeer(&can, a, b));
      EXPECT(can == 0);
    }
  }
  CHECK(cudaSetDevice(0));
  EXPECT(cudaDeviceEnablePeerAccess(1, 0) == cudaErrorPeerAccessUnsupported);
  cudaGetLastError();
  // Device 0 -> device 1 (two servers): the bytes arrive.
  CHECK(cudaMemcpyPeer(buf[1], 1, buf[0], 0, kWords * sizeof(unsigned)));
  if (holds(1, buf[1], 100) != 0) return 1;
  if (holds(0, buf[0], 100) != 0) return 1;
  // The other way, as cudaMemcpyDefault between two devices' pointers, on device 1's stream.
  CHECK(cudaSetDevice(1));
  unsigned* fresh = nullptr;
  if (fill_on(1, 7, &fresh) != 0) return 1;
  CHECK(cudaMemcpy(buf[0], fresh, kWords * sizeof(unsigned), cudaMemcpyDefault));
  if (holds(0, buf[0], 7) != 0) return 1;
  // The driver's unified cuMemcpy between the two servers' pointers (the
  // program's libcuda.so.1 is rgpu's, so the name resolves there).
  using MemcpyFn = int (*)(unsigned long long, unsigned long long, size_t);
  auto cu_memcpy = reinterpret_cast<MemcpyFn>(dlsym(RTLD_DEFAULT, "cuMemcpy"));
  EXPECT(cu_memcpy != nullptr);
  unsigned* other = nullptr;
  if (fill_on(1, 11, &other) != 0) return 1;
  CHECK(cudaSetDevice(0));
  EXPECT(cu_memcpy(reinterpret_cast<unsigned long long>(buf[0]), reinterpret_cast<unsigned long long>(other),
                   kWords * sizeof(unsigned)) == 0);
  if (holds(0, buf[0], 11) != 0) return 1;
  // Async, on a stream of the destination device.
  CHECK(cudaSetDevice(1));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  if (fill_on(0, 9, &buf[0]) != 0) return 1;
  CHECK(cudaSetDevice(1));
  CHECK(cudaMemcpyPeerAsync(buf[1], 1, buf[0], 0, kWords * sizeof(unsigned), s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamDestroy(s));
  if (holds(1, buf[1], 9) != 0) return 1;
  // Within one server, when it has two devices.
  if (count >= 3) {
    CHECK(cudaMemcpyPeer(buf[2], 2, buf[1], 1, kWords * sizeof(unsigned)));
    if (holds(2, buf[2], 9) != 0) return 1;
  }
  // A large copy across servers, timed (the figure docs/transport.md quotes).
  const size_t big = size_t{64} << 20;
  void *src = nullptr, *dst = nullptr;
  CHECK(cudaSetDevice(0));
  CHECK(cudaMalloc(&src, big));
  CHECK(cudaMemset(src, 0x5a, big));
  CHECK(cudaSetDevice(1));
  CHECK(cudaMalloc(&dst, big));
  CHECK(cudaMemset(dst, 0, big));
  CHECK(cudaDeviceSynchronize());
  // The second of two (the first also pays for the sessions' first large transfers).
  auto t0 = std::chrono::steady_clock::now();
  double s_taken = 0;
  for (int i = 0; i < 2; ++i) {
    t0 = std::chrono::steady_clock::now();
    CHECK(cudaMemcpyPeer(dst, 1, src, 0, big));
    s_taken = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  std::printf("peer copy bytes=%zu seconds=%.3f mb_per_s=%.0f\n", big, s_taken, big / s_taken / 1e6);
  std::vector<unsigned char> back(big);
  // For comparison: the same bytes device to host, then host to device.
  t0 = std::chrono::steady_clock::now();
  CHECK(cudaMemcpy(back.data(), dst, big, cudaMemcpyDeviceToHost));
  double dtoh = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(cudaSetDevice(0));
  t0 = std::chrono::steady_clock::now();
  CHECK(cudaMemcpy(src, back.data(), big, cudaMemcpyHostToDevice));
  double htod = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(cudaSetDevice(1));
  // And the staging done by hand: device 0 to host, host to device 1.
  CHECK(cudaSetDevice(0));
  t0 = std::chrono::steady_clock::now();
  CHECK(cudaMemcpy(back.data(), src, big, cudaMemcpyDeviceToHost));
  CHECK(cudaSetDevice(1));
  CHECK(cudaMemcpy(dst, back.data(), big, cudaMemcpyHostToDevice));
  double by_hand = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("host copies dtoh_mb_per_s=%.0f htod_mb_per_s=%.0f staged_by_hand_mb_per_s=%.0f\n", big / dtoh / 1e6,
              big / htod / 1e6, big / by_hand / 1e6);
  for (size_t i = 0; i < big; i += 4093) EXPECT(back[i] == 0x5a);
  EXPECT(back[big - 1] == 0x5a);
  CHECK(cudaFree(dst));
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(src));
  for (int d = 0; d < count; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaFree(buf[d]));
  }
  CHECK(cudaSetDevice(1));
  CHECK(cudaFree(fresh));
  CHECK(cudaFree(other));
  return 0;
}

int one_device(int count) {
  EXPECT(count == 1);
  unsigned* p = nullptr;
  if (fill_on(0, 5, &p) != 0) return 1;
  CHECK(cudaFree(p));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "all";
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    std::printf("FAIL no devices: %s\n", cudaGetErrorName(e));
    return 1;
  }
  std::printf("devices=%d\n", count);
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, d));
    std::printf("device %d total=%zu\n", d, prop.totalGlobalMem);
  }
  int rc = std::strcmp(mode, "one") == 0 ? one_device(count) : all_devices(count);
  std::printf("%s two_servers\n", rc == 0 ? "PASS" : "FAIL");
  return rc;
}
