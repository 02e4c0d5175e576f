// FairShare: virtual-time accounting of members' kernel time.
#include "rgpu/common/fair_share.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace rgpu {

FairShare::FairShare(Clock now, Options options) : now_(std::move(now)), options_(options) {}

int64_t FairShare::steady_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint64_t FairShare::add(double share) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  members_[id].share = std::clamp(share, 1e-6, 1.0);
  return id;
}

void FairShare::set_share(uint64_t id, double share) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = members_.find(id); it != members_.end()) it->second.share = std::clamp(share, 1e-6, 1.0);
}

void FairShare::remove(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  members_.erase(id);
}

bool FairShare::active_locked(const Member& m, int64_t now) const {
  return m.running > 0 || (m.ever_active && now - m.last_active < options_.idle_ns);
}

int64_t FairShare::delay(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  if (it == members_.end()) return 0;
  Member& me = it->second;
  const int64_t now = now_();
  double least = std::numeric_limits<double>::infinity();
  for (const auto& [other_id, m] : members_) {
    if (other_id != id && active_locked(m, now)) least = std::min(least, m.vtime);
  }
  // Rejoining after idleness: start level with the others, not behind them.
  if (!active_locked(me, now) && least != std::numeric_limits<double>::infinity()) me.vtime = std::max(me.vtime, least);
  me.last_active = now;
  me.ever_active = true;
  if (least == std::numeric_limits<double>::infinity()) return 0;  // alone
  const double ahead = me.vtime - least - static_cast<double>(options_.slack_ns);
  // Virtual time of busy members advances about as fast as real time, so
  // being `ahead` of the slowest is about that long a wait.
  return ahead > 0 ? static_cast<int64_t>(ahead) : 0;
}

void FairShare::start(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  if (it == members_.end()) return;
  ++it->second.running;
  it->second.last_active = now_();
  it->second.ever_active = true;
}

void FairShare::charge(uint64_t id, int64_t kernel_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  if (it == members_.end()) return;
  if (it->second.running > 0) --it->second.running;
  if (kernel_ns <= 0) return;
  it->second.kernel_ns += kernel_ns;
  it->second.vtime += static_cast<double>(kernel_ns) / it->second.share;
  it->second.last_active = now_();
  it->second.ever_active = true;
}

double FairShare::virtual_time(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  return it == members_.end() ? 0 : it->second.vtime;
}

int64_t FairShare::kernel_time(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(id);
  return it == members_.end() ? 0 : it->second.kernel_ns;
}

}  // namespace rgpu
