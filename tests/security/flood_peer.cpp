// The two sides of the endpoint-flood test (flood_test.py):
//   flood_peer flood HOST:PORT N HOLD_S  opens N UCX endpoints to rgpud that
//       never send rgpu's transport hello, keeps them HOLD_S seconds, exits;
//   flood_peer steady                    a client through the preloaded
//       library: connects, prints "connected", waits for a line on stdin,
//       then checks 50 round trips of 64 KiB and prints "PASS steady".
// Raw UCX on the flood side, so the endpoints look like any client's until
// the hello would come.
#include <arpa/inet.h>
#include <cuda.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

void ignore_error(void*, ucp_ep_h, ucs_status_t) {}

int flood(const std::string& address, int count, double hold_seconds) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return 2;
  sockaddr_in server{};
  server.sin_family = AF_INET;
  server.sin_port = htons(static_cast<uint16_t>(std::atoi(address.substr(colon + 1).c_str())));
  if (inet_pton(AF_INET, address.substr(0, colon).c_str(), &server.sin_addr) != 1) return 2;
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;  // as rgpu's own clients
  ucp_context_h context = nullptr;
  if (ucp_init(&params, nullptr, &context) != UCS_OK) return 1;
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h worker = nullptr;
  if (ucp_worker_create(context, &wp, &worker) != UCS_OK) return 1;
  int made = 0;
  for (int i = 0; i < count; ++i) {
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                    UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    ep.sockaddr.addr = reinterpret_cast<const sockaddr*>(&server);
    ep.sockaddr.addrlen = sizeof server;
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = ignore_error;
    ucp_ep_h h = nullptr;
    if (ucp_ep_create(worker, &ep, &h) == UCS_OK) ++made;
    for (int k = 0; k < 10; ++k) ucp_worker_progress(worker);
  }
  std::printf("flood: %d endpoints\n", made);
  std::fflush(stdout);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(hold_seconds);
  while (std::chrono::steady_clock::now() < end) {
    ucp_worker_progress(worker);
    usleep(200);
  }
  // Gone without closing anything, as a killed attacker would be.
  _exit(0);
}

// The driver API of the preloaded client library, found at run time: the
// flood side of this program must run without it.
template <class F>
F driver(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

#define CHECK(call)                                                              \
  do {                                                                           \
    CUresult r_ = (call);                                                        \
    if (r_ != CUDA_SUCCESS) {                                                    \
      std::printf("FAIL steady: %s returned %d\n", #call, static_cast<int>(r_)); \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

int steady() {
  auto init = driver<decltype(&cuInit)>("cuInit");
  auto device_get = driver<decltype(&cuDeviceGet)>("cuDeviceGet");
  auto retain = driver<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
  auto set_current = driver<decltype(&cuCtxSetCurrent)>("cuCtxSetCurrent");
  auto alloc = driver<decltype(&cuMemAlloc)>("cuMemAlloc_v2");
  auto free_ = driver<decltype(&cuMemFree)>("cuMemFree_v2");
  auto htod = driver<decltype(&cuMemcpyHtoD)>("cuMemcpyHtoD_v2");
  auto dtoh = driver<decltype(&cuMemcpyDtoH)>("cuMemcpyDtoH_v2");
  if (!init || !device_get || !retain || !set_current || !alloc || !free_ || !htod || !dtoh) {
    std::printf("FAIL steady: no driver API (run with rgpu's client library preloaded)\n");
    return 1;
  }
  CHECK(init(0));
  CUdevice dev = 0;
  CHECK(device_get(&dev, 0));
  CUcontext ctx = nullptr;
  CHECK(retain(&ctx, dev));
  CHECK(set_current(ctx));
  constexpr size_t kBytes = 64 * 1024;
  CUdeviceptr d = 0;
  CHECK(alloc(&d, kBytes));
  std::printf("connected\n");
  std::fflush(stdout);
  std::string line;
  std::getline(std::cin, line);  // the flood is under way
  std::vector<unsigned char> up(kBytes), down(kBytes);
  for (int i = 0; i < 50; ++i) {
    for (size_t k = 0; k < kBytes; ++k) up[k] = static_cast<unsigned char>(k * 13 + i);
    CHECK(htod(d, up.data(), kBytes));
    CHECK(dtoh(down.data(), d, kBytes));
    if (std::memcmp(up.data(), down.data(), kBytes) != 0) {
      std::printf("FAIL steady: round trip %d changed the bytes\n", i);
      return 1;
    }
  }
  CHECK(free_(d));
  std::printf("PASS steady\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "flood" && argc == 5) return flood(argv[2], std::atoi(argv[3]), std::atof(argv[4]));
  if (mode == "steady") return steady();
  std::fprintf(stderr, "usage: flood_peer flood HOST:PORT N HOLD_S | flood_peer steady\n");
  return 2;
}
