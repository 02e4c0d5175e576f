// Launch-wide state shared by the worker threads of one launch, and the
// entry point that runs one block. Private to rgpu_ptx.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "ir.h"

namespace rgpu::ptx {

// Read-only during the launch except for the atomics and the fault record.
struct ExecCtx;
struct Inst;
// Host addresses of an access by lanes `m` (ops_mem.cpp's checks); false with
// the fault set when one is refused.
bool resolve_access(ExecCtx& x, const Inst& in, uint32_t m, uint32_t size, bool write, uint8_t** host);
// Host addresses of `lines` (at most 32) accesses of `bytes` each, line l at
// addr + l * pitch, in the global, shared or generic space of `in`, each
// aligned to `align`; false with the fault set when one is refused.
bool resolve_lines(ExecCtx& x, const Inst& in, uint64_t addr, uint64_t pitch, uint32_t lines, uint32_t bytes,
                   uint32_t align, bool write, uint8_t** host);

struct LaunchState {
  const ProgramImpl* prog = nullptr;
  const KernelUnit* unit = nullptr;
  const Function* kernel = nullptr;  // unit->functions[0]
  const LaunchEnv* env = nullptr;
  Dim3 grid, block;
  uint32_t warps_per_block = 0;
  uint32_t shared_bytes = 0;      // static + dynamic + reserved, per block
  uint32_t user_shared_bytes = 0;  // static + dynamic
  uint32_t dynamic_shared_bytes = 0;
  uint32_t reserved_offset = 0;    // start of the reserved region (kReservedSmemBytes)
  uint32_t local_stride = 0;      // per thread
  const uint8_t* params = nullptr;
  uint32_t params_size = 0;
  std::vector<uint64_t> var_addr;  // per module variable (0 if none)

