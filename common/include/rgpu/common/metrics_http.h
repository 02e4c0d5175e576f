// The HTTP endpoint of a metrics registry: GET (or HEAD) /metrics answers
// the registry's text; every other path is 404, every other method on
// /metrics 405.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "rgpu/common/metrics.h"
#include "rgpu/common/status.h"

namespace rgpu::metrics {

// Limits that keep the endpoint answering while peers try to hold it
// (docs/metrics.md, "Limits"). All connections are served by one thread that
// waits on them all at once, so a slow peer costs a socket, never a thread.
struct HttpOptions {
  // A request (its line and headers) must arrive whole within this long of
  // the connection's start or of the previous answer on it; a peer that
  // trickles bytes is closed when it passes.
  std::chrono::milliseconds request_timeout{5000};
  // An answer must be taken by the peer within this long.
  std::chrono::milliseconds write_timeout{5000};
  // Requests one kept-alive connection may make before it is closed.
  size_t keep_alive_requests = 100;
  // Connections held at once, in all and from one address. A connection
  // past either limit makes room by closing the oldest one of the same
  // scope that is waiting for a request (one that is being answered is
  // never cut), or is closed itself when there is none.
  size_t max_connections = 64;
  size_t max_connections_per_address = 16;
};

// Serves `registry` on one address until destroyed. The endpoint has no
// authentication: bind it to loopback or a management network. A request
// line and headers are at most 8 KiB and a request has no body (one that
// announces a body is refused with 413). Thread-safe; the registry must
// outlive it.
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
