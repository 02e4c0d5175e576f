// ActivityClock: how much of the last second a device spent doing something
// (running kernels, or copying), as NVML's utilization rates report it.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace rgpu::cpudev {

// Counts the time during which one or more activities (kernels of any
// stream, or copies) were running: overlapping activities count once. Busy
// time is kept in 8 buckets of 1/8 s; percent() reports the share of the
// sample period that was busy, the period being the bucket in progress and
// the 7 before it (between 7/8 s and 1 s). Times are microseconds on any
// monotonic clock (the Span uses steady_clock; tests pass their own).
// Lock-free: begin() and end() are a compare-and-swap or two, cheap enough
// for every launch and copy. A reading taken while an activity ends may
// count its last moments twice or not yet; percent() clamps to 0..100.
// Thread safety: every method is thread-safe.
class ActivityClock {
 public:
  static constexpr uint64_t kBucketUs = 125'000;
  static constexpr unsigned kBuckets = 8;

  void begin(uint64_t now_us);
  void end(uint64_t now_us);
  // The busy share of the sample period ending at now_us, 0..100.
  unsigned percent(uint64_t now_us) const;

  // Microseconds on steady_clock, the clock Span and the driver use.
  static uint64_t now_us();

  // Marks an activity for its lifetime (begin at construction, end at
  // destruction) on steady_clock. A null clock marks nothing.
  class Span {
   public:
    explicit Span(ActivityClock* clock) : clock_(clock) {
      if (clock_) clock_->begin(now_us());
    }
    ~Span() {
      if (clock_) clock_->end(now_us());
    }
    Span(const Span&) = delete;
    Span& operator=(const Span&) = delete;

   private:
    ActivityClock* clock_;
  };

 private:
  // Adds the busy interval [from, to) to the buckets it covers.
  void add(uint64_t from, uint64_t to);

  // Running activities (low 16 bits) and, while any runs, when the first of
  // them began (high 48 bits, microseconds): one word, so that the last end
  // reads the start of the very interval it closes.
  std::atomic<uint64_t> state_{0};
  // Per bucket: its number (now / kBucketUs) in the high 32 bits and its
  // busy microseconds in the low 32; a bucket of an older number is stale
  // and is restarted by the next add.
  std::array<std::atomic<uint64_t>, kBuckets> buckets_{};
};

}  // namespace rgpu::cpudev
