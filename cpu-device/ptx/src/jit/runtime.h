// What compiled kernel code and the block runner share: the per-warp state
// the code reads and writes at fixed offsets, and the helpers it calls for
// everything rare (regrouping diverged lanes, barriers, exits, faults, the
// watchdog, instructions it hands to the interpreter's handlers).
// Private to the compiled path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../exec.h"
#include "../ir.h"

namespace rgpu::ptx::jit {

constexpr uint32_t kNoPc = 0xffffffffu;
// What rt_schedule returns instead of a pc.
constexpr uint32_t kPcDone = 0xffffffffu;
constexpr uint32_t kPcBarrier = 0xfffffffeu;
// What a compiled kernel function returns.
enum : uint32_t { kRunDone = 0, kRunBarrier = 1, kRunFault = 2 };
// Warp instructions between watchdog checks, as in the interpreter.
constexpr int64_t kWatchdogPeriod = 1 << 14;

struct Runner;

// What compiled code reads and writes, at offsetof(WarpHead, ...).
struct WarpHead {
  uint64_t* regs = nullptr;     // slot * 32 + lane, as in the interpreter
  uint32_t cur_pc = 0;          // pc of the running group
  uint32_t cur_mask = 0;        // lanes of the running group
  uint32_t wait_min = kNoPc;    // lowest pc of a waiting group
  uint32_t fresh = 0;           // 1: a new warp, all lanes at pc 0 (cur_mask)
  uint64_t executed = 0;        // thread instructions
  int64_t budget = kWatchdogPeriod;
  uint8_t* shared = nullptr;
  const uint8_t* kparams = nullptr;
  uint64_t shared_size = 0;
  uint64_t kparam_size = 0;
  uint32_t* nregs = nullptr;    // the compiler's 32-bit register file, slot * 32 + lane
  // Special registers a new warp's code starts from: per lane, id * 32 +
  // lane for ids up to kGridId (the ctaid ones aside), the same for every
  // block of the launch; and the block's ctaid.
  const uint32_t* specials = nullptr;
  uint32_t ctaid[3] = {};
  // Warp-sync instructions: lanes waiting for the rest of their member
  // mask, and lanes released to go on without them (as the interpreter).
  uint32_t parked = 0, excused = 0;
  // 1: the runner released a barrier at which every live lane waited at one
  // pc; cur_pc and cur_mask hold that group, nothing else waits.
  uint32_t resume = 0;
  // Per global or constant access instruction, kWindowWords words: the
  // extent of device memory its last miss found (lo, hi), the memory's
  // release counter (a pointer) and the count it read. An access inside
  // the extent, the counter unchanged, needs no checker call. Shared by
  // the warps of one worker; starts empty (lo == hi) for every launch.
  uint64_t* windows = nullptr;
};
constexpr uint32_t kWindowWords = 4;

// One warp: the head, and what only the helpers and the runner use.
struct WarpState : WarpHead {
  uint32_t pc[32] = {};
  uint32_t live = 0, exited = 0, blocked = 0;
  bool done = false, at_barrier = false;
  // kNoPc, or: the whole warp (every live lane, one group) waits at a
  // barrier and goes on at bar_pc; pc[] was not written for it.
  uint32_t bar_pc = kNoPc;
  uint32_t index = 0;
  std::vector<uint64_t> reg_file;
  std::vector<uint32_t> nreg_file;
  std::vector<uint8_t> lparams;
  Runner* runner = nullptr;
};

// The compiled entry: runs warp w until it is done, waits at a barrier or
// faults (kRun*).
using KernelFn = uint32_t (*)(WarpState* w);

constexpr uint32_t kLaneSpecials = kGridId + 1;
static_assert(kLaneSpecials <= 32, "CompiledKernel::specials is a 32-bit mask");

struct CompiledKernel {
  KernelFn fn = nullptr;
  uint32_t num_slots = 0;
  // The kernel's slot inits the runner does (the code starts immediates
  // and special registers itself).
  std::vector<SlotInit> inits;
  uint32_t num_windows = 0;  // WarpHead::windows entries the code uses
  uint32_t specials = 0;     // bit i: the code reads WarpHead::specials row i
  double compile_ms = 0;
};

// Helpers called from compiled code (their addresses are baked into it).
extern "C" {
uint32_t rgpu_jit_schedule(WarpState* w);
void rgpu_jit_merge(WarpState* w);
void rgpu_jit_diverge(WarpState* w, uint32_t taken, uint32_t target, uint32_t fall);
uint32_t rgpu_jit_exit(WarpState* w, uint32_t m);
void rgpu_jit_wait(WarpState* w, uint32_t m, uint32_t pc);
uint32_t rgpu_jit_barrier(WarpState* w, uint32_t m, uint32_t next_pc);
uint32_t rgpu_jit_watchdog(WarpState* w);
uint32_t rgpu_jit_op(WarpState* w, const Inst* in, uint32_t m);
uint32_t rgpu_jit_trap(WarpState* w, const Inst* in);
uint32_t rgpu_jit_warpsync(WarpState* w, const Inst* in);
uint32_t rgpu_jit_check(WarpState* w, uint64_t lo, uint64_t len, uint32_t write, uint64_t* window);
void rgpu_jit_gather(uint64_t* out, const uint64_t* addrs, uint32_t m, uint32_t size, uint32_t sext);
void rgpu_jit_scatter(const uint64_t* vals, const uint64_t* addrs, uint32_t m, uint32_t size);
}

}  // namespace rgpu::ptx::jit
