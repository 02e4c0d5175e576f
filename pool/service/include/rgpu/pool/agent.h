// A server's link to rgpu-pool (rgpud --pool): registers the server, sends
// a heartbeat every interval, reports each leased session's end at once,
// registers again after a reconnect or when the pool forgot it, and passes
// on the pool's orders to end a lease's sessions.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rgpu/pool/model.h"

namespace rgpu::pool {

struct AgentOptions {
  std::vector<std::string> pool;  // pool instances, tried in order
  ServerInfo server;
  // The key the pool signs leases with: the registration proves it
  // (wire::sign), so that no one without it can register as this server.
  std::string key;
  std::chrono::milliseconds interval{1000};  // heartbeat period
  std::chrono::milliseconds connect_timeout{2000};
};

struct AgentHooks {
  // This server's use now, per device, and its live sessions.
  std::function<std::pair<std::vector<DeviceUse>, uint32_t>()> sample;
  // The pool ended `lease` (reason: "preempted", "expired", ...): end its
  // sessions. Called on the agent's thread.
  std::function<void(LeaseId lease, const std::string& reason)> end_lease;
};

// Runs one thread. Thread-safe: session_ended() may be called from any
// thread. Destruction stops the thread and closes the connection.
class Agent {
 public:
  virtual ~Agent() = default;
  // Queues the report that a session holding `lease` ended; sent at once.
  virtual void session_ended(LeaseId lease) = 0;
  // Whether the pool has acknowledged the current registration.
  virtual bool registered() const = 0;

  static std::unique_ptr<Agent> start(AgentOptions options, AgentHooks hooks);
};

}  // namespace rgpu::pool
