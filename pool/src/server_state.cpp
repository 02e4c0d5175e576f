// A server's free capacity and the fit of one request on it.
#include "server_state.h"

#include <algorithm>
#include <tuple>

namespace rgpu::pool::detail {
namespace {

constexpr int64_t kScale = 1'000'000;

int64_t fraction(uint64_t part, uint64_t whole) {
  if (whole == 0) return 0;
  return static_cast<int64_t>(static_cast<__int128>(part) * kScale / whole);
}

bool slice_fits(const SliceState& sl, const Need& need) {
  if (need.whole()) return sl.sessions == 0;
  return sl.has_session_left() && sl.free_memory >= need.memory && sl.free_share >= need.share;
}

}  // namespace

bool DeviceState::open() const {
  for (const SliceState& sl : slices) {
    if (sl.has_session_left() && sl.free_memory > 0) return true;
  }
  return false;
}

ServerState ServerState::from(const ServerInfo& info, Millis now) {
  ServerState s;
  s.id = info.id;
  s.address = info.address;
  s.last_heartbeat = now;
  s.devices.reserve(info.devices.size());
  for (const Device& d : info.devices) {
    DeviceState ds;
    ds.spec = d;
    ds.spec.slices.clear();
    ds.use.index = d.index;
    std::vector<Slice> slices = d.slices;
    // As rgpud serves a device it does not cut: one whole slice that any
    // number of sessions share, each within the memory it asked for.
    if (slices.empty()) slices.push_back(Slice{0, d.memory_bytes, 1.0, 0});
    for (const Slice& sl : slices) {
      SliceState st;
      st.spec = sl;
      st.share_units = share_to_units(sl.share);
      st.free_memory = sl.memory_bytes;
      st.free_share = st.share_units;
      ds.slices.push_back(st);
    }
    s.total_memory += d.memory_bytes;
    s.devices.push_back(std::move(ds));
  }
  return s;  // summarized when the scheduler first indexes it
}

ServerState pristine(const ServerState& s) {
  ServerState out = s;
  out.leases.clear();
  out.leased_memory = 0;
  for (DeviceState& d : out.devices) {
    d.leased_memory = 0;
    for (SliceState& sl : d.slices) {
      sl.free_memory = sl.spec.memory_bytes;
      sl.free_share = sl.share_units;
      sl.sessions = 0;
    }
  }
  out.summarize();
  return out;
}

void ServerState::summarize() {
  for (int c = 0; c < 2; ++c) {
    open_devices[c] = idle_devices[c] = max_cc[c] = max_free_share[c] = 0;
    max_free_memory[c] = 0;
  }
  for (const DeviceState& d : devices) {
    const int c = d.cpu() ? 1 : 0;
    max_cc[c] = std::max(max_cc[c], d.spec.compute_capability);
    if (d.open()) open_devices[c] += 1;
    bool idle = false;
    for (const SliceState& sl : d.slices) {
      idle = idle || sl.sessions == 0;
      if (!sl.has_session_left()) continue;
      max_free_memory[c] = std::max(max_free_memory[c], sl.free_memory);
      max_free_share[c] = std::max(max_free_share[c], sl.free_share);
    }
    if (idle) idle_devices[c] += 1;
  }
}

uint32_t could_fit(const ServerState& s, const Need& need) {
  uint32_t n = 0;
  for (int c = 0; c < 2; ++c) {
    if (!(c ? need.allow_cpu : need.allow_gpu) || s.max_cc[c] < need.min_cc) continue;
    if (!need.whole() && (s.max_free_memory[c] < need.memory || s.max_free_share[c] < need.share)) continue;
    n += need.whole() ? s.idle_devices[c] : s.open_devices[c];
  }
  return n;
}

Need Need::from(const Request& r) {
  Need n;
  n.devices = r.devices;
  n.memory = r.memory_bytes;
  n.share = share_to_units(r.share);
  n.allow_gpu = r.kind != KindWanted::kCpu;
  n.allow_cpu = r.kind != KindWanted::kNvidia;
  n.min_cc = r.min_compute_capability;
  return n;
}

int pick_slice(const DeviceState& d, const Need& need, Policy policy) {
  int best = -1;
  for (size_t i = 0; i < d.slices.size(); ++i) {
    const SliceState& sl = d.slices[i];
    if (!slice_fits(sl, need)) continue;
    if (best < 0) {
      best = static_cast<int>(i);
      continue;
    }
    const SliceState& b = d.slices[static_cast<size_t>(best)];
    // Binpack takes the tightest slice, leaving big ones for big requests;
    // the others take the roomiest, leaving each slice less crowded.
    const bool better = policy == Policy::kBinpack ? sl.free_memory < b.free_memory : sl.free_memory > b.free_memory;
    if (better) best = static_cast<int>(i);
  }
  return best;
}

void fit_server(const ServerState& s, const Need& need, uint32_t want, Policy policy, std::vector<Pick>* out) {
  // (kind rank, policy rank, device position): NVIDIA devices first, then
  // the policy's preference, then the server's own order.
  std::vector<std::tuple<int, int64_t, uint32_t, int>> found;
  for (uint32_t i = 0; i < s.devices.size(); ++i) {
    const DeviceState& d = s.devices[i];
    if (!need.allows(d)) continue;
    const int slice = pick_slice(d, need, policy);
    if (slice < 0) continue;
    const int64_t leased = fraction(d.leased_memory, d.spec.memory_bytes);
    int64_t rank = 0;
    switch (policy) {
      case Policy::kBinpack: rank = -leased; break;
      case Policy::kSpread: rank = leased; break;
      case Policy::kLeastLoaded:
        rank = static_cast<int64_t>(d.use.utilization * kScale) +
               fraction(std::max(d.use.memory_used_bytes, d.leased_memory), d.spec.memory_bytes);
        break;
    }
    found.emplace_back(d.cpu() ? 1 : 0, rank, i, slice);
  }
  if (found.size() > want) {
    std::partial_sort(found.begin(), found.begin() + want, found.end());
    found.resize(want);
  } else {
    std::sort(found.begin(), found.end());
  }
  for (const auto& [kind, rank, dev, slice] : found) {
    const SliceState& sl = s.devices[dev].slices[static_cast<size_t>(slice)];
    Pick p;
    p.device = dev;
    p.slice = static_cast<uint32_t>(slice);
    p.memory = need.whole() ? sl.spec.memory_bytes : need.memory;
    p.share = need.whole() ? sl.share_units : need.share;
    out->push_back(p);
  }
}

void take(ServerState& s, const Pick& p) {
  DeviceState& d = s.devices[p.device];
  SliceState& sl = d.slices[p.slice];
  sl.free_memory -= p.memory;
  sl.free_share -= p.share;
  sl.sessions += 1;
  d.leased_memory += p.memory;
  s.leased_memory += p.memory;
}

void give_back(ServerState& s, const Pick& p) {
  DeviceState& d = s.devices[p.device];
  SliceState& sl = d.slices[p.slice];
  sl.free_memory += p.memory;
  sl.free_share += p.share;
  sl.sessions -= 1;
  d.leased_memory -= p.memory;
  s.leased_memory -= p.memory;
}

int64_t index_key(const ServerState& s, Policy policy) {
  const int64_t leased = fraction(s.leased_memory, s.total_memory);
  switch (policy) {
    case Policy::kBinpack: return -leased;
    case Policy::kSpread: return leased;
    case Policy::kLeastLoaded: {
      if (s.devices.empty()) return 0;
      int64_t sum = 0;
      for (const DeviceState& d : s.devices) {
        sum += static_cast<int64_t>(d.use.utilization * kScale) +
               fraction(std::max(d.use.memory_used_bytes, d.leased_memory), d.spec.memory_bytes);
      }
      return sum / static_cast<int64_t>(s.devices.size());
    }
  }
  return 0;
}

uint32_t pick_units(const ServerState& s, const Pick& p) {
  const DeviceState& d = s.devices[p.device];
  const uint64_t mem_units = d.spec.memory_bytes ? p.memory * kShareUnits / d.spec.memory_bytes : 0;
  return static_cast<uint32_t>(std::min<uint64_t>(kShareUnits, std::max<uint64_t>(mem_units, p.share)));
}

}  // namespace rgpu::pool::detail
