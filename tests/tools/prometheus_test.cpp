// rgpud's /metrics scraped by a real Prometheus server: a client's copies
// come back through Prometheus's query API.
#include <nlohmann/json.hpp>

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
  {
    std::ofstream config(dir / "prometheus.yml");
    config << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
           << "scrape_configs:\n  - job_name: rgpud\n    static_configs:\n      - targets: ['" << metrics_ << "']\n";
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
  server.stop();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rgpu::test
