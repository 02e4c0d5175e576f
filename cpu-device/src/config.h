// Configuration of the CPU device, read from the environment at cuInit.
#pragma once

#include <cstdint>
#include <string>

#include "rgpu/common/status.h"

namespace rgpu::cpudev {

// Plain values. Thread-compatible.
struct Config {
  int devices = 1;                        // RGPU_CPU_DEVICES
  uint64_t memory_bytes = 4ull << 30;     // RGPU_CPU_DEVICE_MEMORY, per device
  int threads = 1;                        // RGPU_CPU_THREADS (kernel workers)
  int stream_workers = 4;                 // RGPU_CPU_STREAM_WORKERS (threads running streams)
  uint64_t kernel_timeout_ms = 0;         // RGPU_CPU_KERNEL_TIMEOUT_MS (0: no watchdog)
  uint64_t program_cache_bytes = 1ull << 30;  // RGPU_CPU_PROGRAM_CACHE: PTX text kept parsed
  // RGPU_CPU_WORKER_NICE: niceness (0..19) of the threads that run kernels,
  // streams and library work; 0 leaves them at the process's. A busy device
  // then leaves the CPU to the threads that answer clients (worker_priority.h).
  int worker_nice = 10;
};

// Reads the variables above through `getenv_fn`; unset ones take defaults
// (threads: the hardware concurrency; stream_workers: twice that, at least
// 4). A malformed value is an error.
Result<Config> config_from_env(const char* (*getenv_fn)(const char*));

}  // namespace rgpu::cpudev
