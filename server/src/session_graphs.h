// A session's graphs, executable graphs and virtual memory objects: what the
// client may name in Call.graph, each with the context that made it.
#pragma once

#include <cstdint>
#include <map>

namespace rgpu::server {

// The driver's own handle values (CUgraph, CUgraphExec, chunk handles,
// reserved addresses) are what the client names; every one is looked up here,
// with its context, before the driver sees it. Mapped, accessible ranges are
// what the session's ledger holds for virtual memory: `segments` are the
// ranges added to it, adjacent accessible mappings joined into one, so a
// copy may span the chunks of a segment.
// Thread-safety: none; the session uses it only under its execution lock.
struct SessionGraphs {
  struct Chunk {
    uint64_t ctx = 0;
    uint64_t size = 0;
    uint64_t refs = 1;  // the client's references (create and retain)
    bool mapped = false;
  };
  struct Reservation {
    uint64_t ctx = 0;
    uint64_t size = 0;
  };
  struct Mapping {
    uint64_t ctx = 0;
    uint64_t size = 0;
    uint64_t chunk = 0;
    bool access = false;
  };
  std::map<uint64_t, uint64_t> graphs;  // graph -> ctx
  std::map<uint64_t, uint64_t> execs;   // exec -> ctx
  std::map<uint64_t, Chunk> chunks;
  std::map<uint64_t, Reservation> reservations;  // by address
  std::map<uint64_t, Mapping> mappings;          // by address
  std::map<uint64_t, uint64_t> segments;         // ledger range base -> ctx

  // The reservation holding [addr, addr + size) wholly, or end().
  std::map<uint64_t, Reservation>::iterator reservation_of(uint64_t addr, uint64_t size) {
    auto it = reservations.upper_bound(addr);
    if (it == reservations.begin()) return reservations.end();
    --it;
    if (addr - it->first >= it->second.size || size > it->second.size - (addr - it->first)) return reservations.end();
    return it;
  }
  // Bytes of `ctx`'s chunks that no ledger segment counts yet.
  uint64_t uncounted_bytes(uint64_t ctx) const {
    uint64_t n = 0;
    for (auto& [h, c] : chunks) {
      if (c.ctx == ctx) n += c.size;
    }
    for (auto& [a, m] : mappings) {
      if (m.ctx == ctx && m.access) n -= m.size;
    }
    return n;
  }
};

}  // namespace rgpu::server
