// The scheduler's time source: a seam, so tests and the simulator run on
// simulated time and the service on the system clock.
#pragma once

#include "rgpu/pool/model.h"

namespace rgpu::pool {

// Interface. Implementations must be safe to call from the thread that
// calls the scheduler.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual Millis now() const = 0;
};

// Wall time, milliseconds since the Unix epoch. Thread-safe.
class SystemClock final : public Clock {
 public:
  Millis now() const override;
};

// Time that moves only when told to. Thread-compatible.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Millis start = 0) : now_(start) {}
  Millis now() const override { return now_; }
  void set(Millis t) { now_ = t; }
  void advance(Millis d) { now_ += d; }

 private:
  Millis now_;
};

}  // namespace rgpu::pool
