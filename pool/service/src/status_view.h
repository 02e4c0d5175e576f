// The pool's status reply (`rgpu pool status`), built from the scheduler's
// views and what only the service knows (sessions, who asked).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "pool.capnp.h"
#include "rgpu/pool/scheduler.h"

namespace rgpu::pool::service {

struct StatusInputs {
  Millis now = 0;
  std::vector<ServerView> servers;
  std::vector<Lease> leases;
  std::vector<QueuedView> queue;
  std::map<std::string, uint32_t> sessions;  // by server id, from heartbeats
  // program and host name, by lease and by ticket
  std::map<LeaseId, std::pair<std::string, std::string>> lease_origin;
  std::map<TicketId, std::pair<std::string, std::string>> ticket_origin;
};

void write_status(poolwire::Status::Builder out, const StatusInputs& in);

}  // namespace rgpu::pool::service
