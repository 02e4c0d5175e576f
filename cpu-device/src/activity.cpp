// ActivityClock: busy time in buckets of 1/8 s, without a lock.
#include "activity.h"

#include <algorithm>

namespace rgpu::cpudev {

namespace {

constexpr uint64_t kCountMask = 0xffff;
constexpr uint64_t kLow32 = 0xffffffffull;

}  // namespace

uint64_t ActivityClock::now_us() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

void ActivityClock::begin(uint64_t now_us) {
  uint64_t old = state_.load(std::memory_order_relaxed);
  uint64_t next;
  do {
    uint64_t count = old & kCountMask;
    if (count == kCountMask) return;  // more than a device runs at once: our bug, never reached
    next = count == 0 ? (now_us << 16) | 1 : old + 1;
  } while (!state_.compare_exchange_weak(old, next, std::memory_order_acq_rel));
}

void ActivityClock::end(uint64_t now_us) {
  uint64_t old = state_.load(std::memory_order_relaxed);
  uint64_t next;
  do {
    uint64_t count = old & kCountMask;
    if (count == 0) return;  // an end without a begin: our bug, ignored
    next = count == 1 ? 0 : old - 1;
  } while (!state_.compare_exchange_weak(old, next, std::memory_order_acq_rel));
  // The last activity closed the busy interval that began at `since`.
  if ((old & kCountMask) == 1) add(old >> 16, now_us);
}

void ActivityClock::add(uint64_t from, uint64_t to) {
  if (to <= from) return;
  // Only the buckets a reading can still see matter.
  uint64_t last = to / kBucketUs;
  if (last >= kBuckets) from = std::max(from, (last - (kBuckets - 1)) * kBucketUs);
  for (uint64_t b = from / kBucketUs; b <= last; ++b) {
    uint64_t part = std::min(to, (b + 1) * kBucketUs) - std::max(from, b * kBucketUs);
    if (part == 0) continue;
    std::atomic<uint64_t>& slot = buckets_[b % kBuckets];
    uint64_t old = slot.load(std::memory_order_relaxed);
    uint64_t next;
    do {
      uint64_t number = old >> 32;
      if (number > (b & kLow32)) break;  // already reused for a later bucket
      next = number == (b & kLow32) ? old + part : ((b & kLow32) << 32) | part;
    } while (!slot.compare_exchange_weak(old, next, std::memory_order_acq_rel));
  }
}

unsigned ActivityClock::percent(uint64_t now_us) const {
  uint64_t current = now_us / kBucketUs;
  uint64_t first = current >= kBuckets - 1 ? current - (kBuckets - 1) : 0;
  uint64_t window_start = first * kBucketUs;
  uint64_t length = now_us - window_start;
  if (length == 0) return 0;
  uint64_t busy = 0;
  for (const auto& slot : buckets_) {
    uint64_t v = slot.load(std::memory_order_acquire);
    uint64_t number = v >> 32;
    if (number >= (first & kLow32) && number <= (current & kLow32)) busy += v & kLow32;
  }
  uint64_t state = state_.load(std::memory_order_acquire);
  if (state & kCountMask) {
    uint64_t since = std::max(state >> 16, window_start);
    if (now_us > since) busy += now_us - since;
  }
  return static_cast<unsigned>(std::min<uint64_t>(100, busy * 100 / length));
}

}  // namespace rgpu::cpudev
