// rgpud's server object: listens, accepts clients, runs one Session per client.
#pragma once

#include <memory>
#include <string>

#include "rgpu/common/status.h"
#include "rgpu/server/driver_table.h"
#include "rgpu/transport/transport.h"

namespace rgpu::server {

struct ServerOptions {
  std::string listen = "127.0.0.1:0";  // host:port; port 0 picks a free one
  std::string auth_token;              // empty: none required
  // Folder that keeps module images across restarts (empty: memory only),
  // and the bytes of images kept in memory.
  std::string module_cache_dir;
  uint64_t module_cache_memory = uint64_t{1} << 30;
};

// Owns the listener and every live session. Thread-safe. Destruction closes
// all sessions and frees everything they held on the device.
class Server {
 public:
  virtual ~Server() = default;
  // The bound address, "host:port".
  virtual std::string address() const = 0;
  virtual size_t session_count() const = 0;

  // Initialises the driver (cuInit, device queries) and starts listening.
  static Result<std::unique_ptr<Server>> start(std::shared_ptr<const DriverTable> driver,
                                               std::shared_ptr<transport::Transport> transport,
                                               const ServerOptions& options);
};

}  // namespace rgpu::server
