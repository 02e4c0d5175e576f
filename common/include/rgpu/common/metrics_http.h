// The HTTP endpoint of a metrics registry: GET /metrics answers the
// registry's text; every other path is 404, every other method 405.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "rgpu/common/metrics.h"
#include "rgpu/common/status.h"

namespace rgpu::metrics {

struct HttpOptions {
  // Threads that answer requests (a scrape renders on one of them).
  size_t threads = 2;
  // How long one connection may take to send a request or read an answer.
  std::chrono::seconds io_timeout{5};
  // Requests one kept-alive connection may make before it is closed.
  size_t keep_alive_requests = 100;
};

// Serves `registry` on one address until destroyed. The endpoint has no
// authentication: bind it to loopback or a management network. Request
// sizes are bounded (a request line and headers of at most 8 KiB, no body).
// Thread-safe; the registry must outlive it.
class HttpExporter {
 public:
  virtual ~HttpExporter() = default;
  // "host:port" as bound (port 0 at start: the free port chosen).
  virtual std::string address() const = 0;

  // Binds `host_port` ("127.0.0.1:9400", "[::1]:9400", "0.0.0.0:9400")
  // and starts answering. An address that cannot be parsed or bound is an
  // error that names it.
  static Result<std::unique_ptr<HttpExporter>> start(const Registry& registry, const std::string& host_port,
                                                     HttpOptions options = {});
};

// Splits "host:port" or "[v6]:port" (host returned without brackets).
bool split_http_address(const std::string& text, std::string* host, int* port);

}  // namespace rgpu::metrics
