// rgpu-pool's network service: the scheduler behind a TCP listener
// speaking protocol/pool.capnp. One event-loop thread (poll) serves every
// connection; a timer tick drives heartbeat expiry, queue timeouts, lease
// renewal and the waiting clients' progress. docs/pool.md, "Running the pool".
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rgpu/common/metrics.h"
#include "rgpu/common/status.h"
#include "rgpu/pool/config.h"
#include "rgpu/pool/history.h"
#include "rgpu/protocol/auth.h"

namespace rgpu::pool::service {

struct ServiceOptions {
  std::string listen = "127.0.0.1:0";
  PoolConfig config;
  std::string key;  // the HMAC key shared with the servers; required
  // The tenants' keys (rgpu-pool --auth-file, rgpud's format): set, every
  // request must prove its tenant's key (docs/pool.md, "Clients prove their
  // tenant"); empty, any peer may ask for any tenant.
  protocol::auth::KeyRing tenants;
  size_t max_connections = 4096;
  size_t max_frame = size_t{1} << 20;  // largest message the pool reads
  int tick_ms = 100;                   // how often time is checked
  // Several pool instances over etcd (docs/pool.md, "Several pool instances
  // on etcd"): the endpoints of the shared state; empty: this instance
  // schedules alone. Pools sharing one etcd use different prefixes; each
  // instance's name must be unique among the live ones (empty: its
  // listening address).
  std::vector<std::string> etcd;
  std::string etcd_prefix = "/rgpu/pool/";
  std::string instance;
  // Set: the usage history is kept (docs/pool.md, "Usage history").
  std::optional<HistoryOptions> history;
  // Set: the pool's metrics are recorded there (docs/metrics.md, "rgpu-pool");
  // not owned, it must outlive the service.
  metrics::Registry* metrics = nullptr;
};

// Owns the listening socket and, while run() runs, every connection.
// run() is called by one thread; stop() may be called from any thread.
class Service {
 public:
  virtual ~Service() = default;
  // "host:port" the service is bound to.
  virtual std::string address() const = 0;
  // Serves until stop(); returns the reason it stopped (ok when asked to).
  virtual Status run() = 0;
  virtual void stop() = 0;

  // Binds the listener; serving starts with run().
  static Result<std::unique_ptr<Service>> open(ServiceOptions options);
};

}  // namespace rgpu::pool::service
