// The /metrics endpoint over real loopback HTTP: what it serves, what it
// refuses, and that a bad request leaves it serving.
#include "rgpu/common/metrics_http.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <map>
#include <thread>
#include <vector>

namespace rgpu::metrics {
namespace {

class MetricsHttp : public ::testing::Test {
 protected:
  // A client that writes to a connection the server has closed gets EPIPE,
  // not a signal that ends the test.
  static void SetUpTestSuite() { std::signal(SIGPIPE, SIG_IGN); }
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

// A connection from `source` (a loopback address) to 127.0.0.1:port that has
// sent `text`; -1 when it cannot be made.
int connect_from(const char* source, int port, const std::string& text) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0 ||
      send(fd, text.data(), text.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(text.size())) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

// Whether the server has closed `fd` (end of stream or reset), waiting at
// most `ms`.
bool closed_by_server(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, ms) <= 0) return false;
  char buf[256];
  const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN);
}

// The slow-headers attack: a request that arrives a byte at a time is cut
// at its deadline, although bytes keep coming, and scrapes go on meanwhile.
TEST_F(MetricsHttp, ATrickledRequestIsCutAtItsDeadline) {
  HttpOptions options;
  options.request_timeout = std::chrono::milliseconds(600);
  auto started = HttpExporter::start(registry_, "127.0.0.1:0", options);
  ASSERT_TRUE(started.is_ok());
  std::string host;
  int port = 0;
  ASSERT_TRUE(split_http_address(started.value()->address(), &host, &port));
  const int fd = connect_from("127.0.0.1", port, "GET /metrics HTTP/1.1\r\n");
  ASSERT_GE(fd, 0);
  const auto begin = std::chrono::steady_clock::now();
  bool cut = false;
  for (int i = 0; i < 40 && !cut; ++i) {  // 4 s at most
    send(fd, "X", 1, MSG_NOSIGNAL);
    cut = closed_by_server(fd, 100);
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  close(fd);
  EXPECT_TRUE(cut) << "a request trickled for 4 s was not cut";
  EXPECT_GE(took, 0.5) << "cut before its deadline";
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(5);
  auto res = c.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

// Connections past the limits make room: the oldest idle one of the same
// address, or of all, is closed; a scrape always gets in.
TEST_F(MetricsHttp, ConnectionsPastTheLimitsCloseTheOldestIdle) {
  HttpOptions options;
  options.max_connections = 8;
  options.max_connections_per_address = 3;
  auto started = HttpExporter::start(registry_, "127.0.0.1:0", options);
  ASSERT_TRUE(started.is_ok());
  std::string host;
  int port = 0;
  ASSERT_TRUE(split_http_address(started.value()->address(), &host, &port));
  std::vector<int> held;
  std::vector<std::string> sources;
  for (const char* source : {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}) {
    for (int i = 0; i < 5; ++i) {
      const int fd = connect_from(source, port, "GET /metrics HTTP/1.1\r\n");
      ASSERT_GE(fd, 0);
      held.push_back(fd);
      sources.push_back(source);
      // In order: the server sees each before the next.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  size_t open = 0;
  std::map<std::string, size_t> per_source;
  for (size_t i = 0; i < held.size(); ++i) {
    if (!closed_by_server(held[i], 0)) {
      ++open;
      ++per_source[sources[i]];
    }
  }
  EXPECT_LE(open, 8u);
  for (const auto& [source, n] : per_source) EXPECT_LE(n, 3u) << source;
  // The newest ones are what is left: the last address's three.
  EXPECT_EQ(per_source["127.0.0.5"], 3u);
  for (int i = 0; i < 10; ++i) {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(5);
    auto res = c.Get("/metrics");
    ASSERT_TRUE(res) << "scrape " << i;
    EXPECT_EQ(res->status, 200);
  }
  for (int fd : held) close(fd);
}

// Kept-alive requests, several sent at once, are answered in order on the
// connection; one that announces a body is refused and the connection ends.
TEST_F(MetricsHttp, PipelinedRequestsAreAnsweredInOrder) {
  const int fd = connect_from("127.0.0.1", port_,
                              "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n"
                              "HEAD /metrics HTTP/1.1\r\nHost: a\r\n\r\n"
                              "GET /nothing HTTP/1.1\r\nHost: a\r\n\r\n"
                              "POST /metrics HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody");
  ASSERT_GE(fd, 0);
  std::string got;
  for (int i = 0; i < 50; ++i) {  // until the server closes, 5 s at most
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const std::string body = registry_.render();
  const size_t a = got.find("HTTP/1.1 200 OK\r\n");
  const size_t b = got.find("HTTP/1.1 200 OK\r\n", a + 1);
  const size_t c = got.find("HTTP/1.1 404 Not Found\r\n");
  const size_t d = got.find("HTTP/1.1 413 Payload Too Large\r\n");
  ASSERT_NE(a, std::string::npos) << got;
  ASSERT_NE(b, std::string::npos) << got;
  ASSERT_NE(c, std::string::npos) << got;
  ASSERT_NE(d, std::string::npos) << got;
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_LT(c, d);
  // The GET carries the registry's text, the HEAD only its length.
  EXPECT_EQ(got.substr(a, b - a).find(body), got.substr(a, b - a).size() - body.size());
  EXPECT_NE(got.substr(b, c - b).find("Content-Length: " + std::to_string(body.size())), std::string::npos);
  EXPECT_EQ(got.substr(b, c - b).find("t_requests_total"), std::string::npos);
  EXPECT_NE(got.substr(d).find("Connection: close"), std::string::npos);
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
