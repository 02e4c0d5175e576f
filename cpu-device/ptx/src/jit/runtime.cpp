// The block runner of the compiled path: the interpreter's scheduling rules
// (lowest pc first, waiting lanes join at their pc, barriers open when every
// live warp waits) around compiled code, and the helpers that code calls.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "jit.h"
#include "runtime.h"

namespace rgpu::ptx::jit {

Policy policy(const LaunchEnv& env) {
  if (env.jit == 2) return Policy::kBackground;
  if (env.jit >= 0) return env.jit ? Policy::kAlways : Policy::kOff;
  const char* v = getenv("RGPU_CPU_JIT");
  if (v && !strcmp(v, "0")) return Policy::kOff;
  if (v && !strcmp(v, "1")) return Policy::kAlways;
  return Policy::kHot;
}

// One worker thread's state: the block's memory, its warps, and the
// ExecCtx the interpreter's handlers run with.
struct Runner {
  LaunchState& st;
  const CompiledKernel& ck;
  ExecCtx x;
  std::vector<WarpState> warps;
  BlockMemory mem;
  std::vector<uint32_t> specials;  // per warp, WarpHead::specials
  std::vector<uint64_t> windows;   // WarpHead::windows, for every warp here

  Runner(LaunchState& s, const CompiledKernel& c) : st(s), ck(c) {}

  // The interpreter's special registers; the compiler refuses kernels that
  // read one it does not initialize.
  uint64_t special(const WarpState& w, uint32_t id, uint32_t l) const {
    return special_register(st, w.index, w.ctaid, id, l);
  }

  void setup_warp(WarpState& w, uint32_t index, const uint32_t ctaid[3], uint32_t nthreads) {
    const Function& fn = *st.kernel;
    w.runner = this;
    w.index = index;
    w.ctaid[0] = ctaid[0];
    w.ctaid[1] = ctaid[1];
    w.ctaid[2] = ctaid[2];
    const uint32_t have = nthreads > index * 32 ? nthreads - index * 32 : 0;
    const uint32_t exists = have >= 32 ? kFullMask : (1u << have) - 1;
    w.live = exists;
    w.exited = 0;
    w.blocked = 0;
    w.parked = 0;
    w.excused = 0;
    w.done = false;
    w.at_barrier = false;
    w.bar_pc = kNoPc;
    w.cur_pc = 0;
    w.cur_mask = exists;
    w.wait_min = kNoPc;
    w.fresh = 1;
    w.resume = 0;
    size_t need = static_cast<size_t>(fn.num_slots) * 32;
    if (w.reg_file.size() < need) w.reg_file.resize(need);
    w.regs = w.reg_file.data();
    if (w.nreg_file.size() < need) w.nreg_file.resize(need);
    w.nregs = w.nreg_file.data();
    size_t pneed = static_cast<size_t>(fn.lparam_bytes) * 32;
    if (w.lparams.size() < pneed) w.lparams.resize(pneed);
    w.shared = mem.shared.get();
    w.shared_size = st.shared_bytes;
    w.kparams = st.params;
    w.kparam_size = st.params_size;
    w.specials = specials.data() + static_cast<size_t>(index) * kLaneSpecials * 32;
    w.windows = windows.data();
    uint64_t* regs = w.regs;
    for (const SlotInit& si : ck.inits) {
      uint64_t* s = regs + static_cast<size_t>(si.slot) * 32;
      switch (si.kind) {
        case SlotInit::Kind::kImm:
        case SlotInit::Kind::kVarAddr:
        case SlotInit::Kind::kSharedGeneric:
        case SlotInit::Kind::kLocalAddr: {
          // The kernel's frame starts at local offset 0.
          const uint64_t v = uniform_slot_value(st, si, reinterpret_cast<uint64_t>(mem.shared.get()), 0);
          for (int l = 0; l < 32; ++l) s[l] = v;
          break;
        }
        case SlotInit::Kind::kSpecial:
          for (uint32_t l = 0; l < 32; ++l) s[l] = special(w, si.index, l);
          break;
      }
    }
  }

  void bind(WarpState& w) {
    x.regs = w.regs;
    x.lparams = w.lparams.data();
    x.lparam_stride = st.kernel->lparam_bytes;
    x.thread_base = w.index * 32;
    x.warp = nullptr;
  }

