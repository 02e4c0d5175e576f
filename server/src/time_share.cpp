// TimeShare: event-timed launches charged to a slice's fair share.
#include "time_share.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace rgpu::server {
namespace {

// Launches timed but not charged at most: past it the oldest is waited for,
// so a slice cannot escape its share by queueing without end.
constexpr size_t kMaxPending = 256;
// A waiting launch looks again this often.
constexpr int64_t kWaitStepNs = 1'000'000;

}  // namespace

TimeShare::TimeShare(const DriverTable& cu, std::shared_ptr<FairShare> fair, double share)
    : cu_(cu), fair_(std::move(fair)), member_(fair_->add(share)) {}

TimeShare::~TimeShare() {
  for (Timed& t : pending_) {
    cu_.cuEventDestroy(t.start);
    cu_.cuEventDestroy(t.stop);
  }
  fair_->remove(member_);
}

void TimeShare::collect(bool all) {
  while (!pending_.empty()) {
    Timed& t = pending_.front();
    if (all) cu_.cuEventSynchronize(t.stop);
    if (cu_.cuEventQuery(t.stop) != CUDA_SUCCESS) return;
    float ms = 0;
    if (cu_.cuEventElapsedTime(&ms, t.start, t.stop) == CUDA_SUCCESS && ms > 0) {
      fair_->charge(member_, static_cast<int64_t>(static_cast<double>(ms) * 1e6));
    }
    cu_.cuEventDestroy(t.start);
    cu_.cuEventDestroy(t.stop);
    pending_.pop_front();
  }
}

CUresult TimeShare::launch(CUstream stream, const std::function<CUresult()>& launch) {
  collect(false);
  if (pending_.size() >= kMaxPending) {
    // Wait for the oldest only.
    cu_.cuEventSynchronize(pending_.front().stop);
    collect(false);
  }
  for (int64_t wait = fair_->delay(member_); wait > 0; wait = fair_->delay(member_)) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min(wait, kWaitStepNs)));
    collect(false);
  }
  Timed t{};
  if (cu_.cuEventCreate(&t.start, CU_EVENT_DEFAULT) != CUDA_SUCCESS) return launch();
  if (cu_.cuEventCreate(&t.stop, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
    cu_.cuEventDestroy(t.start);
    return launch();
  }
  cu_.cuEventRecord(t.start, stream);
  const CUresult r = launch();
  if (r != CUDA_SUCCESS || cu_.cuEventRecord(t.stop, stream) != CUDA_SUCCESS) {
    cu_.cuEventDestroy(t.start);
    cu_.cuEventDestroy(t.stop);
    return r;
  }
  pending_.push_back(t);
  fair_->start(member_);  // charged in collect()
  return r;
}

}  // namespace rgpu::server
