// The status reply.
#include "status_view.h"

#include "rgpu/pool/wire.h"

namespace rgpu::pool::service {

void write_status(poolwire::Status::Builder out, const StatusInputs& in) {
  out.setNowMs(in.now);
  auto servers = out.initServers(static_cast<unsigned>(in.servers.size()));
  for (size_t i = 0; i < in.servers.size(); ++i) {
    const ServerView& v = in.servers[i];
    auto s = servers[static_cast<unsigned>(i)];
    s.setId(v.info.id);
    s.setAddress(v.info.address);
    auto devices = s.initDevices(static_cast<unsigned>(v.info.devices.size()));
    for (size_t d = 0; d < v.info.devices.size(); ++d) wire::write(devices[static_cast<unsigned>(d)], v.info.devices[d]);
    auto use = s.initUse(static_cast<unsigned>(v.use.size()));
    for (size_t u = 0; u < v.use.size(); ++u) {
      use[static_cast<unsigned>(u)].setIndex(v.use[u].index);
      use[static_cast<unsigned>(u)].setMemoryUsedBytes(v.use[u].memory_used_bytes);
      use[static_cast<unsigned>(u)].setUtilization(static_cast<float>(v.use[u].utilization));
    }
    if (auto it = in.sessions.find(v.info.id); it != in.sessions.end()) s.setSessions(it->second);
    s.setLastHeartbeatMs(v.last_heartbeat);
    s.setLeases(static_cast<uint32_t>(v.leases));
  }
  auto leases = out.initLeases(static_cast<unsigned>(in.leases.size()));
  for (size_t i = 0; i < in.leases.size(); ++i) {
    const Lease& l = in.leases[i];
    auto o = leases[static_cast<unsigned>(i)];
    o.setId(l.id);
    o.setTenant(l.tenant);
    o.setPriority(l.priority);
    wire::write_placement(o.initPlacement(static_cast<unsigned>(l.placement.size())), l.placement);
    o.setIssuedMs(l.issued);
    o.setExpiryMs(l.expiry);
    if (auto it = in.lease_origin.find(l.id); it != in.lease_origin.end()) {
      o.setProgram(it->second.first);
      o.setHostname(it->second.second);
    }
  }
  auto queue = out.initQueue(static_cast<unsigned>(in.queue.size()));
  for (size_t i = 0; i < in.queue.size(); ++i) {
    const QueuedView& q = in.queue[i];
    auto o = queue[static_cast<unsigned>(i)];
    o.setTicket(q.ticket);
    auto r = o.initRequest();
    wire::write(r, q.request);
    if (auto it = in.ticket_origin.find(q.ticket); it != in.ticket_origin.end()) {
      r.setProgram(it->second.first);
      r.setHostname(it->second.second);
    }
    o.setSinceMs(q.since);
    o.setDeadlineMs(q.deadline);
    o.setWhy(q.why);
  }
}

}  // namespace rgpu::pool::service
