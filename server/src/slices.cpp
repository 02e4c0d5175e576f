// SliceTable: the operator's cuts of the devices, checked, and admission.
#include "slices.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "rgpu/common/request_text.h"

namespace rgpu::server {
namespace {

// Shares are written in decimals; a sum such as 0.5 + 0.25 + 0.25 must not
// fail for the float's last bit.
constexpr double kShareSlack = 1e-4;

std::string mib(uint64_t bytes) {
  char text[64];
  if (bytes % (uint64_t{1} << 20) == 0) {
    std::snprintf(text, sizeof text, "%llu MiB", static_cast<unsigned long long>(bytes >> 20));
  } else {
    std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
  }
  return text;
}

std::string share_text(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", share);
  return text;
}

}  // namespace

Result<DeviceSlicing> parse_slicing(std::string_view text) {
  const std::string whole(text);
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0) {
    return invalid_argument("--slices wants DEV:SIZE@SHARE[,SIZE@SHARE...], got '" + whole + "'");
  }
  DeviceSlicing out;
  const std::string dev(text.substr(0, colon));
  if (dev.size() > 4 || dev.find_first_not_of("0123456789") != std::string::npos) {
    return invalid_argument("--slices '" + whole + "': '" + dev + "' is not a device ordinal");
  }
  out.device = static_cast<uint32_t>(std::stoul(dev));
  std::string_view rest = text.substr(colon + 1);
  size_t at = 0;
  while (at <= rest.size()) {
    size_t comma = rest.find(',', at);
    if (comma == std::string_view::npos) comma = rest.size();
    const std::string_view item = rest.substr(at, comma - at);
    at = comma + 1;
    const size_t sep = item.find('@');
    if (item.empty() || sep == std::string_view::npos) {
      return invalid_argument("--slices '" + whole + "': slice '" + std::string(item) + "' is not SIZE@SHARE");
    }
    auto size = parse_size(item.substr(0, sep));
    if (!size.is_ok()) return invalid_argument("--slices '" + whole + "': " + size.status().message());
    if (size.value() == 0) return invalid_argument("--slices '" + whole + "': a slice needs memory");
    auto share = parse_share(item.substr(sep + 1));
    if (!share.is_ok()) return invalid_argument("--slices '" + whole + "': " + share.status().message());
    out.slices.push_back(SliceSpec{size.value(), share.value()});
  }
  return out;
}

Admission::Admission(std::shared_ptr<SliceTable> table, std::vector<uint32_t> slots)
    : table_(std::move(table)), slots_(std::move(slots)) {}

Admission::~Admission() { table_->release(slots_); }

SliceTable::SliceTable(std::vector<Slot> slots, uint64_t session_memory, bool sliced)
    : session_memory_(session_memory), sliced_(sliced), slots_(std::move(slots)) {}

Result<std::shared_ptr<SliceTable>> SliceTable::make(const std::vector<uint64_t>& device_memory,
                                                     const SharingOptions& options) {
  std::vector<const DeviceSlicing*> cuts(device_memory.size(), nullptr);
  for (const DeviceSlicing& d : options.slicing) {
    if (d.device >= device_memory.size()) {
      return invalid_argument("--slices names device " + std::to_string(d.device) + "; this server has " +
                              std::to_string(device_memory.size()) + " device(s), numbered from 0");
    }
    if (cuts[d.device] != nullptr) return invalid_argument("--slices cuts device " + std::to_string(d.device) + " twice");
    if (d.slices.empty()) return invalid_argument("--slices gives device " + std::to_string(d.device) + " no slices");
    uint64_t bytes = 0;
    double shares = 0;
    for (const SliceSpec& s : d.slices) {
      if (s.memory_bytes > device_memory[d.device] - std::min(bytes, device_memory[d.device])) {
        bytes = UINT64_MAX;  // past the device, however far
        break;
      }
      bytes += s.memory_bytes;
      shares += s.share;
    }
    if (bytes > device_memory[d.device]) {
      return invalid_argument("--slices: the slices of device " + std::to_string(d.device) +
                              " need more memory than its " + mib(device_memory[d.device]));
    }
    if (shares > 1 + kShareSlack) {
      return invalid_argument("--slices: the shares of device " + std::to_string(d.device) + " add up to " +
                              share_text(shares) + "; at most 1");
    }
    cuts[d.device] = &d;
  }
  std::vector<Slot> slots;
  bool sliced = false;
  for (uint32_t dev = 0; dev < device_memory.size(); ++dev) {
    if (cuts[dev] == nullptr) {
      Slot whole;
      whole.device = dev;
      whole.memory = device_memory[dev];
      whole.max_sessions = options.max_sessions_per_slice;  // 0: any number
      slots.push_back(whole);
      continue;
    }
    sliced = true;
    for (size_t i = 0; i < cuts[dev]->slices.size(); ++i) {
      Slot slot;
      slot.device = dev;
      slot.index = static_cast<int>(i);
      slot.memory = cuts[dev]->slices[i].memory_bytes;
      slot.share = cuts[dev]->slices[i].share;
      slot.max_sessions = options.max_sessions_per_slice != 0 ? options.max_sessions_per_slice : 1;
      slots.push_back(slot);
    }
  }
  return std::shared_ptr<SliceTable>(new SliceTable(std::move(slots), options.session_memory, sliced));
}

std::string SliceTable::describe(const Slot& slot) {
  if (slot.index < 0) return "device " + std::to_string(slot.device) + " (whole, " + mib(slot.memory) + ")";
  return "device " + std::to_string(slot.device) + " slice " + std::to_string(slot.index) + " (" + mib(slot.memory) +
         ", share " + share_text(slot.share) + ")";
}

