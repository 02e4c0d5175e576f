// rgpud's and rgpu-pool's /metrics scraped by a real Prometheus server: a
// client's copies, and the pool's state, come back through Prometheus's
// query API.
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

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

// Whether Prometheus evaluates `expr` (an instant query) without error.
bool evaluates(int port, const std::string& expr, std::string* error) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2);
  c.set_read_timeout(5);
  auto res = c.Get("/api/v1/query", httplib::Params{{"query", expr}}, httplib::Headers{});
  if (!res) {
    *error = "no answer";
    return false;
  }
  auto doc = nlohmann::json::parse(res->body, nullptr, false);
  if (res->status == 200 && !doc.is_discarded() && doc.value("status", "") == "success") return true;
  *error = res->body;
  return false;
}

// An rgpu-pool with its own /metrics and, given a Prometheus binary, a
// Prometheus scraping it and rgpud every second, until the object goes.
struct Scrape {
  fs::path dir;
  Child pool;
  Child prometheus;
  std::string pool_metrics;  // host:port
  int port = 0;              // Prometheus's
  void stop() {
    prometheus.stop();
    pool.stop();
    if (!dir.empty()) fs::remove_all(dir);
    dir.clear();
  }
  ~Scrape() { stop(); }
};

::testing::AssertionResult start_scrape(const std::string& prometheus, const std::string& rgpud_metrics, Scrape* s) {
  char tmpl[] = "/tmp/rgpu-prometheus-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return ::testing::AssertionFailure() << "mkdtemp";
  s->dir = tmpl;
  std::ofstream(s->dir / "pool.key") << "prometheus-test-pool-key-0123456789abcdef\n";
  chmod((s->dir / "pool.key").c_str(), 0600);
  if (!s->pool.start({std::string(RGPU_BIN_DIR) + "/rgpu-pool", "--listen", "127.0.0.1:0", "--key-file",
                      (s->dir / "pool.key").string(), "--metrics", "127.0.0.1:0"})) {
    return ::testing::AssertionFailure() << "rgpu-pool did not start";
  }
  s->pool_metrics = s->pool.wait_line("rgpu-pool metrics on ", std::chrono::seconds(30));
  if (s->pool_metrics.empty()) return ::testing::AssertionFailure() << s->pool.text;
  if (prometheus.empty()) return ::testing::AssertionSuccess();
  {
    std::ofstream config(s->dir / "prometheus.yml");
    config << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
           << "scrape_configs:\n  - job_name: rgpud\n    static_configs:\n      - targets: ['" << rgpud_metrics
           << "']\n"
           << "  - job_name: rgpu-pool\n    static_configs:\n      - targets: ['" << s->pool_metrics << "']\n";
  }
  s->port = free_port();
  if (s->port == 0) return ::testing::AssertionFailure() << "no free port";
  if (!s->prometheus.start({prometheus, "--config.file=" + (s->dir / "prometheus.yml").string(),
                            "--storage.tsdb.path=" + (s->dir / "data").string(),
                            "--web.listen-address=127.0.0.1:" + std::to_string(s->port), "--log.level=warn"},
                           false)) {
    return ::testing::AssertionFailure() << "prometheus did not start";
  }
  std::string error;
  for (int i = 0; i < 600; ++i) {  // at most ~60 s for its start-up
    if (evaluates(s->port, "up", &error)) return ::testing::AssertionSuccess();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ::testing::AssertionFailure() << "prometheus does not answer: " << error;
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

  Scrape scrape;
  ASSERT_TRUE(start_scrape(prometheus, metrics_, &scrape));
  const int port = scrape.port;
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
}

// Every query of the Grafana dashboard (packaging/grafana/rgpu-dashboard.json)
// names only metrics that rgpud's or rgpu-pool's page declares, and
// Prometheus, scraping both, evaluates each without error.
TEST_F(PrometheusScrape, TheDashboardQueriesWhatTheEndpointsServe) {
  std::ifstream in(RGPU_DASHBOARD);
  ASSERT_TRUE(in) << RGPU_DASHBOARD;
  const auto dashboard = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(dashboard.is_discarded()) << "the dashboard is not JSON";
  std::vector<std::string> exprs;
  for (const auto& panel : dashboard.at("panels")) {
    if (panel.value("type", "") == "row") continue;
    ASSERT_TRUE(panel.contains("targets") && !panel["targets"].empty()) << panel.dump();
    for (const auto& t : panel["targets"]) exprs.push_back(t.at("expr").get<std::string>());
  }
  ASSERT_GE(exprs.size(), 20u);

  Child client;  // sessions and calls to show
  start_client(&client, 0.5);
  ASSERT_EQ(client.wait(std::chrono::seconds(60)), 0) << client.text;
  Scrape scrape;
  ASSERT_TRUE(start_scrape("", metrics_, &scrape));
  std::set<std::string> declared;
  for (const std::string& page : {http_get(metrics_, "/metrics"), http_get(scrape.pool_metrics, "/metrics")}) {
    std::istringstream lines(page);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind("# TYPE ", 0) == 0) declared.insert(line.substr(7, line.find(' ', 7) - 7));
    }
  }
  const std::regex name("rgpu_[a-z_]+");
  for (const std::string& e : exprs) {
    for (auto it = std::sregex_iterator(e.begin(), e.end(), name); it != std::sregex_iterator(); ++it) {
      std::string metric = it->str();
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        const std::string sfx = suffix;
        if (metric.size() > sfx.size() && metric.compare(metric.size() - sfx.size(), sfx.size(), sfx) == 0 &&
            declared.count(metric.substr(0, metric.size() - sfx.size()))) {
          metric.resize(metric.size() - sfx.size());
        }
      }
      EXPECT_TRUE(declared.count(metric)) << metric << " (in " << e << ") is on neither page";
    }
  }

  const std::string prometheus = find_prometheus();
  if (prometheus.empty()) GTEST_SKIP() << "no prometheus binary (Debian package prometheus, or PROMETHEUS=PATH)";
  scrape.stop();
  ASSERT_TRUE(start_scrape(prometheus, metrics_, &scrape));
  // Grafana's variables as "All" would set them.
  auto grafana = [](std::string e) {
    for (const auto& [var, value] : {std::pair<std::string, std::string>{"$__rate_interval", "1m"},
                                     {"$server", ".*"}, {"$pool", ".*"}}) {
      for (size_t at = e.find(var); at != std::string::npos; at = e.find(var)) e.replace(at, var.size(), value);
    }
    return e;
  };
  for (const std::string& e : exprs) {
    std::string error;
    EXPECT_TRUE(evaluates(scrape.port, grafana(e), &error)) << e << ": " << error;
  }
}

}  // namespace
}  // namespace rgpu::test
