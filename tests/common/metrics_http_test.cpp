// The /metrics endpoint over real loopback HTTP: what it serves, what it
// refuses, and that a bad request leaves it serving.
#include "rgpu/common/metrics_http.h"

#include <gtest/gtest.h>
#include <httplib.h>

namespace rgpu::metrics {
namespace {

class MetricsHttp : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_.counter("t_requests_total", "Requests.", {"path"}).with({"/a"}).add(2);
    auto exporter = HttpExporter::start(registry_, "127.0.0.1:0");
    ASSERT_TRUE(exporter.is_ok()) << exporter.status().message();
    exporter_ = std::move(exporter.value());
    std::string host;
    ASSERT_TRUE(split_http_address(exporter_->address(), &host, &port_));
    ASSERT_EQ(host, "127.0.0.1");
    ASSERT_NE(port_, 0);
  }
  httplib::Client client() {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(5);
    c.set_read_timeout(5);
    return c;
  }

  Registry registry_;
  std::unique_ptr<HttpExporter> exporter_;
  int port_ = 0;
};

TEST_F(MetricsHttp, ServesTheRegistryText) {
  auto c = client();
  auto res = c.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, registry_.render());
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  // A later scrape sees later values.
  registry_.counter("t_requests_total", "Requests.", {"path"}).with({"/a"}).add(5);
  res = c.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_NE(res->body.find("t_requests_total{path=\"/a\"} 7\n"), std::string::npos) << res->body;
}

TEST_F(MetricsHttp, EverythingElseIsRefused) {
  auto c = client();
  auto res = c.Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(res->body.find("t_requests_total"), std::string::npos);
  res = c.Get("/metrics/../etc");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  res = c.Post("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405);
  res = c.Post("/metrics", std::string(1 << 20, 'x'), "text/plain");  // no body is taken
  if (res) {
    EXPECT_GE(res->status, 400);
  }
  // A header past the bound is refused, and the endpoint goes on serving.
  httplib::Headers big = {{"X-Big", std::string(64 * 1024, 'y')}};
  res = c.Get("/metrics", big);
  if (res) {
    EXPECT_GE(res->status, 400);
  }
  res = client().Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(MetricsHttpStart, BadAddressesAreErrors) {
  Registry r;
  for (const char* bad : {"nohost", "127.0.0.1:", "127.0.0.1:99999", "::1:80", "127.0.0.1:x"}) {
    EXPECT_FALSE(HttpExporter::start(r, bad).is_ok()) << bad;
  }
  auto first = HttpExporter::start(r, "127.0.0.1:0");
  ASSERT_TRUE(first.is_ok());
  auto again = HttpExporter::start(r, first.value()->address());  // taken
  EXPECT_FALSE(again.is_ok());
}

TEST(MetricsHttpAddress, SplitsHostAndPort) {
  std::string host;
  int port = 0;
  ASSERT_TRUE(split_http_address("[::1]:9400", &host, &port));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 9400);
  ASSERT_TRUE(split_http_address("0.0.0.0:1", &host, &port));
  EXPECT_EQ(host, "0.0.0.0");
  EXPECT_FALSE(split_http_address(":80", &host, &port));
}

}  // namespace
}  // namespace rgpu::metrics