  bool run_block(uint64_t linear) {
    uint32_t ctaid[3] = {static_cast<uint32_t>(linear % st.grid.x),
                         static_cast<uint32_t>((linear / st.grid.x) % st.grid.y),
                         static_cast<uint32_t>(linear / (uint64_t{st.grid.x} * st.grid.y))};
    uint32_t nthreads = static_cast<uint32_t>(st.block.count());
    for (uint32_t i = 0; i < st.warps_per_block; ++i) setup_warp(warps[i], i, ctaid, nthreads);
    for (;;) {
      bool all_done = true;
      for (uint32_t i = 0; i < st.warps_per_block; ++i) {
        WarpState& w = warps[i];
        if (w.done || w.at_barrier) {
          all_done = all_done && w.done;
          continue;
        }
        bind(w);
        uint32_t r = ck.fn(&w);
        if (r == kRunFault) return false;
        if (r == kRunBarrier) {
          w.at_barrier = true;
          all_done = false;
        } else {
          w.done = true;
        }
      }
      if (all_done) return true;
      // Every warp is done or waiting: release the barrier.
      for (uint32_t i = 0; i < st.warps_per_block; ++i) {
        WarpState& w = warps[i];
        if (w.done) continue;
        w.at_barrier = false;
        w.blocked = 0;
        w.cur_mask = 0;
        if (w.bar_pc != kNoPc) {
          // It left together: it resumes together (rgpu_jit_schedule
          // writes pc[] from cur_pc should the code ask it).
          w.cur_pc = w.bar_pc;
          w.cur_mask = w.live;
          w.wait_min = kNoPc;
          w.resume = 1;
          w.bar_pc = kNoPc;
          continue;
        }
        // The common case, every live lane at one pc: the code resumes
        // there without asking the scheduler.
        if (w.parked == 0 && w.live) {
          uint32_t p = w.pc[__builtin_ctz(w.live)];
          bool one = true;
          for (uint32_t r = w.live; r && one; r &= r - 1) one = w.pc[__builtin_ctz(r)] == p;
          if (one) {
            w.cur_pc = p;
            w.cur_mask = w.live;
            w.wait_min = kNoPc;
            w.resume = 1;
          }
        }
      }
    }
  }

