// HttpExporter on cpp-httplib: one listening thread and a small pool.
#include "rgpu/common/metrics_http.h"

#include <httplib.h>

#include <sys/socket.h>

#include <cstdlib>
#include <thread>

namespace rgpu::metrics {

bool split_http_address(const std::string& text, std::string* host, int* port) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return false;
  std::string h = text.substr(0, colon);
  if (h.front() == '[') {
    if (h.size() < 3 || h.back() != ']') return false;
    h = h.substr(1, h.size() - 2);
  } else if (h.find(':') != std::string::npos) {
    return false;  // an IPv6 address needs its brackets
  }
  const std::string p = text.substr(colon + 1);
  char* end = nullptr;
  const long v = std::strtol(p.c_str(), &end, 10);
  if (*end != '\0' || v < 0 || v > 65535) return false;
  *host = h;
  *port = static_cast<int>(v);
  return true;
}

namespace {

class HttpExporterImpl final : public HttpExporter {
 public:
  HttpExporterImpl(const Registry& registry, const HttpOptions& options) : registry_(registry) {
    const size_t threads = std::max<size_t>(1, options.threads);
    server_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    server_.set_read_timeout(options.io_timeout);
    server_.set_write_timeout(options.io_timeout);
    server_.set_keep_alive_timeout(options.io_timeout.count());
    server_.set_keep_alive_max_count(options.keep_alive_requests);
    server_.set_payload_max_length(0);  // a scrape has no body
    // SO_REUSEADDR only: the library's default adds SO_REUSEPORT, with which a
    // second process could bind the same port and take half the scrapes.
    server_.set_socket_options([](int sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(registry_.render(), "text/plain; version=0.0.4; charset=utf-8");
    });
    // Anything else: a short answer, never the registry.
    auto other = [](const httplib::Request& req, httplib::Response& res) {
      res.status = req.path == "/metrics" ? 405 : 404;
      res.set_content(res.status == 404 ? "not found: only /metrics is served\n" : "method not allowed\n",
                      "text/plain");
    };
    server_.Post(".*", other);
    server_.Put(".*", other);
    server_.Delete(".*", other);
    server_.Patch(".*", other);
    server_.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (res.status == 404) res.set_content("not found: only /metrics is served\n", "text/plain");
    });
  }

  ~HttpExporterImpl() override {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  Status bind(const std::string& host_port) {
    std::string host;
    int port = 0;
    if (!split_http_address(host_port, &host, &port)) {
      return invalid_argument("metrics address must be HOST:PORT, got '" + host_port + "'");
    }
    if (port == 0) {
      port = server_.bind_to_any_port(host);
      if (port < 0) return failed("cannot bind the metrics endpoint to " + host_port);
    } else if (!server_.bind_to_port(host, port)) {
      return failed("cannot bind the metrics endpoint to " + host_port);
    }
    address_ = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() does nothing before the listening loop runs: wait for it, so
    // that destruction right after start cannot hang (bounded).
    for (int i = 0; i < 5000 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!server_.is_running()) return failed("the metrics endpoint on " + host_port + " did not start");
    return Status::ok();
  }

  std::string address() const override { return address_; }

 private:
  const Registry& registry_;
  httplib::Server server_;
  std::string address_;
  std::thread thread_;
};

}  // namespace

Result<std::unique_ptr<HttpExporter>> HttpExporter::start(const Registry& registry, const std::string& host_port,
                                                          HttpOptions options) {
  auto exporter = std::make_unique<HttpExporterImpl>(registry, options);
  if (Status s = exporter->bind(host_port); !s.is_ok()) return s;
  return std::unique_ptr<HttpExporter>(std::move(exporter));
}

}  // namespace rgpu::metrics
