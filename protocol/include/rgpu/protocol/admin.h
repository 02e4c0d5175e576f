// Operator requests (rgpu session ...): what an operator asks rgpud with its
// admin key, and what rgpud answers. One type on both sides, converted to
// and from the wire here only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rgpu.capnp.h"
#include "rgpu/common/status.h"

namespace rgpu::protocol {

enum class AdminCommand {
  kListSessions,
  kEndSession,
};

// "list_sessions", "end_session": for logs and metrics.
const char* command_name(AdminCommand command);

struct AdminRequest {
  AdminCommand command = AdminCommand::kListSessions;
  uint64_t session = 0;  // kEndSession: which
};

// One session as an operator sees it (wire::SessionSummary).
struct SessionSummary {
  uint64_t id = 0;
  std::string tenant;
  std::string hostname;
  std::string program;
  uint32_t pid = 0;
  std::vector<uint32_t> devices;  // the server's device ordinals
  uint64_t memory_bytes = 0;      // held on all of its devices
  uint64_t age_ms = 0;
  uint64_t calls = 0;
  uint64_t lease = 0;  // 0: none
};

// Bounds of a reply a client accepts: the most sessions, and the longest
// text field (a hello's own limit).
constexpr size_t kMaxAdminSessions = 1 << 16;
constexpr size_t kMaxSummaryText = 1024;
constexpr size_t kMaxSummaryDevices = 1024;

void write_admin_request(const AdminRequest& request, wire::AdminRequest::Builder out);
// The request of an operator's hello; an error for none or one this build
// does not know (a newer CLI).
Result<AdminRequest> read_admin_request(wire::AdminRequest::Reader in);

void write_sessions(const std::vector<SessionSummary>& sessions, wire::AdminReply::Builder out);
// Every session of a reply, or an error naming the first bound it breaks.
Result<std::vector<SessionSummary>> read_sessions(wire::AdminReply::Reader in);

}  // namespace rgpu::protocol
