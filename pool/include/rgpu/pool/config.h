// The pool's settings, read from pool.toml. Every setting is described in
// docs/pool.md; this header holds the defaults.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "rgpu/common/status.h"
#include "rgpu/pool/model.h"

namespace rgpu::pool {

// How a fitting place is chosen among several.
enum class Policy {
  kBinpack,      // fill the fullest server that fits, keep others empty
  kSpread,       // use the emptiest server, spread load
  kLeastLoaded,  // lowest reported utilization and memory use
};
const char* policy_name(Policy policy);
Result<Policy> parse_policy(std::string_view text);

// Plain values; thread-compatible.
struct PoolConfig {
  Policy policy = Policy::kBinpack;
  // Whether a request of higher priority may end leases of lower priority
  // when nothing else fits.
  bool preemption = false;
  // Whether a request for several devices may be placed on several servers
  // when no one server has them all.
  bool split_across_servers = true;
  Millis queue_timeout_ms = 600'000;  // default wait in the queue; 0: forever
  Millis lease_ttl_ms = 3'600'000;    // a lease lasts this long unless renewed
  Millis heartbeat_interval_ms = 5'000;
  Millis heartbeat_timeout_ms = 15'000;  // a server silent this long leaves
  // Fair share: a tenant's weight; tenants not listed get default_weight.
  double default_weight = 1.0;
  std::map<std::string, double, std::less<>> tenant_weights;

  double weight_of(std::string_view tenant) const;
};

// Checks the relations between settings (timeout above interval, positive
// weights); parse_config calls it.
Status validate(const PoolConfig& config);

// Reads the [scheduler], [heartbeat] and [tenants.NAME] tables of a TOML
// document. Other top-level tables are left to their own readers; an unknown
// key inside these tables, a wrong type or an out-of-range value is an error
// naming the key. `where` names the source in messages.
Result<PoolConfig> parse_config(std::string_view toml_text, const std::string& where = "pool.toml");
Result<PoolConfig> load_config(const std::string& path);

}  // namespace rgpu::pool
