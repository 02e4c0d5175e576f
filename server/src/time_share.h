// rgpud's own compute share on NVIDIA's driver: each launch of a context on
// a slice is timed with events and charged to the slice's share of its
// device (FairShare); a launch waits while the slice is over its share.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>

#include "rgpu/common/fair_share.h"
#include "rgpu/server/driver_table.h"

namespace rgpu::server {

// One context's launches on a slice with a share below 1 (docs/sharing.md:
// the mechanism when neither MPS nor green contexts hold the share). Kernel
// time is the GPU time between an event recorded before and one after each
// launch, collected once the second completes; kernels of other slices
// running at the same time are not subtracted, so under overlap a slice is
// charged more than its own work (it errs toward holding a slice back).
// Lifetime: the context's; destroy it before the context (its events live
// there). Thread-safety: none, the session's execution lock covers it.
class TimeShare {
 public:
  TimeShare(const DriverTable& cu, std::shared_ptr<FairShare> fair, double share);
  ~TimeShare();
  TimeShare(const TimeShare&) = delete;
  TimeShare& operator=(const TimeShare&) = delete;

  // Runs `launch` on `stream` (the context current) in the slice's turn:
  // charges launches that finished, sleeps while the slice is ahead of its
  // share, then brackets the launch with events.
  CUresult launch(CUstream stream, const std::function<CUresult()>& launch);

  // Launches timed and not yet charged (tests, logs).
  size_t pending() const { return pending_.size(); }

 private:
  struct Timed {
    CUevent start;
    CUevent stop;
  };
  // Charges finished launches, oldest first; with `all`, waits for each.
  void collect(bool all);

  const DriverTable& cu_;
  const std::shared_ptr<FairShare> fair_;
  const uint64_t member_;
  std::deque<Timed> pending_;
};

}  // namespace rgpu::server
