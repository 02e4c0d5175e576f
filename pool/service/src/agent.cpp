// The server's link to the pool: one thread, one TCP connection.
#include "rgpu/pool/agent.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <exception>
#include <mutex>
#include <random>
#include <thread>

#include "rgpu/common/log.h"
#include "rgpu/pool/clock.h"
#include "rgpu/pool/net.h"
#include "rgpu/pool/wire.h"

namespace rgpu::pool {
namespace {

using poolwire::PoolMessage;
using SteadyClock = std::chrono::steady_clock;

uint64_t random_boot_id() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

class AgentImpl final : public Agent {
 public:
  AgentImpl(AgentOptions options, AgentHooks hooks)
      : options_(std::move(options)), hooks_(std::move(hooks)), boot_(random_boot_id()) {
    wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    thread_ = std::thread([this] { run(); });
  }
  ~AgentImpl() override {
    stop_ = true;
    wake();
    thread_.join();
    close(wake_);
  }

  void session_ended(LeaseId lease) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ended_.push_back(lease);
    }
    wake();
  }
  bool registered() const override { return registered_; }

 private:
  void wake() {
    const uint64_t one = 1;
    (void)!write(wake_, &one, sizeof one);
  }

  void run() {
    auto backoff = std::chrono::milliseconds(100);
    bool warned = false;
    while (!stop_) {
      auto channel = net::Channel::connect(options_.pool, options_.connect_timeout);
      if (!channel.is_ok()) {
        if (!warned) RGPU_WARN("pool unreachable: %s; retrying", channel.status().message().c_str());
        warned = true;
        sleep_for(backoff);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
        continue;
      }
      warned = false;
      backoff = std::chrono::milliseconds(100);
      const Status why = serve(*channel.value());
      registered_ = false;
      if (stop_) break;
      RGPU_WARN("pool connection lost address=%s: %s; reconnecting", channel.value()->address().c_str(),
                why.message().c_str());
      sleep_for(std::chrono::milliseconds(500));
    }
  }

  void sleep_for(std::chrono::milliseconds d) {
    pollfd p{wake_, POLLIN, 0};
    poll(&p, 1, static_cast<int>(d.count()));
    drain_wake();
  }

  void drain_wake() {
    uint64_t v;
    while (read(wake_, &v, sizeof v) > 0) {
    }
  }

  Status send_register(net::Channel& ch) {
    capnp::MallocMessageBuilder b;
    auto r = b.initRoot<PoolMessage>().initRegister();
    wire::write(r, options_.server);
    r.setBootId(boot_);
    wire::sign(r, options_.key, SystemClock().now());
    return ch.send(b);
  }

  Status send_heartbeat(net::Channel& ch) {
    auto [use, sessions] = hooks_.sample ? hooks_.sample() : std::pair<std::vector<DeviceUse>, uint32_t>{};
    capnp::MallocMessageBuilder b;
    auto h = b.initRoot<PoolMessage>().initHeartbeat();
    auto list = h.initUse(static_cast<unsigned>(use.size()));
    for (size_t i = 0; i < use.size(); ++i) {
      list[static_cast<unsigned>(i)].setIndex(use[i].index);
      list[static_cast<unsigned>(i)].setMemoryUsedBytes(use[i].memory_used_bytes);
      list[static_cast<unsigned>(i)].setUtilization(static_cast<float>(use[i].utilization));
    }
    h.setSessions(sessions);
    return ch.send(b);
  }

  // One connection's life: register, then heartbeats, reports and orders.
  Status serve(net::Channel& ch) {
    if (Status s = send_register(ch); !s.is_ok()) return s;
    auto next_beat = SteadyClock::now() + options_.interval;
    while (!stop_) {
      std::deque<LeaseId> ended;
      {
        std::lock_guard<std::mutex> lock(mu_);
        ended.swap(ended_);
      }
      for (LeaseId l : ended) {
        capnp::MallocMessageBuilder b;
        b.initRoot<PoolMessage>().setSessionEnded(l);
        if (Status s = ch.send(b); !s.is_ok()) {
          std::lock_guard<std::mutex> lock(mu_);
          ended_.insert(ended_.begin(), l);  // told after the reconnect
          return s;
        }
      }
      if (SteadyClock::now() >= next_beat) {
        if (Status s = send_heartbeat(ch); !s.is_ok()) return s;
        next_beat = SteadyClock::now() + options_.interval;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next_beat - SteadyClock::now());
      pollfd fds[2] = {{wake_, POLLIN, 0}, {ch.fd(), POLLIN, 0}};
      poll(fds, 2, static_cast<int>(std::max<int64_t>(0, left.count())));
      drain_wake();
      if (!(fds[1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      while (true) {
        auto m = ch.receive(std::chrono::milliseconds(0));
        if (!m.is_ok()) return m.status();
        if (!m.value()) break;
        if (Status s = on_message(ch, m.value()->root()); !s.is_ok()) return s;
      }
    }
    return Status();
  }

  Status on_message(net::Channel& ch, PoolMessage::Reader m) {
    try {
      switch (m.which()) {
        case PoolMessage::REGISTERED:
          if (!registered_) RGPU_INFO("registered with pool address=%s id=%s", ch.address().c_str(),
                                      options_.server.id.c_str());
          registered_ = true;
          return Status();
        case PoolMessage::END_SESSION: {
          // Only the pool's own orders end sessions: one rewritten or made
          // up on the path is logged and ignored.
          auto end = m.getEndSession();
          if (Status s = wire::verify(end, options_.key, options_.server.id, SystemClock().now()); !s.is_ok()) {
            RGPU_WARN("pool order ignored lease=%llu peer=%s reason=\"%s\"",
                      static_cast<unsigned long long>(end.getLeaseId()), ch.address().c_str(), s.message().c_str());
            return Status();
          }
          auto reason = wire::read_text(end.getReason(), "reason");
          if (hooks_.end_lease) hooks_.end_lease(end.getLeaseId(), reason.is_ok() ? reason.value() : "?");
          return Status();
        }
        case PoolMessage::ERROR: {
          auto text = wire::read_text(m.getError().getMessage(), "error", 4096);
          if (m.getError().getCode() == poolwire::Error::Code::UNKNOWN_SERVER) {
            RGPU_WARN("pool forgot this server (%s); registering again", text.is_ok() ? text.value().c_str() : "");
            registered_ = false;
            return send_register(ch);
          }
          return failed("the pool refused this server: " + (text.is_ok() ? text.value() : std::string("?")));
        }
        default:
          return Status();
      }
    } catch (const std::exception& e) {
      return invalid_argument(std::string("malformed message from the pool: ") + e.what());
    }
  }

  const AgentOptions options_;
  const AgentHooks hooks_;
  const uint64_t boot_;
  int wake_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<bool> registered_{false};
  std::mutex mu_;
  std::deque<LeaseId> ended_;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<Agent> Agent::start(AgentOptions options, AgentHooks hooks) {
  return std::make_unique<AgentImpl>(std::move(options), std::move(hooks));
}

}  // namespace rgpu::pool