  std::atomic<uint64_t> next_block{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> instructions{0};
  std::mutex fault_mu;
  LaunchResult first_fault;        // guarded by fault_mu

  bool check(uint64_t addr, size_t size, bool write) const {
    if (addr < 65536) return false;  // the null page is never device memory
    return !env->checker || env->checker(addr, size, write);
  }
  // check(), and on true the extent its answer holds for: `out` stays
  // empty (lo == hi) when the caller gave no extent checker.
  bool check_extent(uint64_t addr, size_t size, bool write, MemoryExtent* out) const {
    *out = MemoryExtent{};
    if (addr < 65536) return false;
    if (!env->checker) {
      *out = MemoryExtent{65536, ~0ull, &kNeverReleased, 0};  // every address is accepted
      return true;
    }
    if (env->extent) {
      bool ok = env->extent(addr, size, write, out);
      if (!ok || out->lo < 65536 || !out->epoch || addr < out->lo || out->hi < addr || size > out->hi - addr) {
        *out = MemoryExtent{};  // an extent that does not cover the access is not used
      }
      return ok;
    }
    return env->checker(addr, size, write);
  }
  void record(Fault f, const std::string& msg, uint64_t addr) {
    std::lock_guard<std::mutex> lock(fault_mu);
    if (first_fault.fault == Fault::kNone) {
      first_fault.fault = f;
      first_fault.message = msg;
      first_fault.address = addr;
    }
    stop.store(true, std::memory_order_relaxed);
  }
};

// The value of special register `id` for lane l of warp `warp` of the block
// `ctaid` in launch st: one definition for the interpreter and the compiled
// path (which refuses kernels that read registers it cannot initialize).
inline uint64_t special_register(const LaunchState& st, uint32_t warp, const uint32_t ctaid[3], uint32_t id,
                                 uint32_t l) {
  const Dim3& b = st.block;
  const uint32_t t = warp * 32 + l;
  switch (id) {
    case kTidX: return t % b.x;
    case kTidY: return (t / b.x) % b.y;
    case kTidZ: return t / (b.x * b.y);
    case kNtidX: return b.x;
    case kNtidY: return b.y;
    case kNtidZ: return b.z;
    case kCtaidX: return ctaid[0];
    case kCtaidY: return ctaid[1];
    case kCtaidZ: return ctaid[2];
    case kNctaidX: return st.grid.x;
    case kNctaidY: return st.grid.y;
    case kNctaidZ: return st.grid.z;
    case kLaneId: return l;
    case kWarpId: return warp;
    case kNWarpId: return st.warps_per_block;
    case kLanemaskEq: return 1u << l;
    case kLanemaskLe: return static_cast<uint32_t>((2ull << l) - 1);
    case kLanemaskLt: return (1u << l) - 1;
    case kLanemaskGe: return ~((1u << l) - 1);
    case kLanemaskGt: return static_cast<uint32_t>(~((2ull << l) - 1));
    case kSmId: return 0;
    case kNSmId: return 1;
    case kGridId: return 1;
    case kDynamicSmem: return st.dynamic_shared_bytes;
    case kTotalSmem: return st.user_shared_bytes;
    case kAggrSmem: return st.user_shared_bytes + kReservedSmemBytes;
    case kReservedBegin:
    case kReserved0: return st.reserved_offset;
    case kReserved1: return st.reserved_offset + kReservedSmemBytes / 2;
    case kReservedEnd: return st.reserved_offset + kReservedSmemBytes;
    case kReservedCap: return kReservedSmemBytes;
    case kOne: return 1;
    default: return 0;
  }
}

// The value every lane of a frame's slot starts with for the lane-uniform
// kinds of initialization (kImm, kVarAddr, kSharedGeneric, kLocalAddr), in a
// block whose shared memory starts at `shared_base` and a frame whose local
// memory starts at offset `local_base`; kSpecial depends on the lane
// (special_register). One definition for the interpreter and the compiled
// path.
inline uint64_t uniform_slot_value(const LaunchState& st, const SlotInit& si, uint64_t shared_base,
                                   uint64_t local_base) {
  switch (si.kind) {
    case SlotInit::Kind::kImm: return si.value;
    case SlotInit::Kind::kVarAddr: {
      const uint64_t v = si.index < st.var_addr.size() ? st.var_addr[si.index] : 0;
      return v ? v + si.value : 0;
    }
    case SlotInit::Kind::kSharedGeneric: return shared_base + si.value;
    case SlotInit::Kind::kLocalAddr: return local_base + si.value;
    case SlotInit::Kind::kSpecial: return 0;
  }
  return 0;
}

// A worker's block memory, shared by the interpreter's and the compiled
// path's block runners: shared and local memory sized for the launch, and
// the ExecCtx fields that point into them and at the launch.
struct BlockMemory {
  std::unique_ptr<uint8_t[]> shared;
  std::unique_ptr<uint8_t[]> local;
  // Sizes the runner's `warps` and allocates both memories (aligned to 16
  // bytes, enough for every access size), then points `x` at them; false,
  // with the launch's fault recorded, when the host has not the memory.
  template <class Warps>
  bool attach(LaunchState& st, ExecCtx& x, Warps& warps) {
    try {
      warps.resize(st.warps_per_block);
      allocate(st);
    } catch (const std::bad_alloc&) {
      out_of_memory(st);
      return false;
    }
    point(st, x);
    return true;
  }

 private:
  void allocate(const LaunchState& st);
  static void out_of_memory(LaunchState& st);
  void point(LaunchState& st, ExecCtx& x) const;
};

// Runs blocks from st.next_block until none are left or st.stop is set.
// One call per worker thread.
void run_worker(LaunchState& st);

// Formats a device printf: fmt and the packed argument buffer as nvcc lays
// it out (each argument aligned to its size). `read` fetches device memory
// safely; false on a bad address.
std::string format_printf(const std::string& fmt, uint64_t args_addr,
                          const std::function<bool(uint64_t, void*, size_t)>& read, bool* ok);

}  // namespace rgpu::ptx
