// The pool's client side: submit, wait with progress, hold, release.
#include "rgpu/pool/client.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <set>

#include "rgpu/common/request_text.h"
#include "rgpu/pool/clock.h"
#include "rgpu/pool/lease_token.h"
#include "rgpu/pool/wire.h"
#include "rgpu/protocol/auth.h"

namespace rgpu::pool::client {

using poolwire::PoolMessage;

// Longest wait reason shown; a longer one is left out.
constexpr size_t kMaxWhy = 1024;

Result<Held> acquire(const AcquireOptions& options) {
  if (Status s = validate(options.request); !s.is_ok()) return s;
  auto channel = net::Channel::connect(options.pool, options.connect_timeout);
  if (!channel.is_ok()) return channel.status();
  Held held;
  held.channel = std::move(channel.value());
  {
    capnp::MallocMessageBuilder b;
    auto r = b.initRoot<PoolMessage>().initSubmit();
    wire::write(r, options.request);
    r.setProgram(options.program.substr(0, wire::kMaxName));
    r.setHostname(options.hostname.substr(0, wire::kMaxName));
    if (!options.secret.empty()) {
      if (Status s = wire::sign(r, options.request, options.secret, SystemClock().now()); !s.is_ok()) return s;
    }
    if (Status s = held.channel->send(b); !s.is_ok()) return s;
  }
  // The pool answers within its own timeout; past that (plus slack for a
  // slow pool) the client stops waiting by itself.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.request.timeout_ms + 10'000);
  while (true) {
    if (options.request.timeout_ms > 0 && std::chrono::steady_clock::now() > deadline) {
      return failed("the pool did not answer within the request's timeout of " +
                    std::to_string(options.request.timeout_ms / 1000) + " s");
    }
    auto m = held.channel->receive(std::chrono::milliseconds(1000));
    if (!m.is_ok()) return m.status();
    if (!m.value()) continue;
    try {
      auto root = m.value()->root();
      switch (root.which()) {
        case PoolMessage::QUEUED:
          if (options.on_queued) {
            auto q = root.getQueued();
            QueueNotice n{q.getAhead(), q.getWaitedMs(), {}};
            auto why = wire::read_text(q.getWhy(), "why", kMaxWhy);  // shown on a terminal: printable only
            if (why.is_ok()) n.why = std::move(why.value());
            options.on_queued(n);
          }
          break;
        case PoolMessage::GRANTED: {
          auto g = root.getGranted();
          // The token is lines of text; rgpud verifies it, the client only carries it.
          auto raw = g.getToken();
          if (raw.size() > kMaxLeaseToken) return invalid_argument("the pool's lease token is over 16 KiB");
          Result<std::string> token = std::string(raw.cStr(), raw.size());
          auto placement = wire::read_placement(g.getPlacement());
          if (!placement.is_ok()) return placement.status();
          held.id = g.getLeaseId();
          held.token = std::move(token.value());
          held.placement = std::move(placement.value());
          held.waited_ms = g.getWaitedMs();
          return held;
        }
        case PoolMessage::ERROR: {
          auto e = root.getError();
          auto text = wire::read_text(e.getMessage(), "error", 4096);
          const std::string why = text.is_ok() ? text.value() : "(unreadable)";
          if (e.getCode() == poolwire::Error::Code::TIMED_OUT) {
            const Millis t = options.request.timeout_ms;
            return failed("timed out in the pool's queue" +
                          (t > 0 ? " after " + std::to_string(t / 1000) + " s" : std::string()) + ": " + why);
          }
          return invalid_argument("the pool refused the request: " + why);
        }
        default:
          break;  // nothing else is meant for a waiting client
      }
    } catch (const std::exception& e) {
      return invalid_argument(std::string("malformed message from the pool: ") + e.what());
    }
  }
}

void release(Held& held) {
  if (!held.channel) return;
  capnp::MallocMessageBuilder b;
  b.initRoot<PoolMessage>().setRelease(held.id);
  (void)held.channel->send(b);
  held.channel.reset();
}

std::optional<std::string> ended(Held& held) {
  if (!held.channel) return std::nullopt;
  while (true) {
    auto m = held.channel->receive(std::chrono::milliseconds(0));
    if (!m.is_ok()) return std::nullopt;  // the pool went away; the lease is the servers' to judge now
    if (!m.value()) return std::nullopt;
    try {
      auto root = m.value()->root();
      if (root.which() == PoolMessage::LEASE_ENDED && root.getLeaseEnded().getLeaseId() == held.id) {
        auto reason = wire::read_text(root.getLeaseEnded().getReason(), "reason");
        return reason.is_ok() ? reason.value() : std::string("ended");
      }
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
}

std::string server_list(const Placement& placement) {
  std::string out;
  std::set<std::string> seen;
  for (const auto& p : placement) {
    if (!seen.insert(p.address).second) continue;
    if (!out.empty()) out += ",";
    out += p.address;
  }
  return out;
}

Result<uint32_t> parse_compute_capability(const std::string& text) {
  const size_t dot = text.find('.');
  const std::string major = text.substr(0, dot);
  const std::string minor = dot == std::string::npos ? "0" : text.substr(dot + 1);
  auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 3 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (!digits(major) || !digits(minor) || minor.size() != 1) {
    return invalid_argument("compute capability '" + text + "': expected MAJOR.MINOR, e.g. 8.0");
  }
  return static_cast<uint32_t>(std::stoul(major) * 10 + std::stoul(minor));
}

Result<std::string> secret_from_environment() {
  if (const char* file = std::getenv("RGPU_AUTH_TOKEN_FILE"); file && *file) {
    auto key = protocol::auth::read_key_file(file);
    if (!key.is_ok()) return invalid_argument("RGPU_AUTH_TOKEN_FILE: " + key.status().message());
    return key;
  }
  if (const char* token = std::getenv("RGPU_AUTH_TOKEN"); token && *token) {
    return protocol::auth::clean_secret(token, "RGPU_AUTH_TOKEN");
  }
  return std::string();
}

Status request_from_environment(Request* request) {
  if (const char* text = std::getenv("RGPU_REQUEST"); text && *text) {
    auto parsed = parse_request(text);
    if (!parsed.is_ok()) return invalid_argument("RGPU_REQUEST: " + parsed.status().message());
    if (parsed.value().devices != 0) request->devices = parsed.value().devices;
    if (parsed.value().memory_bytes != 0) request->memory_bytes = parsed.value().memory_bytes;
    if (parsed.value().share != 0) request->share = parsed.value().share;
  }
  if (const char* v = std::getenv("RGPU_POOL_KIND"); v && *v) {
    auto kind = parse_kind_wanted(v);
    if (!kind.is_ok()) return invalid_argument("RGPU_POOL_KIND: " + kind.status().message());
    request->kind = kind.value();
  }
  if (const char* v = std::getenv("RGPU_POOL_MIN_CC"); v && *v) {
    auto cc = parse_compute_capability(v);
    if (!cc.is_ok()) return invalid_argument("RGPU_POOL_MIN_CC: " + cc.status().message());
    request->min_compute_capability = cc.value();
  }
  if (const char* v = std::getenv("RGPU_POOL_PRIORITY"); v && *v) {
    auto p = parse_priority(v);
    if (!p.is_ok()) return invalid_argument("RGPU_POOL_PRIORITY: " + p.status().message());
    request->priority = p.value();
  }
  if (const char* v = std::getenv("RGPU_TENANT"); v && *v) request->tenant = v;
  if (const char* v = std::getenv("RGPU_POOL_TIMEOUT"); v && *v) {
    char* end = nullptr;
    const double s = std::strtod(v, &end);
    if (end == v || *end != '\0' || !(s > 0 && s <= 7 * 24 * 3600)) {
      return invalid_argument(std::string("RGPU_POOL_TIMEOUT: '") + v + "': expected seconds above 0");
    }
    request->timeout_ms = static_cast<Millis>(s * 1000);
  }
  return Status();
}

std::function<void(const QueueNotice&)> stderr_progress(const std::string& who) {
  const bool tty = isatty(2) == 1;
  auto last = std::make_shared<std::string>();
  return [tty, who, last](const QueueNotice& n) {
    const std::string where = n.why.empty() ? "position " + std::to_string(n.ahead + 1) : n.why;
    if (!tty && *last == where) return;
    *last = where;
    std::fprintf(stderr, "%s%s: waiting: %s; waited %.0f s%s", tty ? "\r" : "", who.c_str(), where.c_str(),
                 static_cast<double>(n.waited_ms) / 1000.0, tty ? "   " : "\n");
    std::fflush(stderr);
  };
}

Result<net::Message> query_status(const std::vector<std::string>& pool, std::chrono::milliseconds timeout) {
  auto channel = net::Channel::connect(pool, timeout, net::kMaxStatusFrame);
  if (!channel.is_ok()) return channel.status();
  capnp::MallocMessageBuilder b;
  b.initRoot<PoolMessage>().setStatusQuery();
  if (Status s = channel.value()->send(b); !s.is_ok()) return s;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto m = channel.value()->receive(std::chrono::milliseconds(200));
    if (!m.is_ok()) return m.status();
    if (m.value() && m.value()->root().which() == PoolMessage::STATUS) return std::move(*m.value());
  }
  return failed("the pool did not answer the status query in time");
}

Result<net::Message> query_history(const std::vector<std::string>& pool, Millis since_ms,
                                   std::chrono::milliseconds timeout) {
  auto channel = net::Channel::connect(pool, timeout, net::kMaxStatusFrame);
  if (!channel.is_ok()) return channel.status();
  capnp::MallocMessageBuilder b;
  b.initRoot<PoolMessage>().initHistoryQuery().setSinceMs(since_ms);
  if (Status s = channel.value()->send(b); !s.is_ok()) return s;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto m = channel.value()->receive(std::chrono::milliseconds(200));
    if (!m.is_ok()) return m.status();
    if (!m.value()) continue;
    const auto which = m.value()->root().which();
    if (which == PoolMessage::HISTORY) return std::move(*m.value());
    if (which == PoolMessage::ERROR) {
      return failed("the pool refused the history query (a pool older than this command?)");
    }
  }
  return failed("the pool did not answer the history query in time");
}

}  // namespace rgpu::pool::client
