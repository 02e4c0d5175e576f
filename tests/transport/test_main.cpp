// Test entry point. "--transport-child ADDRESS PAYLOAD_BYTES" turns the binary
// into a UCX client that streams payloads to ADDRESS until it is killed; the
// peer-death tests start it as a separate process.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "rgpu/transport/transport.h"

namespace {

int run_child(const std::string& address, size_t payload_bytes) {
  using namespace rgpu::transport;
  auto transport = make_ucx_transport();
  if (!transport.is_ok()) {
    std::fprintf(stderr, "child: %s\n", transport.status().to_string().c_str());
    return 2;
  }
  auto conn = transport.value()->connect(address, {}, std::chrono::seconds(10));
  if (!conn.is_ok()) {
    std::fprintf(stderr, "child: %s\n", conn.status().to_string().c_str());
    return 3;
  }
  std::vector<std::byte> payload(payload_bytes, std::byte{0x5a});
  const char header[] = "child-stream";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  // Streams until killed; the bound only matters when the parent fails to kill it.
  while (std::chrono::steady_clock::now() < deadline) {
    rgpu::Status st = conn.value()->send(
        {reinterpret_cast<const std::byte*>(header), sizeof(header)}, payload);
    if (!st.is_ok()) return 4;
  }
  return 5;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--transport-child") == 0) {
    return run_child(argv[2], std::strtoull(argv[3], nullptr, 10));
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