std::vector<SliceTable::Slot> SliceTable::slots() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_;
}

std::string SliceTable::free_list_locked() const {
  std::string text;
  for (const Slot& s : slots_) {
    if (s.max_sessions != 0 && s.sessions >= s.max_sessions) continue;
    text += (text.empty() ? "" : ", ") + describe(s);
  }
  return text.empty() ? "nothing" : text;
}

Result<std::pair<std::vector<Placement>, std::unique_ptr<Admission>>> SliceTable::admit(const Resources& request) {
  std::lock_guard<std::mutex> lock(mu_);
  // The memory a whole device gives a session: the request, else the
  // server's default quota; more than --session-memory is never granted.
  const uint64_t whole_limit = session_memory_;
  std::vector<uint32_t> fit;  // slots with room that meet the request
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.max_sessions != 0 && s.sessions >= s.max_sessions) continue;
    if (request.memory_bytes > s.memory) continue;
    if (s.index < 0 && whole_limit != 0 && request.memory_bytes > whole_limit) continue;
    if (request.share > s.share + kShareSlack) continue;
    fit.push_back(i);
  }
  size_t want = request.devices;
  if (want == 0) want = sliced_ ? 1 : slots_.size();
  // Best fit: the smallest slices that meet the request, so that bigger ones
  // stay free for those who need them; whole devices (shared) last.
  std::stable_sort(fit.begin(), fit.end(), [&](uint32_t a, uint32_t b) {
    const Slot &x = slots_[a], &y = slots_[b];
    if ((x.index < 0) != (y.index < 0)) return x.index >= 0;
    if (x.memory != y.memory) return x.memory < y.memory;
    return x.share < y.share;
  });
  std::vector<uint32_t> chosen;
  std::vector<bool> device_used;
  for (const Slot& s : slots_) device_used.resize(std::max<size_t>(device_used.size(), s.device + 1));
  // Distinct devices first; then more slices of devices already used.
  for (int pass = 0; pass < 2 && chosen.size() < want; ++pass) {
    for (uint32_t i : fit) {
      if (chosen.size() == want) break;
      if (std::find(chosen.begin(), chosen.end(), i) != chosen.end()) continue;
      if (pass == 0 && device_used[slots_[i].device]) continue;
      chosen.push_back(i);
      device_used[slots_[i].device] = true;
    }
  }
  if (chosen.size() < want) {
    char share[32];
    std::snprintf(share, sizeof share, "%g", request.share);
    return overloaded("no free slices fit: asked for " + std::to_string(want) + " device(s)" +
                      (request.memory_bytes != 0 ? ", mem=" + mib(request.memory_bytes) : std::string()) +
                      (request.share != 0 ? std::string(", share=") + share : std::string()) +
                      "; free: " + free_list_locked());
  }
  std::sort(chosen.begin(), chosen.end());  // slots are in device, then slice, order
  std::vector<Placement> placements;
  for (uint32_t i : chosen) {
    Slot& s = slots_[i];
    ++s.sessions;
    Placement p;
    p.device = s.device;
    p.slice = s.index;
    p.share = s.share;
    p.quota = s.index >= 0 ? s.memory : (request.memory_bytes != 0 ? request.memory_bytes : whole_limit);
    placements.push_back(p);
  }
  return std::make_pair(std::move(placements), std::make_unique<Admission>(shared_from_this(), std::move(chosen)));
}

Result<std::pair<std::vector<Placement>, std::unique_ptr<Admission>>> SliceTable::admit_leased(
    const std::vector<LeasedSlice>& leased) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint32_t> chosen;
  std::vector<Placement> placements;
  for (const LeasedSlice& l : leased) {
    bool device_cut = false;
    for (const Slot& s : slots_) device_cut |= s.device == l.device && s.index >= 0;
    const int index = device_cut ? static_cast<int>(l.slice) : (l.slice == 0 ? -1 : -2);
    uint32_t found = UINT32_MAX;
    for (uint32_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].device == l.device && slots_[i].index == index) found = i;
    }
    const std::string name = "device " + std::to_string(l.device) + " slice " + std::to_string(l.slice);
    if (found == UINT32_MAX) return invalid_argument("the lease names " + name + ", which this server does not have");
    const Slot& s = slots_[found];
    const uint32_t holding = s.sessions + static_cast<uint32_t>(std::count(chosen.begin(), chosen.end(), found));
    if (s.max_sessions != 0 && holding >= s.max_sessions) {
      return overloaded("the lease's " + name + " already holds its " + std::to_string(s.max_sessions) +
                        " session(s)");
    }
    if (l.memory_bytes > s.memory) {
      return invalid_argument("the lease grants " + mib(l.memory_bytes) + " on " + name + ", which has " +
                              mib(s.memory));
    }
    chosen.push_back(found);
    Placement p;
    p.device = s.device;
    p.slice = s.index;
    p.quota = l.memory_bytes;
    p.share = l.share > 0 && l.share <= s.share ? l.share : s.share;
    placements.push_back(p);
  }
  for (uint32_t i : chosen) ++slots_[i].sessions;
  return std::make_pair(std::move(placements), std::make_unique<Admission>(shared_from_this(), std::move(chosen)));
}

void SliceTable::release(const std::vector<uint32_t>& slots) {
  std::lock_guard<std::mutex> lock(mu_);
  for (uint32_t i : slots) {
    if (i < slots_.size() && slots_[i].sessions > 0) --slots_[i].sessions;
  }
}

}  // namespace rgpu::server
