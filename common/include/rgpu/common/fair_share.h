// FairShare: divides one device's compute among members (the contexts of a
// device's slices) by their shares, from the kernel time each was charged.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace rgpu {

// Weighted fair sharing by virtual time: a member's virtual time grows by
// the kernel time it is charged divided by its share, and a member may start
// its next launch only while its virtual time is within `slack` of the
// smallest among the members active now. Over any stretch in which several
// members keep the device busy, their kernel times therefore stay in the
// ratio of their shares (to within one launch and the slack); a member alone
// is never held back. A member is active while a launch of it runs and for
// `idle` after its last launch; one that was idle rejoins at
// the smallest active virtual time, so time it did not use is not banked.
// The kernel time is whatever the caller measures: the CPU time of a
// launch's threads on the CPU device, event time on a GPU.
// Lifetime: plain object; the clock outlives it. Thread-safe.
class FairShare {
 public:
  using Clock = std::function<int64_t()>;  // monotonic nanoseconds
  struct Options {
    int64_t slack_ns = 5'000'000;   // how far ahead of the others a member may run
    int64_t idle_ns = 200'000'000;  // no launch for this long: not active
  };

  explicit FairShare(Clock now, Options options);
  explicit FairShare(Clock now) : FairShare(std::move(now), Options{}) {}
  // The steady clock, for the real thing.
  static int64_t steady_now();

  // A new member with `share` (above 0, at most 1); returns its id (never 0).
  uint64_t add(double share);
  void set_share(uint64_t id, double share);
  void remove(uint64_t id);
  // How long, in nanoseconds, member `id` should wait before its next
  // launch: 0 when it may start now. Marks it active. An unknown id: 0.
  int64_t delay(uint64_t id);
  // Member `id` started a launch: it stays active until the launch is
  // charged, however long it runs (a slow launch must not let the others
  // run ahead unchecked).
  void start(uint64_t id);
  // Charges `kernel_ns` of kernel time to member `id` for a launch it
  // started that has finished.
  void charge(uint64_t id, int64_t kernel_ns);
  // The member's virtual time and kernel time so far (tests, logs).
  double virtual_time(uint64_t id) const;
  int64_t kernel_time(uint64_t id) const;

 private:
  struct Member {
    double share = 1;
    double vtime = 0;        // kernel ns / share
    int64_t kernel_ns = 0;
    int64_t last_active = 0;
    int64_t running = 0;     // launches started and not yet charged
    bool ever_active = false;
  };
  bool active_locked(const Member& m, int64_t now) const;

  const Clock now_;
  const Options options_;
  mutable std::mutex mu_;
  std::map<uint64_t, Member> members_;
  uint64_t next_id_ = 1;
};

}  // namespace rgpu
