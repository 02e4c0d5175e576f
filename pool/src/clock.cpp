// The system clock, in the pool's unit.
#include "rgpu/pool/clock.h"

#include <chrono>

namespace rgpu::pool {

Millis SystemClock::now() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace rgpu::pool