  void run() {
    if (!mem.attach(st, x, warps)) return;
    for (auto& w : warps) w.budget = kWatchdogPeriod;
    // Special registers that do not depend on the block, once per launch
    // (those the code reads).
    try {
      specials.resize(static_cast<size_t>(st.warps_per_block) * kLaneSpecials * 32);
      // Empty windows (lo == hi) whose counter pointer may still be read.
      windows.resize(size_t{ck.num_windows} * kWindowWords);
      for (size_t i = 0; i < ck.num_windows; ++i)
        windows[i * kWindowWords + 2] = reinterpret_cast<uint64_t>(&kNeverReleased);
    } catch (const std::bad_alloc&) {
      st.record(Fault::kOutOfResources, "cannot allocate block memory for " + st.kernel->name, 0);
      return;
    }
    {
      const uint32_t zero[3] = {0, 0, 0};
      for (uint32_t wi = 0; wi < st.warps_per_block; ++wi)
        for (uint32_t ids = ck.specials; ids; ids &= ids - 1) {
          const uint32_t id = static_cast<uint32_t>(__builtin_ctz(ids));
          uint32_t* p = specials.data() + (static_cast<size_t>(wi) * kLaneSpecials + id) * 32;
          for (uint32_t l = 0; l < 32; ++l) p[l] = static_cast<uint32_t>(special_register(st, wi, zero, id, l));
        }
    }
    const uint64_t blocks = st.grid.count();
    while (!st.stop.load(std::memory_order_relaxed)) {
      uint64_t b = st.next_block.fetch_add(1, std::memory_order_relaxed);
      if (b >= blocks) break;
      bool ok;
      try {
        ok = run_block(b);
      } catch (const std::bad_alloc&) {
        x.set_fault(Fault::kOutOfResources, "out of host memory for registers or parameters");
        ok = false;
      }
      if (!ok) {
        if (x.fault == Fault::kTimeout && x.message == "stopped") break;  // another block faulted
        char where[96];
        snprintf(where, sizeof(where), " (kernel %s, block %llu)", st.kernel->name.c_str(),
                 static_cast<unsigned long long>(b));
        st.record(x.fault, x.message + where, x.fault_addr);
        break;
      }
    }
    uint64_t executed = 0;
    for (const auto& w : warps) executed += w.executed;
    st.instructions.fetch_add(executed, std::memory_order_relaxed);
  }
};

void run_worker(LaunchState& st, const CompiledKernel& ck) {
  auto r = std::make_unique<Runner>(st, ck);
  r->run();
}

extern "C" {

// The interpreter's regroup: the running group's lanes take its pc, then
// the lowest pc among ready lanes runs next. Returns that pc, or kPcDone /
// kPcBarrier when no lane is ready.
uint32_t rgpu_jit_schedule(WarpState* w) {
  for (uint32_t m = w->cur_mask; m; m &= m - 1) w->pc[__builtin_ctz(m)] = w->cur_pc;
  uint32_t ready = w->live & ~w->blocked & ~w->parked;
  if (!ready && (w->live & w->parked)) {
    // Every lane that could still come waits at a barrier or is parked: the
    // parked lanes go on with the lanes that are there.
    w->excused |= w->live & w->parked;
    w->parked &= ~w->live;
    ready = w->live & ~w->blocked;
  }
  w->cur_mask = 0;
  w->wait_min = kNoPc;
  if (!ready) return w->live ? kPcBarrier : kPcDone;
  uint32_t best = kNoPc, second = kNoPc;
  for (uint32_t m = ready; m; m &= m - 1) {
    uint32_t p = w->pc[__builtin_ctz(m)];
    if (p < best) second = best, best = p;
    else if (p > best && p < second) second = p;
  }
  for (uint32_t m = ready; m; m &= m - 1) {
    int l = __builtin_ctz(m);
    if (w->pc[l] == best) w->cur_mask |= 1u << l;
  }
  w->cur_pc = best;
  w->wait_min = second;
  return best;
}

// Lanes waiting at cur_pc join the running group (the interpreter's merge).
void rgpu_jit_merge(WarpState* w) {
  uint32_t ready = w->live & ~w->blocked & ~w->cur_mask;
  uint32_t next = kNoPc;
  for (uint32_t m = ready; m; m &= m - 1) {
    int l = __builtin_ctz(m);
    if (w->pc[l] == w->cur_pc) w->cur_mask |= 1u << l;
    else if (w->pc[l] < next) next = w->pc[l];
  }
  w->wait_min = next;
}

void rgpu_jit_diverge(WarpState* w, uint32_t taken, uint32_t target, uint32_t fall) {
  for (uint32_t r = taken; r; r &= r - 1) w->pc[__builtin_ctz(r)] = target;
  for (uint32_t r = w->cur_mask & ~taken; r; r &= r - 1) w->pc[__builtin_ctz(r)] = fall;
  w->cur_mask = 0;
}

// Lanes m wait at pc while the rest of their group runs on.
void rgpu_jit_wait(WarpState* w, uint32_t m, uint32_t pc) {
  for (; m; m &= m - 1) w->pc[__builtin_ctz(m)] = pc;
}

// Returns 1 when no lane of the warp is left (rgpu_jit_schedule would say
// kPcDone).
uint32_t rgpu_jit_exit(WarpState* w, uint32_t m) {
  w->exited |= m;
  w->live &= ~m;
  if (w->live) return 0;
  w->wait_min = kNoPc;
  return 1;
}

// Returns 1 when no lane of the warp is left to run (the warp leaves for
// the barrier; rgpu_jit_schedule would say kPcBarrier), else 0.
uint32_t rgpu_jit_barrier(WarpState* w, uint32_t m, uint32_t next_pc) {
  w->blocked |= m;
  if (m == w->cur_mask && m == w->live && !w->parked) {
    // The whole warp, together: the runner resumes it at next_pc.
    w->bar_pc = next_pc;
    w->cur_mask = 0;
    w->wait_min = kNoPc;
    return 1;
  }
  for (uint32_t r = w->cur_mask; r; r &= r - 1) w->pc[__builtin_ctz(r)] = next_pc;
  w->cur_mask = 0;
  if ((w->live & ~w->blocked) || w->parked) return 0;
  w->wait_min = kNoPc;
  return 1;
}

uint32_t rgpu_jit_watchdog(WarpState* w) {
  w->budget = kWatchdogPeriod;
  Runner& r = *w->runner;
  const LaunchState& st = r.st;
  if (st.stop.load(std::memory_order_relaxed)) {
    r.x.set_fault(Fault::kTimeout, "stopped");
    return 1;
  }
  const LaunchEnv& env = *st.env;
  if (env.cancel && env.cancel->load(std::memory_order_relaxed)) {
    r.x.set_fault(Fault::kTimeout, "launch cancelled in " + st.kernel->name);
    return 1;
  }
  if (env.deadline != std::chrono::steady_clock::time_point::max() && std::chrono::steady_clock::now() > env.deadline) {
    r.x.set_fault(Fault::kTimeout, "launch timed out in " + st.kernel->name);
    return 1;
  }
  return 0;
}

// An instruction the compiler hands to the interpreter's handler; the
// registers it touches were written back to w->regs.
uint32_t rgpu_jit_op(WarpState* w, const Inst* in, uint32_t m) {
  ExecCtx& x = w->runner->x;
  in->fn(x, *in, m);
  return x.fault != Fault::kNone;
}

// A warp-sync instruction at w->cur_pc for the group w->cur_mask, whose
// registers are in the warp's file: 0 when it ran (w->cur_mask is the group
// that goes on), 1 when the group parked (schedule the next), 2 on a fault.
uint32_t rgpu_jit_warpsync(WarpState* w, const Inst* in) {
  ExecCtx& x = w->runner->x;
  uint32_t here = w->cur_mask;
  for (uint32_t r = w->parked & w->live & ~here; r; r &= r - 1)
    if (w->pc[__builtin_ctz(r)] == w->cur_pc) here |= 1u << __builtin_ctz(r);
  uint32_t g = here;
  if (in->guard != kNoSlot) {
    const uint64_t* gp = x.reg(in->guard);
    g = 0;
    for (uint32_t r = here; r; r &= r - 1) {
      int l = __builtin_ctz(r);
      g |= static_cast<uint32_t>((gp[l] & 1) ^ in->guard_neg) << l;
    }
  }
  if (g) {
    const uint64_t* mm = x.reg(in->target);
    uint32_t need = 0;
    for (uint32_t r = g; r; r &= r - 1) need |= static_cast<uint32_t>(mm[__builtin_ctz(r)]);
    if ((need & w->live & ~here) && !(g & w->excused)) {
      for (uint32_t r = here; r; r &= r - 1) {
        int l = __builtin_ctz(r);
        w->pc[l] = (g >> l) & 1 ? w->cur_pc : w->cur_pc + 1;
      }
      w->parked |= g;
      w->cur_mask = 0;
      return 1;
    }
    w->parked &= ~here;
    w->excused &= ~here;
    if (in->fn) {
      in->fn(x, *in, g);
      if (x.fault != Fault::kNone) return 2;
    }
  }
  w->cur_mask = here;
  return 0;
}

uint32_t rgpu_jit_trap(WarpState* w, const Inst* in) {
  Runner& r = *w->runner;
  if (in->kind == Kind::kTrap)
    r.x.set_fault(Fault::kTrap, "trap at line " + std::to_string(in->line) + " in " + r.st.kernel->name);
  else
    r.x.set_fault(Fault::kUnsupported, "unsupported instruction at line " + std::to_string(in->line) + " in " +
                                           r.st.kernel->name);
  return 1;
}

// The fast path of a global access: the span of the warp's access in one
// call to the checker. On false the compiled code runs the interpreter's
// handler, which checks lane by lane and names the first bad address.
uint32_t rgpu_jit_check(WarpState* w, uint64_t lo, uint64_t len, uint32_t write, uint64_t* window) {
  MemoryExtent e;
  if (!w->runner->st.check_extent(lo, len, write != 0, &e)) return 0;
  if (e.lo < e.hi) {
    window[0] = e.lo;
    window[1] = e.hi;
    window[2] = reinterpret_cast<uint64_t>(e.epoch);
    window[3] = e.seen;
  }
  return 1;
}

// Loads and stores of checked lanes, in lane order (the highest lane's store
// lands last, as in the interpreter).
void rgpu_jit_gather(uint64_t* out, const uint64_t* addrs, uint32_t m, uint32_t size, uint32_t sext) {
  for (; m; m &= m - 1) {
    int l = __builtin_ctz(m);
    const void* p = reinterpret_cast<const void*>(addrs[l]);
    switch (size) {
      case 1: { int8_t v; memcpy(&v, p, 1); out[l] = sext ? static_cast<uint64_t>(int64_t{v}) : static_cast<uint8_t>(v); break; }
      case 2: { int16_t v; memcpy(&v, p, 2); out[l] = sext ? static_cast<uint64_t>(int64_t{v}) : static_cast<uint16_t>(v); break; }
      case 4: { int32_t v; memcpy(&v, p, 4); out[l] = sext ? static_cast<uint64_t>(int64_t{v}) : static_cast<uint32_t>(v); break; }
      default: memcpy(&out[l], p, 8); break;
    }
  }
}

void rgpu_jit_scatter(const uint64_t* vals, const uint64_t* addrs, uint32_t m, uint32_t size) {
  for (; m; m &= m - 1) {
    int l = __builtin_ctz(m);
    memcpy(reinterpret_cast<void*>(addrs[l]), &vals[l], size);  // little-endian: the low bytes
  }
}

}  // extern "C"

}  // namespace rgpu::ptx::jit
