// Ledger: device memory ranges by owning context, and bytes held per device.
#include "ledger.h"

namespace rgpu::server {

uint32_t Ledger::device_of(uint64_t ctx) const {
  auto it = devices_.find(ctx);
  return it == devices_.end() ? 0 : it->second;
}

uint64_t Ledger::bytes_held_by(uint64_t ctx) const {
  auto it = held_.find(device_of(ctx));
  return it == held_.end() ? 0 : it->second;
}

bool Ledger::fits(uint64_t ctx, uint64_t size) const {
  const uint64_t quota = this->quota(device_of(ctx));
  if (quota == 0) return true;
  const uint64_t held = bytes_held_by(ctx);
  return held <= quota && size <= quota - held;  // in use + size <= quota, without overflow
}

void Ledger::count(uint64_t ctx, uint64_t size, bool add) {
  const uint32_t device = device_of(ctx);
  uint64_t& held = held_[device];
  held = add ? held + size : held - size;
  if (device < published_.size()) published_[device].store(held, std::memory_order_relaxed);
  bytes_held_ = add ? bytes_held_ + size : bytes_held_ - size;
}

bool Ledger::charge_module(uint64_t ctx, uint64_t module, uint64_t bytes) {
  if (module == 0 || images_.count(module) != 0 || !fits(ctx, bytes)) return false;
  images_[module] = Charge{ctx, bytes};
  count(ctx, bytes, true);
  return true;
}

bool Ledger::grow_module(uint64_t module, uint64_t bytes) {
  auto it = images_.find(module);
  if (it == images_.end() || !fits(it->second.ctx, bytes)) return false;
  it->second.bytes += bytes;
  count(it->second.ctx, bytes, true);
  return true;
}

bool Ledger::add(uint64_t ctx, uint64_t base, uint64_t size, uint64_t module) {
  if (size == 0 || base + size < base) return false;
  auto next = ranges_.lower_bound(base);
  if (next != ranges_.end() && next->first < base + size) return false;
  if (next != ranges_.begin()) {
    const Range& prev = std::prev(next)->second;
    if (prev.base + prev.size > base) return false;
  }
  ranges_.emplace_hint(next, base, Range{base, size, ctx, module});
  if (module == 0) count(ctx, size, true);
  return true;
}

bool Ledger::remove_allocation(uint64_t ctx, uint64_t base) {
  auto it = ranges_.find(base);
  if (it == ranges_.end() || it->second.ctx != ctx || it->second.module != 0) return false;
  count(ctx, it->second.size, false);
  ranges_.erase(it);
  return true;
}

std::optional<Ledger::Range> Ledger::find(uint64_t ptr) const {
  auto it = ranges_.upper_bound(ptr);
  if (it == ranges_.begin()) return std::nullopt;
  const Range& r = std::prev(it)->second;
  if (ptr - r.base >= r.size) return std::nullopt;
  return r;
}

bool Ledger::check(uint64_t ctx, uint64_t ptr, uint64_t size) const {
  auto r = find(ptr);
  if (!r || r->ctx != ctx) return false;
  return size <= r->base + r->size - ptr;
}

void Ledger::drop_context(uint64_t ctx) {
  for (auto it = ranges_.begin(); it != ranges_.end();) {
    if (it->second.ctx != ctx) {
      ++it;
      continue;
    }
    if (it->second.module == 0) count(ctx, it->second.size, false);
    it = ranges_.erase(it);
  }
  devices_.erase(ctx);
}

void Ledger::drop_module(uint64_t module) {
  if (auto it = images_.find(module); it != images_.end()) {
    count(it->second.ctx, it->second.bytes, false);
    images_.erase(it);
  }
  for (auto it = ranges_.begin(); it != ranges_.end();) {
    it = module != 0 && it->second.module == module ? ranges_.erase(it) : std::next(it);
  }
}

void Ledger::clear() {
  ranges_.clear();
  devices_.clear();
  held_.clear();
  for (auto& p : published_) p.store(0, std::memory_order_relaxed);
  images_.clear();
  bytes_held_ = 0;
}

}  // namespace rgpu::server
