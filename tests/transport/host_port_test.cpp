// split_host_port: accepted and rejected forms.
#include <gtest/gtest.h>

#include "rgpu/transport/transport.h"

namespace rgpu::transport {
namespace {

TEST(SplitHostPort, AcceptsHostPortForms) {
  std::string host;
  uint16_t port = 1;
  ASSERT_TRUE(split_host_port("127.0.0.1:5000", &host, &port));
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 5000);
  ASSERT_TRUE(split_host_port("localhost:0", &host, &port));
  EXPECT_EQ(host, "localhost");
  EXPECT_EQ(port, 0);
  ASSERT_TRUE(split_host_port("[::1]:5000", &host, &port));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 5000);
  ASSERT_TRUE(split_host_port("gpu-node-7.example:65535", &host, &port));
  EXPECT_EQ(host, "gpu-node-7.example");
  EXPECT_EQ(port, 65535);
}

TEST(SplitHostPort, RejectsMalformed) {
  std::string host = "unchanged";
  uint16_t port = 7;
  for (const char* bad : {"", "localhost", ":5000", "host:", "host:65536", "host:-1", "host:12a",
                          "host:123456", "::1:5000", "[::1]5000", "[::1]:", "[]:5000", "[::1:5000",
                          "host :5000", "host:+5"}) {
    EXPECT_FALSE(split_host_port(bad, &host, &port)) << bad;
  }
  EXPECT_EQ(host, "unchanged");
  EXPECT_EQ(port, 7);
}

}  // namespace
}  // namespace rgpu::transport
