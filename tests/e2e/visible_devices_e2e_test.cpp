// End to end: CUDA_VISIBLE_DEVICES under `rgpu run --cpu-devices 3`. ctest
// runs this program once per selection, with RGPU_TEST_EXPECT naming the
// server's devices the program must see, in order ("2,0"), or "none".
// CPU devices are named "rgpu CPU device N" and their UUIDs end in N, so a
// device is recognised by both.
#include <cuda.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace {

#define ASSERT_CU(call) ASSERT_EQ((call), CUDA_SUCCESS) << #call

// The server's ordinals RGPU_TEST_EXPECT names; empty for "none".
std::vector<int> expected() {
  const char* text = std::getenv("RGPU_TEST_EXPECT");
  std::vector<int> out;
  if (!text || std::string(text) == "none") return out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

// Bytes in use on each of the server's devices, as a second session that
// sees them all (CUDA_VISIBLE_DEVICES unset) reads them: this program run
// again with --observe, against the same rgpud.
std::vector<long long> server_use() {
  std::string saved = std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "";
  bool had = std::getenv("CUDA_VISIBLE_DEVICES") != nullptr;
  unsetenv("CUDA_VISIBLE_DEVICES");
  std::vector<long long> use;
  char self[4096] = {};
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return use;
  if (FILE* out = popen(("exec '" + std::string(self, static_cast<size_t>(n)) + "' --observe").c_str(), "r")) {
    int dev = 0;
    long long bytes = 0;
    while (std::fscanf(out, "used %d %lld\n", &dev, &bytes) == 2) use.push_back(bytes);
    pclose(out);
  }
  if (had) setenv("CUDA_VISIBLE_DEVICES", saved.c_str(), 1);
  return use;
}

TEST(VisibleDevices, TheProgramSeesTheSelectedDevicesInOrder) {
  ASSERT_NE(std::getenv("RGPU_TEST_EXPECT"), nullptr) << "run by ctest";
  const std::vector<int> want = expected();
  if (want.empty()) {
    // As a local driver with nothing visible.
    EXPECT_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE);
    int count = -1;
    EXPECT_EQ(cuDeviceGetCount(&count), CUDA_ERROR_NO_DEVICE);
    return;
  }
  ASSERT_CU(cuInit(0));
  int count = 0;
  ASSERT_CU(cuDeviceGetCount(&count));
  ASSERT_EQ(count, static_cast<int>(want.size()));
  CUdevice beyond = 0;
  EXPECT_EQ(cuDeviceGet(&beyond, count), CUDA_ERROR_INVALID_DEVICE);

  std::vector<CUcontext> contexts;
  std::vector<CUdeviceptr> buffers;
  std::vector<CUdeviceptr> markers;
  constexpr size_t kWords = 1024;  // 4 KiB: one page
  constexpr size_t kMarker = size_t{16} << 20;
  for (int i = 0; i < count; ++i) {
    CUdevice dev = -1;
    ASSERT_CU(cuDeviceGet(&dev, i));
    EXPECT_EQ(dev, i);
    char name[64] = {};
    ASSERT_CU(cuDeviceGetName(name, sizeof name, dev));
    EXPECT_EQ(std::string(name), "rgpu CPU device " + std::to_string(want[i]));
    CUuuid uuid{};
    ASSERT_CU(cuDeviceGetUuid(&uuid, dev));
    EXPECT_EQ(static_cast<unsigned char>(uuid.bytes[15]), want[i]);

    CUcontext ctx = nullptr;
    ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    ASSERT_CU(cuCtxSetCurrent(ctx));
    CUdevice current = -1;
    ASSERT_CU(cuCtxGetDevice(&current));
    EXPECT_EQ(current, i);
    CUdeviceptr p = 0;
    ASSERT_CU(cuMemAlloc(&p, kWords * 4));
    ASSERT_CU(cuMemsetD32(p, 0x1000u + static_cast<unsigned>(want[i]), kWords));
    CUdeviceptr marker = 0;  // a size that names the device: (i+1) x 16 MiB
    ASSERT_CU(cuMemAlloc(&marker, (static_cast<size_t>(i) + 1) * kMarker));
    contexts.push_back(ctx);
    buffers.push_back(p);
    markers.push_back(marker);
  }
  // The allocations are on the server's devices the selection names: a
  // session that sees every device finds each marker on the device it names.
  if (!want.empty()) {
    std::vector<long long> use = server_use();
    ASSERT_EQ(use.size(), 3u) << "the observer session did not answer";
    for (int server = 0; server < 3; ++server) {
      long long expect = 0;
      for (int i = 0; i < count; ++i) {
        if (want[i] == server) expect = static_cast<long long>((static_cast<size_t>(i) + 1) * kMarker + kWords * 4);
      }
      EXPECT_EQ(use[server], expect) << "server device " << server;
    }
  }
  // Each device holds exactly what was allocated in its context, and each
  // buffer kept its own device's value: one distinct device per selection.
  for (int i = 0; i < count; ++i) {
    ASSERT_CU(cuCtxSetCurrent(contexts[i]));
    size_t free_bytes = 0, total = 0;
    ASSERT_CU(cuMemGetInfo(&free_bytes, &total));
    EXPECT_EQ(total - free_bytes, (static_cast<size_t>(i) + 1) * kMarker + kWords * 4) << "device " << i;
    std::vector<unsigned> host(kWords);
    ASSERT_CU(cuMemcpyDtoH(host.data(), buffers[i], kWords * 4));
    EXPECT_EQ(host.front(), 0x1000u + static_cast<unsigned>(want[i]));
    EXPECT_EQ(host.back(), 0x1000u + static_cast<unsigned>(want[i]));
    CUdeviceptr copy = 0;
    ASSERT_CU(cuMemAlloc(&copy, kWords * 4));
    ASSERT_CU(cuMemcpyDtoD(copy, buffers[i], kWords * 4));
    std::vector<unsigned> back(kWords);
    ASSERT_CU(cuMemcpyDtoH(back.data(), copy, kWords * 4));
    EXPECT_EQ(back, host);
    ASSERT_CU(cuMemFree(copy));
    ASSERT_CU(cuMemFree(buffers[i]));
    ASSERT_CU(cuMemFree(markers[i]));
  }
  // A context made with cuCtxCreate lands on the selected device too.
  CUcontext own = nullptr;
  ASSERT_CU(cuCtxCreate(&own, nullptr, 0, 0));
  CUdevice own_dev = -1;
  ASSERT_CU(cuCtxGetDevice(&own_dev));
  EXPECT_EQ(own_dev, 0);
  CUdeviceptr p = 0;
  ASSERT_CU(cuMemAlloc(&p, 4096));
  ASSERT_CU(cuMemFree(p));
  ASSERT_CU(cuCtxDestroy(own));
  for (int i = 0; i < count; ++i) ASSERT_CU(cuDevicePrimaryCtxRelease(i));
}

}  // namespace

// --observe: print "used <server device> <bytes>" for every device this
// session sees (all of them: CUDA_VISIBLE_DEVICES unset), then exit.
int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--observe") == 0) {
    int count = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&count) != CUDA_SUCCESS) return 1;
    for (int d = 0; d < count; ++d) {
      CUcontext ctx = nullptr;
      size_t free_bytes = 0, total = 0;
      if (cuDevicePrimaryCtxRetain(&ctx, d) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
          cuMemGetInfo(&free_bytes, &total) != CUDA_SUCCESS) {
        return 1;
      }
      std::printf("used %d %lld\n", d, static_cast<long long>(total - free_bytes));
      cuCtxSetCurrent(nullptr);
      cuDevicePrimaryCtxRelease(d);
    }
    return 0;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
