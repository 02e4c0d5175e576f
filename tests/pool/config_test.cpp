// pool.toml: every setting read, defaults kept, mistakes named.
#include <gtest/gtest.h>

#include "rgpu/pool/config.h"

namespace rgpu::pool {
namespace {

TEST(PoolConfigFile, ReadsEverySetting) {
  auto c = parse_config(R"(
[scheduler]
policy = "least-loaded"
preemption = true
split_across_servers = false
queue_timeout_s = 30
lease_ttl_s = 120.5
default_weight = 2

[heartbeat]
interval_s = 2
timeout_s = 7.5

[tenants.research]
weight = 3

[tenants.prod]
weight = 0.5

[listen]   # another reader's table: left alone
address = "0.0.0.0:7100"
)");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  const PoolConfig& p = c.value();
  EXPECT_EQ(p.policy, Policy::kLeastLoaded);
  EXPECT_TRUE(p.preemption);
  EXPECT_FALSE(p.split_across_servers);
  EXPECT_EQ(p.queue_timeout_ms, 30'000);
  EXPECT_EQ(p.lease_ttl_ms, 120'500);
  EXPECT_EQ(p.heartbeat_interval_ms, 2'000);
  EXPECT_EQ(p.heartbeat_timeout_ms, 7'500);
  EXPECT_DOUBLE_EQ(p.weight_of("research"), 3.0);
  EXPECT_DOUBLE_EQ(p.weight_of("prod"), 0.5);
  EXPECT_DOUBLE_EQ(p.weight_of("anyone"), 2.0);
}

TEST(PoolConfigFile, EmptyMeansDefaults) {
  auto c = parse_config("");
  ASSERT_TRUE(c.is_ok());
  const PoolConfig d;
  EXPECT_EQ(c.value().policy, d.policy);
  EXPECT_EQ(c.value().preemption, d.preemption);
  EXPECT_EQ(c.value().heartbeat_timeout_ms, d.heartbeat_timeout_ms);
  EXPECT_EQ(c.value().queue_timeout_ms, d.queue_timeout_ms);
}

TEST(PoolConfigFile, MistakesAreNamed) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& k : std::vector<Case>{
           {"[scheduler]\npolicy = \"fastest\"\n", "binpack, spread or least-loaded"},
           {"[scheduler]\npolicyy = \"spread\"\n", "unknown setting scheduler.policyy"},
           {"[scheduler]\npreemption = \"yes\"\n", "scheduler.preemption"},
           {"[scheduler]\nqueue_timeout_s = -1\n", "scheduler.queue_timeout_s"},
           {"[heartbeat]\ninterval_s = 10\ntimeout_s = 5\n", "longer than heartbeat.interval_s"},
           {"[tenants.x]\nweight = 0\n", "tenants.x.weight"},
           {"[tenants.x]\nshare = 1\n", "unknown setting tenants.x.share"},
           {"[tenants]\nx = 1\n", "tenants.x must be a table"},
           {"scheduler = 3\n", "scheduler must be a table"},
           {"[scheduler\n", "pool.toml:1:"},
           {"[@x]\n", "pool.toml:1:"},  // once an assertion inside toml++
           {"[scheduler]\npolicy = \"spread\"\n[tenants\xd2\x97]\n", "pool.toml:3:9: only ASCII"},
       }) {
    auto c = parse_config(k.text);
    ASSERT_FALSE(c.is_ok()) << k.text;
    EXPECT_EQ(c.status().kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(c.status().message().find(k.says), std::string::npos) << c.status().message();
  }
}

TEST(PoolConfigFile, MissingFileIsAnError) {
  EXPECT_FALSE(load_config("/nonexistent/pool.toml").is_ok());
}

}  // namespace
}  // namespace rgpu::pool
