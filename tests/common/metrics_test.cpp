// The metrics registry and its text exposition format: what a scrape reads.
#include "rgpu/common/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <thread>

#include "rgpu/common/metrics_text.h"

namespace rgpu::metrics {
namespace {

TEST(MetricsText, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(text::escape_label_value(R"(a\b"c)" "\n" "d"), R"(a\\b\"c\nd)");
  EXPECT_EQ(text::escape_help("x\\y\n\"z\""), "x\\\\y\\n\"z\"");  // quotes stay in HELP
}

TEST(MetricsText, FormatsValues) {
  EXPECT_EQ(text::format_value(0), "0");
  EXPECT_EQ(text::format_value(0.25), "0.25");
  EXPECT_EQ(text::format_value(-3), "-3");
  EXPECT_EQ(text::format_value(HUGE_VAL), "+Inf");
  EXPECT_EQ(text::format_value(-HUGE_VAL), "-Inf");
  EXPECT_EQ(text::format_value(std::nan("")), "NaN");
  EXPECT_EQ(std::stod(text::format_value(0.1)), 0.1);
}

TEST(MetricsText, ChecksNames) {
  EXPECT_TRUE(text::valid_metric_name("rgpu_calls_total"));
  EXPECT_TRUE(text::valid_metric_name("job:rate5m"));
  EXPECT_FALSE(text::valid_metric_name("9lives"));
  EXPECT_FALSE(text::valid_metric_name("a-b"));
  EXPECT_FALSE(text::valid_metric_name(""));
  EXPECT_TRUE(text::valid_label_name("tenant"));
  EXPECT_FALSE(text::valid_label_name("__reserved"));
  EXPECT_FALSE(text::valid_label_name("a:b"));
}

TEST(Metrics, RendersCounterWithHelpTypeAndEscapedLabels) {
  Registry r;
  auto& calls = r.counter("rgpu_calls_total", "Calls executed.\nPer tenant.", {"tenant", "api"});
  calls.with({"al\"ice", "driver"}).add(3);
  calls.with({"bob", "cublas"}).add();
  const std::string page = r.render();
  EXPECT_EQ(page,
            "# HELP rgpu_calls_total Calls executed.\\nPer tenant.\n"
            "# TYPE rgpu_calls_total counter\n"
            "rgpu_calls_total{tenant=\"al\\\"ice\",api=\"driver\"} 3\n"
            "rgpu_calls_total{tenant=\"bob\",api=\"cublas\"} 1\n");
}

TEST(Metrics, RendersGaugeWithoutLabels) {
  Registry r;
  Gauge& g = r.gauge("rgpu_queue_length", "Waiting.", {}).with({});
  g.set(5);
  g.add(-1.5);
  EXPECT_EQ(r.render(), "# HELP rgpu_queue_length Waiting.\n# TYPE rgpu_queue_length gauge\nrgpu_queue_length 3.5\n");
}

TEST(Metrics, RendersHistogramBucketsCumulativeWithLe) {
  Registry r;
  Histogram& h = r.histogram("rgpu_wait_seconds", "Waits.", {"tenant"}, {0.1, 1}).with({"a"});
  h.observe(0.05);
  h.observe(0.1);  // le is inclusive
  h.observe(0.5);
  h.observe(7);
  EXPECT_EQ(r.render(),
            "# HELP rgpu_wait_seconds Waits.\n"
            "# TYPE rgpu_wait_seconds histogram\n"
            "rgpu_wait_seconds_bucket{tenant=\"a\",le=\"0.1\"} 2\n"
            "rgpu_wait_seconds_bucket{tenant=\"a\",le=\"1\"} 3\n"
            "rgpu_wait_seconds_bucket{tenant=\"a\",le=\"+Inf\"} 4\n"
            "rgpu_wait_seconds_sum{tenant=\"a\"} 7.65\n"
            "rgpu_wait_seconds_count{tenant=\"a\"} 4\n");
}

TEST(Metrics, LargeCountsStayExact) {
  Registry r;
  Counter& c = r.counter("big_total", "b", {}).with({});
  c.add((uint64_t{1} << 53) + 1);
  EXPECT_NE(r.render().find("big_total 9007199254740993\n"), std::string::npos) << r.render();
}

TEST(Metrics, SameNameSameShapeIsOneFamily) {
  Registry r;
  auto& a = r.counter("x_total", "x", {"l"});
  auto& b = r.counter("x_total", "x", {"l"});
  EXPECT_EQ(&a, &b);
  EXPECT_THROW(r.gauge("x_total", "x", {"l"}), std::logic_error);
  EXPECT_THROW(r.counter("x_total", "x", {"m"}), std::logic_error);
  EXPECT_THROW(r.counter("bad-name", "x", {}), std::logic_error);
  EXPECT_THROW(r.histogram("h", "h", {"le"}, {1}), std::logic_error);
  EXPECT_THROW(r.histogram("h2", "h", {}, {2, 1}), std::logic_error);
  EXPECT_THROW(a.with({"one", "two"}), std::logic_error);
}

TEST(Metrics, FamilyBeyondMaxSeriesFoldsIntoOther) {
  Registry r;
  auto& f = r.counter("s_total", "s", {"session"}, FamilyOptions{4});
  for (int i = 0; i < 10; ++i) f.with({std::to_string(i)}).add();
  EXPECT_LE(f.size(), 4u);
  auto samples = parse_text(r.render());
  ASSERT_TRUE(samples.is_ok());
  uint64_t total = 0, other = 0;
  for (const Sample& s : samples.value()) {
    total += static_cast<uint64_t>(s.value);
    if (s.label("session") == kOverflowValue) other = static_cast<uint64_t>(s.value);
  }
  EXPECT_EQ(total, 10u);  // nothing lost
  EXPECT_EQ(other, 7u);
}

TEST(Metrics, RemovedSeriesIsNotRendered) {
  Registry r;
  auto& f = r.gauge("g", "g", {"session"});
  f.with({"1"}).set(1);
  f.with({"2"}).set(2);
  f.remove({"1"});
  const std::string page = r.render();
  EXPECT_EQ(page.find("session=\"1\""), std::string::npos);
  EXPECT_NE(page.find("g{session=\"2\"} 2"), std::string::npos);
}

TEST(Metrics, CollectorRunsAtScrapeAndStopsWhenReset) {
  Registry r;
  int calls = 0;
  Collection c = r.collect("live_sessions", "Sessions now.", Type::kGauge, {"tenant"}, [&](Sink& out) {
    ++calls;
    out.add({"a"}, 2);
    out.add({"only", "too many"}, 9);  // a collector's mistake is skipped
  });
  EXPECT_EQ(r.render(), "# HELP live_sessions Sessions now.\n# TYPE live_sessions gauge\nlive_sessions{tenant=\"a\"} 2\n");
  EXPECT_EQ(calls, 1);
  c.reset();
  EXPECT_EQ(r.render(), "");
  EXPECT_EQ(calls, 1);
}

TEST(Metrics, CountsFromManyThreadsAddUp) {
  Registry r;
  Counter& c = r.counter("n_total", "n", {}).with({});
  Histogram& h = r.histogram("d_seconds", "d", {}, latency_buckets()).with({});
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.add();
        h.observe(0.001);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 80000u);
  const auto s = h.snapshot();
  EXPECT_EQ(s.count, 80000u);
  EXPECT_NEAR(s.sum, 80.0, 1e-6);
}

TEST(MetricsParse, ReadsBackWhatTheRegistryWrites) {
  Registry r;
  r.counter("a_total", "a", {"x", "y"}).with({"q\"uo\\te\nd", ""}).add(42);
  r.histogram("h_seconds", "h", {}, {0.5}).with({}).observe(0.25);
  auto samples = parse_text(r.render() + "# a comment\n\nplain 1.5e3 1700000000000\n");
  ASSERT_TRUE(samples.is_ok()) << samples.status().message();
  const auto& s = samples.value();
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(s[0].name, "a_total");
  EXPECT_EQ(s[0].label("x"), "q\"uo\\te\nd");
  EXPECT_EQ(s[0].label("y"), "");
  EXPECT_EQ(s[0].value, 42);
  EXPECT_EQ(s[1].name, "h_seconds_bucket");
  EXPECT_EQ(s[1].label("le"), "0.5");
  EXPECT_EQ(s[2].label("le"), "+Inf");
  EXPECT_EQ(s[3].name, "h_seconds_sum");
  EXPECT_EQ(s[3].value, 0.25);
  EXPECT_EQ(s[5].name, "plain");
  EXPECT_EQ(s[5].value, 1500);
}

TEST(MetricsParse, RejectsMalformedLines) {
  for (const char* page : {"{x=\"1\"} 1\n", "m{x=1} 1\n", "m{x=\"1} 1\n", "m 12abc\n", "m\n", "m{x=\"\\", "m{=\"a\"} 1"}) {
    EXPECT_FALSE(parse_text(page).is_ok()) << page;
  }
  EXPECT_FALSE(parse_text("a 1\nb 2\nc 3\n", 2).is_ok());
}

}  // namespace
}  // namespace rgpu::metrics
