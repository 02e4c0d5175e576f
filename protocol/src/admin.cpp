// Operator requests and replies on the wire (admin.h).
#include "rgpu/protocol/admin.h"

namespace rgpu::protocol {
namespace {

Status bounded_text(capnp::Text::Reader text, const char* field, std::string* out) {
  if (text.size() > kMaxSummaryText) {
    return invalid_argument(std::string("a session's ") + field + " is longer than " +
                            std::to_string(kMaxSummaryText) + " bytes");
  }
  out->assign(text.cStr(), text.size());
  return Status::ok();
}

}  // namespace

const char* command_name(AdminCommand command) {
  switch (command) {
    case AdminCommand::kListSessions:
      return "list_sessions";
    case AdminCommand::kEndSession:
      return "end_session";
  }
  return "unknown";
}

void write_admin_request(const AdminRequest& request, wire::AdminRequest::Builder out) {
  switch (request.command) {
    case AdminCommand::kListSessions:
      out.setListSessions();
      return;
    case AdminCommand::kEndSession:
      out.setEndSession(request.session);
      return;
  }
}

Result<AdminRequest> read_admin_request(wire::AdminRequest::Reader in) {
  switch (in.which()) {
    case wire::AdminRequest::LIST_SESSIONS:
      return AdminRequest{AdminCommand::kListSessions, 0};
    case wire::AdminRequest::END_SESSION:
      return AdminRequest{AdminCommand::kEndSession, in.getEndSession()};
    case wire::AdminRequest::NONE:
      return invalid_argument("no operator request");
  }
  return invalid_argument("an operator request this server does not know (kind " +
                          std::to_string(static_cast<int>(in.which())) + "); use an rgpu CLI of the server's version");
}

void write_sessions(const std::vector<SessionSummary>& sessions, wire::AdminReply::Builder out) {
  auto list = out.initSessions(static_cast<unsigned>(sessions.size()));
  for (unsigned i = 0; i < sessions.size(); ++i) {
    const SessionSummary& s = sessions[i];
    auto w = list[i];
    w.setId(s.id);
    w.setTenant(s.tenant);
    w.setHostname(s.hostname);
    w.setProgram(s.program);
    w.setPid(s.pid);
    auto devices = w.initDevices(static_cast<unsigned>(s.devices.size()));
    for (unsigned d = 0; d < s.devices.size(); ++d) devices.set(d, s.devices[d]);
    w.setMemoryBytes(s.memory_bytes);
    w.setAgeMs(s.age_ms);
    w.setCalls(s.calls);
    w.setLease(s.lease);
  }
}

Result<std::vector<SessionSummary>> read_sessions(wire::AdminReply::Reader in) {
  auto list = in.getSessions();
  if (list.size() > kMaxAdminSessions) {
    return invalid_argument("a reply of " + std::to_string(list.size()) + " sessions, over the limit of " +
                            std::to_string(kMaxAdminSessions));
  }
  std::vector<SessionSummary> out;
  out.reserve(list.size());
  for (auto r : list) {
    SessionSummary s;
    s.id = r.getId();
    if (Status t = bounded_text(r.getTenant(), "tenant", &s.tenant); !t.is_ok()) return t;
    if (Status t = bounded_text(r.getHostname(), "host name", &s.hostname); !t.is_ok()) return t;
    if (Status t = bounded_text(r.getProgram(), "program", &s.program); !t.is_ok()) return t;
    s.pid = r.getPid();
    auto devices = r.getDevices();
    if (devices.size() > kMaxSummaryDevices) {
      return invalid_argument("a session of " + std::to_string(devices.size()) + " devices, over the limit of " +
                              std::to_string(kMaxSummaryDevices));
    }
    for (uint32_t d : devices) s.devices.push_back(d);
    s.memory_bytes = r.getMemoryBytes();
    s.age_ms = r.getAgeMs();
    s.calls = r.getCalls();
    s.lease = r.getLease();
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace rgpu::protocol
