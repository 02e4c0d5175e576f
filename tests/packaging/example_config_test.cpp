// The example configuration shipped in packaging/ is read by the very
// readers rgpud and rgpu-pool use: as shipped (it must change nothing: every
// value is the default) and with its "#> " example lines switched on.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "config_file.h"
#include "rgpu/pool/config.h"
#include "rgpu/pool/history.h"

namespace rgpu {
namespace {

std::string read(const std::string& name) {
  std::ifstream in(std::string(RGPU_PACKAGING_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The file with its example lines ("#> KEY = ...") made real.
std::string with_examples(const std::string& text) {
  std::istringstream in(text);
  std::string out, line;
  while (std::getline(in, line)) out += (line.rfind("#> ", 0) == 0 ? line.substr(3) : line) + "\n";
  return out;
}

// The keys set on active lines, as "table.key" (or "key" at the top).
std::set<std::string> keys(const std::string& text) {
  std::istringstream in(text);
  std::set<std::string> out;
  std::string line, table;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      table = line.substr(line.find_first_not_of('['), line.find(']') - line.find_first_not_of('['));
      continue;
    }
    const size_t eq = line.find(" =");
    if (eq != std::string::npos) out.insert((table.empty() ? "" : table + ".") + line.substr(0, eq));
  }
  return out;
}

TEST(ExampleConfig, PoolTomlIsEveryDefault) {
  const std::string text = read("pool.toml");
  auto c = pool::parse_config(text, "packaging/pool.toml");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  const pool::PoolConfig d;
  EXPECT_EQ(c.value().policy, d.policy);
  EXPECT_EQ(c.value().preemption, d.preemption);
  EXPECT_EQ(c.value().split_across_servers, d.split_across_servers);
  EXPECT_EQ(c.value().queue_timeout_ms, d.queue_timeout_ms);
  EXPECT_EQ(c.value().lease_ttl_ms, d.lease_ttl_ms);
  EXPECT_EQ(c.value().default_weight, d.default_weight);
  EXPECT_EQ(c.value().heartbeat_interval_ms, d.heartbeat_interval_ms);
  EXPECT_EQ(c.value().heartbeat_timeout_ms, d.heartbeat_timeout_ms);
  EXPECT_TRUE(c.value().tenant_weights.empty());

  auto h = pool::parse_history_config(text, "packaging/pool.toml");
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  const pool::HistoryOptions hd;
  EXPECT_EQ(h.value().path, "/var/lib/rgpu-pool/history.jsonl");
  EXPECT_EQ(h.value().max_events, hd.max_events);
  EXPECT_EQ(h.value().max_file_bytes, hd.max_file_bytes);
  EXPECT_EQ(h.value().fsync_interval_ms, hd.fsync_interval_ms);
  EXPECT_EQ(h.value().sample_interval_ms, hd.sample_interval_ms);

  // Every setting the readers know is present (a new one must be added to
  // the example, with its comment).
  const std::set<std::string> want = {"scheduler.policy", "scheduler.preemption", "scheduler.split_across_servers",
                                      "scheduler.queue_timeout_s", "scheduler.lease_ttl_s", "scheduler.default_weight",
                                      "heartbeat.interval_s", "heartbeat.timeout_s", "history.file",
                                      "history.memory_events", "history.max_file_mb", "history.fsync_interval_s",
                                      "history.sample_interval_s", "tenants.research.weight", "tenants.prod.weight"};
  EXPECT_EQ(keys(with_examples(text)), want);
}

TEST(ExampleConfig, PoolTomlExamplesParse) {
  auto c = pool::parse_config(with_examples(read("pool.toml")), "packaging/pool.toml");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c.value().weight_of("research"), 3.0);
  EXPECT_EQ(c.value().weight_of("prod"), 1.0);
}

TEST(ExampleConfig, HistoryTableRefusesWhatItDoesNotKnow) {
  EXPECT_FALSE(pool::parse_history_config("[history]\nfiel = \"x\"\n").is_ok());
  EXPECT_FALSE(pool::parse_history_config("[history]\nmax_file_mb = 0\n").is_ok());
  EXPECT_FALSE(pool::parse_history_config("[history]\nfile = 3\n").is_ok());
  EXPECT_FALSE(pool::parse_history_config("history = 3\n").is_ok());
  auto h = pool::parse_history_config("[history]\nfsync_interval_s = 0.25\nmax_file_mb = 2\n");
  ASSERT_TRUE(h.is_ok());
  EXPECT_EQ(h.value().fsync_interval_ms, 250);
  EXPECT_EQ(h.value().max_file_bytes, 2u << 20);
  EXPECT_EQ(h.value().path, "");  // no [history] file: memory only
}

TEST(ExampleConfig, RgpudTomlChangesNothing) {
  const std::string text = read("rgpud.toml");
  auto c = server::parse_config(text, "packaging/rgpud.toml");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c.value().device, "auto");
  EXPECT_EQ(c.value().session_memory, 0u);
  EXPECT_FALSE(c.value().cpu_devices.has_value());
  EXPECT_FALSE(c.value().max_sessions_per_slice.has_value());
  EXPECT_TRUE(c.value().slices.empty());
}

TEST(ExampleConfig, RgpudTomlExamplesParse) {
  const std::string text = with_examples(read("rgpud.toml"));
  auto c = server::parse_config(text, "packaging/rgpud.toml");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c.value().cpu_devices, 2u);
  EXPECT_EQ(c.value().max_sessions_per_slice, 2u);
  // The slices line as written, and the [[cut]] table as its --slices text.
  const std::set<std::string> slices(c.value().slices.begin(), c.value().slices.end());
  EXPECT_EQ(slices, (std::set<std::string>{"0:40G@0.5,20G@0.25,20G@0.25", "1:42949672960@0.500000,42949672960@0.500000"}));
  const std::set<std::string> want = {"device", "cpu-devices", "session-memory", "max-sessions-per-slice", "slices",
                                      "cut.device", "cut.slices"};
  EXPECT_EQ(keys(text), want);
}

}  // namespace
}  // namespace rgpu
