// rgpud's and rgpu-pool's /metrics scraped by a real Prometheus server: a
// client's copies, and the pool's state, come back through Prometheus's
// query API.
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <cmath>
#include <fstream>

#include "metrics_fixture.h"
#include "rgpu/common/metrics_text.h"

namespace rgpu::test {
namespace {

std::string find_prometheus() {
  if (const char* p = std::getenv("PROMETHEUS"); p && *p) return p;
  for (const char* p : {"/usr/bin/prometheus", "/usr/local/bin/prometheus"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

// The first sample value of an instant query's vector answer, or NAN.
double query(int port, const std::string& expr) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2);
  c.set_read_timeout(5);
  auto res = c.Get("/api/v1/query", httplib::Params{{"query", expr}}, httplib::Headers{});
  if (!res || res->status != 200) return NAN;
  auto doc = nlohmann::json::parse(res->body, nullptr, false);
  if (doc.is_discarded() || doc.value("status", "") != "success") return NAN;
  const auto& result = doc["data"]["result"];
  if (!result.is_array() || result.empty()) return NAN;
  return std::stod(result[0]["value"][1].get<std::string>());
}

using PrometheusScrape = MetricsServer;

TEST_F(PrometheusScrape, ClientCopiesShowUpInPrometheus) {
  const std::string prometheus = find_prometheus();
  if (prometheus.empty()) GTEST_SKIP() << "no prometheus binary (Debian package prometheus, or PROMETHEUS=PATH)";

  Child client;
  start_client(&client, 0.5);
  ASSERT_EQ(client.wait(std::chrono::seconds(60)), 0) << client.text;

  // The page itself first: the client's bytes, by device, slice and tenant.
  auto page = metrics::parse_text(http_get(metrics_, "/metrics"));
  ASSERT_TRUE(page.is_ok()) << page.status().message();
  double h2d = 0;
  for (const auto& s : page.value()) {
    if (s.name == "rgpu_copy_bytes_total" && s.label("direction") == "host_to_device") {
      EXPECT_EQ(s.label("device"), "0");
      EXPECT_EQ(s.label("slice"), "1");  // the best fitting free slice: the smaller one
      EXPECT_EQ(s.label("tenant"), "default");
      h2d += s.value;
    }
  }
  EXPECT_GE(h2d, 1 << 20);

  char tmpl[] = "/tmp/rgpu-prometheus-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  // An rgpu-pool beside it, with its own endpoint.
  std::ofstream(dir / "pool.key") << "prometheus-test-pool-key-0123456789abcdef\n";
  chmod((dir / "pool.key").c_str(), 0600);
  Child pool;
  ASSERT_TRUE(pool.start({std::string(RGPU_BIN_DIR) + "/rgpu-pool", "--listen", "127.0.0.1:0", "--key-file",
                          (dir / "pool.key").string(), "--metrics", "127.0.0.1:0"}));
  const std::string pool_metrics = pool.wait_line("rgpu-pool metrics on ", std::chrono::seconds(30));
  ASSERT_FALSE(pool_metrics.empty()) << pool.text;
  {
    std::ofstream config(dir / "prometheus.yml");
    config << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
           << "scrape_configs:\n  - job_name: rgpud\n    static_configs:\n      - targets: ['" << metrics_ << "']\n"
           << "  - job_name: rgpu-pool\n    static_configs:\n      - targets: ['" << pool_metrics << "']\n";
  }
  const int port = free_port();
  ASSERT_NE(port, 0);
  Child server;
  ASSERT_TRUE(server.start({prometheus, "--config.file=" + (dir / "prometheus.yml").string(),
                            "--storage.tsdb.path=" + (dir / "data").string(),
                            "--web.listen-address=127.0.0.1:" + std::to_string(port), "--log.level=warn"},
                           false));
  double seen = NAN;
  const std::string expr = "sum(rgpu_copy_bytes_total{job=\"rgpud\",direction=\"host_to_device\"})";
  for (int i = 0; i < 600 && !(seen > 0); ++i) {  // at most ~60 s: start-up, then a scrape a second
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    seen = query(port, expr);
  }
  EXPECT_EQ(seen, h2d) << "Prometheus did not report what rgpud served";
  EXPECT_EQ(query(port, "up{job=\"rgpud\"}"), 1);
  EXPECT_EQ(query(port, "rgpu_slice_memory_quota_bytes{device=\"0\",slice=\"1\"}"), 256 << 20);
  // The pool: scraped too, and its (empty) state queried back.
  double servers = NAN;
  for (int i = 0; i < 100 && std::isnan(servers); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    servers = query(port, "rgpu_pool_servers{job=\"rgpu-pool\"}");
  }
  EXPECT_EQ(servers, 0) << "Prometheus did not report the pool's server count";
  EXPECT_EQ(query(port, "up{job=\"rgpu-pool\"}"), 1);
  server.stop();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rgpu::test
