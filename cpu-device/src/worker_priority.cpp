#include "worker_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace rgpu::cpudev {
namespace {
std::atomic<int> g_nice{0};
}  // namespace

void set_worker_nice(int nice) { g_nice.store(nice < 0 ? 0 : nice > 19 ? 19 : nice, std::memory_order_relaxed); }

void lower_worker_priority() {
  const int want = g_nice.load(std::memory_order_relaxed);
  if (want == 0) return;
  // Linux keeps a niceness per thread: PRIO_PROCESS with a thread id sets it
  // for this thread alone, and threads it starts (OpenMP's, oneDNN's) inherit it.
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, tid);
  if (errno == 0 && now >= want) return;
  (void)setpriority(PRIO_PROCESS, tid, want);
}

}  // namespace rgpu::cpudev
