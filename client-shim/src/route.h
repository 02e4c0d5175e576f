// The device router's pure parts: which server a handle, a device or a
// device pointer belongs to when one program uses several rgpud servers
// (RGPU_SERVER=host1:port,host2:port). Shim (shim.h) applies them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "rgpu/protocol/handles.h"

namespace rgpu::shim::route {

// Which server a handle belongs to is its server tag
// (rgpu/protocol/handles.h, "Server tags": with_server, server_of,
// without_server).

// The program's value of the primary context of `server`'s device
// `server_ordinal`, and what the server calls it.
constexpr uint64_t primary_context(size_t server, int server_ordinal) {
  return protocol::with_server(protocol::primary_context(static_cast<uint64_t>(server_ordinal)), server);
}
constexpr uint64_t wire_context(uint64_t ctx) {
  const uint64_t untagged = protocol::without_server(ctx);
  return protocol::is_primary_context(untagged) ? untagged : ctx;
}

// Device pointers of every server, by range. Device pointers cannot be
// rewritten (kernels dereference them), so a call that names one is routed
// by the allocation that holds it. Two servers can hand out overlapping
// ranges; such an allocation is refused (add returns the clash) rather than
// risk sending a later call to the wrong server. Thread-safe.
class AllocationTable {
 public:
  struct Range {
    uint64_t base = 0;
    uint64_t size = 0;
    size_t server = 0;
    uint64_t ctx = 0;  // the context it was allocated in (a call routed here from another server uses it)
  };

  // Adds `r`; a range of the same server that it overlaps is replaced (that
  // memory was freed by a path the table did not see). Returns the clashing
  // range of another server instead, adding nothing.
  std::optional<Range> add(const Range& r);
  // Removes the range starting at `base`; false when there is none.
  bool remove(uint64_t base);
  // The range holding `p`.
  std::optional<Range> find(uint64_t p) const;
  size_t size() const;

 private:
  mutable std::shared_mutex mu_;
  std::map<uint64_t, Range> ranges_;  // by base
};

// Parses RGPU_SERVER's list: addresses separated by commas (spaces around
// them ignored). Empty entries are an error; so is a list longer than
// protocol::kMaxServers. On error returns nullopt and sets *problem.
std::optional<std::vector<std::string>> parse_servers(const std::string& text, std::string* problem);

}  // namespace rgpu::shim::route
