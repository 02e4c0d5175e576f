// The warp scheduler: runs the warps of a block in lockstep groups (lowest
// PC first, so diverged lanes meet again at join points), handles calls,
// barriers, exit and traps, and spreads blocks over worker threads.
#include "exec.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <new>

namespace rgpu::ptx {
namespace {

constexpr uint32_t kNoPc = 0xffffffffu;
// Register slots (x 32 lanes x 8 bytes) one warp's call stack may use: 64 MiB.
constexpr size_t kMaxWarpRegs = size_t{8} << 20;

struct Frame {
  const Function* fn = nullptr;
  size_t reg_base = 0;      // in Warp::regs, u64 units
  size_t lparam_base = 0;   // in Warp::lparams, bytes
  uint32_t local_base = 0;  // per-thread local offset of this frame's .local data
  uint32_t pc[32] = {};
  uint32_t live = 0;        // lanes still running in this frame
  uint32_t returned = 0;    // lanes that executed ret
  uint32_t cur_pc = 0, cur_mask = 0;
  uint32_t wait_min = kNoPc;
  uint32_t call_site = 0;   // caller's CallSite index (frames above the first)
  uint32_t call_pc = 0;     // caller's pc of the call
};

struct Warp {
  uint32_t index = 0;
  uint32_t exited = 0;
  uint32_t blocked = 0;     // lanes waiting at a barrier
  // Warp-sync instructions (Kind::kWarpSync): lanes waiting there for the
  // rest of their membermask, and lanes released to go on without them.
  uint32_t parked = 0;
  uint32_t excused = 0;
  bool done = false;
  bool at_barrier = false;
  std::vector<Frame> frames;
  size_t depth = 0;         // frames in use
  std::vector<uint64_t> regs;
  std::vector<uint8_t> lparams;
  uint32_t local_sp = 0;
  uint32_t ctaid[3] = {};
  // bar.red waiting for the barrier to open: destination slot and lanes.
  uint32_t red_slot = kNoSlot;
  uint32_t red_lanes = 0;
  uint8_t red_mode = 0;
};

enum class Stop { kDone, kBarrier, kFault, kYield };

struct Worker {
  LaunchState& st;
  ExecCtx x;
  std::vector<Warp> warps;
  BlockMemory mem;
  uint64_t executed = 0;
  uint64_t until_check = 0;
  // Block-wide bar.red accumulators, reset when a barrier opens.
  uint32_t red_count = 0;
  bool red_all = true, red_any = false;

  explicit Worker(LaunchState& s) : st(s) {}

  // The value of special register `id` for lane l of warp w.
  uint64_t special(const Warp& w, uint32_t id, uint32_t l) const {
    return special_register(st, w.index, w.ctaid, id, l);
  }

  // Fills a frame's slots from the function's init list.
  void init_frame(Warp& w, Frame& f) {
    const Function& fn = *f.fn;
    size_t need = f.reg_base + static_cast<size_t>(fn.num_slots) * 32;
    if (w.regs.size() < need) w.regs.resize(need);
    uint64_t* regs = w.regs.data() + f.reg_base;
    for (const SlotInit& si : fn.inits) {
      uint64_t* s = regs + static_cast<size_t>(si.slot) * 32;
      if (si.kind == SlotInit::Kind::kSpecial) {
        for (uint32_t l = 0; l < 32; ++l) s[l] = special(w, si.index, l);
      } else {
        const uint64_t v = uniform_slot_value(st, si, reinterpret_cast<uint64_t>(mem.shared.get()), f.local_base);
        for (int l = 0; l < 32; ++l) s[l] = v;
      }
    }
    size_t pneed = f.lparam_base + static_cast<size_t>(fn.lparam_bytes) * 32;
    if (w.lparams.size() < pneed) w.lparams.resize(pneed);
  }

  void bind(Warp& w) {
    Frame& f = w.frames[w.depth - 1];
    x.regs = w.regs.data() + f.reg_base;
    x.lparams = w.lparams.data() + f.lparam_base;
    x.lparam_stride = f.fn->lparam_bytes;
    x.thread_base = w.index * 32;
    x.warp = nullptr;
  }

  static void regroup(Warp& w, Frame& f) {
    for (uint32_t m = f.cur_mask; m; m &= m - 1) f.pc[__builtin_ctz(m)] = f.cur_pc;
    uint32_t ready = f.live & ~w.blocked & ~w.parked;
    if (!ready && (f.live & w.parked)) {
      // Every lane that could still come waits at a barrier or is parked at
      // a warp-sync point: the missing lanes cannot arrive (they wait at
      // bar.sync, or passed the point), so the parked lanes go on with the
      // lanes that are there.
      w.excused |= f.live & w.parked;
      w.parked &= ~f.live;
      ready = f.live & ~w.blocked;
    }
    f.cur_mask = 0;
    f.wait_min = kNoPc;
    if (!ready) return;
    uint32_t best = kNoPc, second = kNoPc;
    for (uint32_t m = ready; m; m &= m - 1) {
      uint32_t p = f.pc[__builtin_ctz(m)];
      if (p < best) second = best, best = p;
      else if (p > best && p < second) second = p;
    }
    for (uint32_t m = ready; m; m &= m - 1) {
      int l = __builtin_ctz(m);
      if (f.pc[l] == best) f.cur_mask |= 1u << l;
    }
    f.cur_pc = best;
    f.wait_min = second;
  }

  static void merge(Warp& w, Frame& f) {
    uint32_t ready = f.live & ~w.blocked & ~f.cur_mask;
    uint32_t next = kNoPc;
    for (uint32_t m = ready; m; m &= m - 1) {
      int l = __builtin_ctz(m);
      if (f.pc[l] == f.cur_pc) f.cur_mask |= 1u << l;
      else if (f.pc[l] < next) next = f.pc[l];
    }
    f.wait_min = next;
  }

  bool fault(Fault kind, const std::string& msg, uint64_t addr = 0) {
    x.set_fault(kind, msg, addr);
    return false;
  }

  // Pops finished frames; false when the warp has no lanes left at all.
  bool unwind(Warp& w) {
    for (;;) {
      Frame& f = w.frames[w.depth - 1];
      if (f.live != 0) return true;
      if (w.depth == 1) {
        w.done = true;
        return false;
      }
      // Return to the caller: copy return values, resume after the call.
      Frame& c = w.frames[w.depth - 2];
      uint32_t back = f.returned & ~w.exited;
      const CallSite& cs = c.fn->calls[f.call_site];
      uint8_t* from = w.lparams.data() + f.lparam_base;
      uint8_t* to = w.lparams.data() + c.lparam_base;
      for (uint32_t m = back; m; m &= m - 1) {
        int l = __builtin_ctz(m);
        for (const auto& cp : cs.rets)
          memcpy(to + static_cast<size_t>(l) * c.fn->lparam_bytes + cp.to,
                 from + static_cast<size_t>(l) * f.fn->lparam_bytes + cp.from, cp.size);
        c.pc[l] = f.call_pc + 1;
      }
      w.local_sp = f.local_base;
      --w.depth;
      c.live &= ~w.exited;
      c.cur_mask = 0;
      regroup(w, c);
      bind(w);
    }
  }

  bool call(Warp& w, const Inst& in, uint32_t m) {
    Frame& c = w.frames[w.depth - 1];
    const CallSite& cs = c.fn->calls[in.target];
    const Function* callee = &st.unit->functions[static_cast<size_t>(cs.callee)];
    if (w.depth >= 1024) return fault(Fault::kIllegalAddress, "call stack overflow at line " + std::to_string(in.line));
    {
      const Frame& top = w.frames[w.depth - 1];
      size_t regs_end = top.reg_base + static_cast<size_t>(top.fn->num_slots) * 32 + size_t{callee->num_slots} * 32;
      if (regs_end > kMaxWarpRegs)
        return fault(Fault::kOutOfResources, "register stack overflow calling " + callee->name + " at line " +
                                                 std::to_string(in.line));
    }
    // Lanes of the group that do not call wait after the call.
    for (uint32_t r = c.cur_mask & ~m; r; r &= r - 1) c.pc[__builtin_ctz(r)] = c.cur_pc + 1;
    for (uint32_t r = m; r; r &= r - 1) c.pc[__builtin_ctz(r)] = c.cur_pc;
    uint32_t call_pc = c.cur_pc;
    c.cur_mask = 0;
    if (w.frames.size() <= w.depth) w.frames.emplace_back();
    Frame& caller = w.frames[w.depth - 1];
    Frame& f = w.frames[w.depth];
    f = Frame{};
    f.fn = callee;
    f.reg_base = caller.reg_base + static_cast<size_t>(caller.fn->num_slots) * 32;
    f.lparam_base = caller.lparam_base + static_cast<size_t>(caller.fn->lparam_bytes) * 32;
    f.local_base = w.local_sp;
    if (uint64_t{w.local_sp} + callee->local_bytes > st.local_stride)
      return fault(Fault::kIllegalAddress, "local memory stack overflow calling " + callee->name + " at line " +
                                               std::to_string(in.line));
    w.local_sp += callee->local_bytes;
    f.live = m;
    f.cur_mask = m;
    f.cur_pc = 0;
    f.call_site = in.target;
    f.call_pc = call_pc;
    ++w.depth;
    init_frame(w, f);
    Frame& cf = w.frames[w.depth - 2];
    uint8_t* from = w.lparams.data() + cf.lparam_base;
    uint8_t* to = w.lparams.data() + f.lparam_base;
    for (uint32_t r = m; r; r &= r - 1) {
      int l = __builtin_ctz(r);
      for (const auto& cp : cs.args)
        memcpy(to + static_cast<size_t>(l) * callee->lparam_bytes + cp.to,
               from + static_cast<size_t>(l) * cf.fn->lparam_bytes + cp.from, cp.size);
    }
    bind(w);
    return true;
  }

  // Reads device memory for builtins (printf, assert): generic addresses.
  bool read_generic(uint64_t addr, void* out, size_t n) {
    uint64_t sh = reinterpret_cast<uint64_t>(x.shared);
    uint64_t lo = reinterpret_cast<uint64_t>(x.local);
    bool inside = (x.shared && addr >= sh && addr - sh + n <= x.shared_size) ||
                  (x.local && addr >= lo && addr - lo + n <= x.local_total);
    if (!inside && !st.check(addr, n, false)) return false;
    memcpy(out, reinterpret_cast<const void*>(addr), n);
    return true;
  }
  bool read_string(uint64_t addr, std::string* s) {
    for (size_t i = 0; i < 65536; ++i) {
      char ch;
      if (!read_generic(addr + i, &ch, 1)) return false;
      if (ch == 0) return true;
      s->push_back(ch);
    }
    return true;
  }

  bool builtin(Warp& w, const Inst& in, uint32_t m) {
    Frame& f = w.frames[w.depth - 1];
    const CallSite& cs = f.fn->calls[in.target];
    auto arg64 = [&](int l, size_t k) -> uint64_t {
      uint64_t v = 0;
      if (k < cs.args.size())
        memcpy(&v, x.lparams + static_cast<size_t>(l) * x.lparam_stride + cs.args[k].from, std::min<uint32_t>(8, cs.args[k].size));
      return v;
    };
    for (uint32_t r = m; r; r &= r - 1) {
      int l = __builtin_ctz(r);
      if (cs.builtin == 1) {
        std::string fmt;
        if (!read_string(arg64(l, 0), &fmt))
          return fault(Fault::kIllegalAddress, "printf format string at a bad address, line " + std::to_string(in.line),
                       arg64(l, 0));
        bool ok = true;
        std::string text = format_printf(fmt, arg64(l, 1),
                                         [&](uint64_t a, void* o, size_t n) { return read_generic(a, o, n); }, &ok);
        if (!ok) return fault(Fault::kIllegalAddress, "printf arguments at a bad address, line " + std::to_string(in.line));
        if (st.env->printf_sink) st.env->printf_sink(text);
        else fwrite(text.data(), 1, text.size(), stdout);
        int32_t ret = static_cast<int32_t>(text.size());
        for (const auto& cp : cs.rets)
          memcpy(x.lparams + static_cast<size_t>(l) * x.lparam_stride + cp.to, &ret, std::min<uint32_t>(4, cp.size));
      } else if (cs.builtin == 2) {
        // Every failing thread of the group prints its line, then the launch traps.
        std::string first;
        for (uint32_t q = r; q; q &= q - 1) {
          int k = __builtin_ctz(q);
          std::string msg, file, func;
          read_string(arg64(k, 0), &msg);
          read_string(arg64(k, 1), &file);
          read_string(arg64(k, 3), &func);
          uint32_t line = static_cast<uint32_t>(arg64(k, 2));
          std::string text = file + ":" + std::to_string(line) + ": " + func + ": block: [" +
                             std::to_string(w.ctaid[0]) + "," + std::to_string(w.ctaid[1]) + "," +
                             std::to_string(w.ctaid[2]) + "], thread: [" + std::to_string(special(w, kTidX, k)) + "," +
                             std::to_string(special(w, kTidY, k)) + "," + std::to_string(special(w, kTidZ, k)) +
                             "] Assertion `" + msg + "` failed.\n";
          if (st.env->error_sink) st.env->error_sink(text);
          else fwrite(text.data(), 1, text.size(), stderr);
          if (first.empty())
            first = "device assertion failed: " + msg + " (" + file + ":" + std::to_string(line) + " in " + func + ")";
        }
        return fault(Fault::kTrap, first);
      }
    }
    return true;
  }

  bool watchdog() {
    until_check = 1 << 14;
    if (st.stop.load(std::memory_order_relaxed)) return fault(Fault::kTimeout, "stopped");
    const LaunchEnv& env = *st.env;
    if (env.cancel && env.cancel->load(std::memory_order_relaxed))
      return fault(Fault::kTimeout, "launch cancelled in " + st.kernel->name);
    if (env.deadline != std::chrono::steady_clock::time_point::max() && std::chrono::steady_clock::now() > env.deadline)
      return fault(Fault::kTimeout, "launch timed out in " + st.kernel->name);
    return true;
  }

  Stop run_warp(Warp& w) {
    bind(w);
    for (;;) {
      Frame& f = w.frames[w.depth - 1];
      if (f.cur_mask == 0) {
        if (f.live & ~w.blocked) {
          regroup(w, f);
          continue;
        }
        if (f.live == 0) {
          if (!unwind(w)) return Stop::kDone;
          continue;
        }
        w.at_barrier = true;
        return Stop::kBarrier;
      }
      if (f.cur_pc == f.wait_min) merge(w, f);
      {
        // Fast path: a run of ordinary instructions for an unchanged group,
        // with the group's state in locals.
        const Inst* code = f.fn->code.data();
        uint32_t pc = f.cur_pc;
        const uint32_t group = f.cur_mask, stop = f.wait_min;
        for (;;) {
          const Inst& op = code[pc];
          if (op.kind != Kind::kOp) break;
          uint32_t m = group;
          if (op.guard != kNoSlot) {
            const uint64_t* g = x.reg(op.guard);
            uint32_t pm = 0;
            for_lanes(m, [&](int l) { pm |= static_cast<uint32_t>((g[l] & 1) ^ op.guard_neg) << l; });
            m = pm;
          }
          executed += lane_count(m);
          if (--until_check == 0) {
            f.cur_pc = pc;
            if (!watchdog()) return Stop::kFault;
            // The instruction at pc runs when the warp resumes.
            if (st.warps_per_block > 1) return Stop::kYield;
          }
          if (m) {
            op.fn(x, op, m);
            if (x.fault != Fault::kNone) {
              f.cur_pc = pc;
              return Stop::kFault;
            }
          }
          if (++pc == stop) break;
        }
        f.cur_pc = pc;
        if (pc == stop) continue;  // merge waiting lanes first
      }
      const Inst& in = f.fn->code[f.cur_pc];
      uint32_t m = f.cur_mask;
      if (in.guard != kNoSlot) {
        const uint64_t* g = x.reg(in.guard);
        uint32_t pm = 0;
        for_lanes(m, [&](int l) { pm |= static_cast<uint32_t>((g[l] & 1) ^ in.guard_neg) << l; });
        m = pm;
      }
      executed += lane_count(m);
      if (--until_check == 0) {
        if (!watchdog()) return Stop::kFault;
        if (st.warps_per_block > 1) return Stop::kYield;
      }
      switch (in.kind) {
        case Kind::kOp:
          if (m) {
            in.fn(x, in, m);
            if (x.fault != Fault::kNone) return Stop::kFault;
          }
          ++f.cur_pc;
          break;
        case Kind::kNop: ++f.cur_pc; break;
        case Kind::kBra:
          if (m == f.cur_mask) {
            f.cur_pc = in.target;
            if (f.cur_pc > f.wait_min) regroup(w, f);
          } else if (m == 0) {
            ++f.cur_pc;
          } else {
            for (uint32_t r = m; r; r &= r - 1) f.pc[__builtin_ctz(r)] = in.target;
            for (uint32_t r = f.cur_mask & ~m; r; r &= r - 1) f.pc[__builtin_ctz(r)] = f.cur_pc + 1;
            f.cur_mask = 0;
            regroup(w, f);
          }
          break;
        case Kind::kExit:
        case Kind::kRet: {
          if (m == 0) {
            ++f.cur_pc;
            break;
          }
          if (in.kind == Kind::kExit || w.depth == 1) {
            w.exited |= m;
            for (size_t k = 0; k < w.depth; ++k) w.frames[k].live &= ~m;
          } else {
            f.returned |= m;
            f.live &= ~m;
          }
          uint32_t rest = f.cur_mask & ~m;
          f.cur_mask = rest;
          if (rest) ++f.cur_pc;
          break;
        }
        case Kind::kCall:
          if (m == 0) {
            ++f.cur_pc;
            break;
          }
          if (!call(w, in, m)) return Stop::kFault;
          break;
        case Kind::kExtern:
          if (m && !builtin(w, in, m)) return Stop::kFault;
          ++f.cur_pc;
          break;
        case Kind::kBar:
          if (m == 0) {
            ++f.cur_pc;
            break;
          }
          w.blocked |= m;
          if (in.mode) {
            const uint64_t* p = x.reg(in.a);
            for_lanes(m, [&](int l) {
              bool v = (p[l] & 1) ^ (in.aux & 1);
              red_count += v;
              red_all = red_all && v;
              red_any = red_any || v;
            });
            w.red_slot = in.d;
            w.red_lanes |= m;
            w.red_mode = in.mode;
          }
          ++f.cur_pc;
          for (uint32_t r = f.cur_mask; r; r &= r - 1) f.pc[__builtin_ctz(r)] = f.cur_pc;
          f.cur_mask = 0;
          regroup(w, f);
          break;
        case Kind::kWarpSync: {
          // Lanes parked here earlier join the group; the group waits until
          // every non-exited lane of its membermask is here too.
          uint32_t here = f.cur_mask;
          for (uint32_t r = w.parked & f.live & ~here; r; r &= r - 1)
            if (f.pc[__builtin_ctz(r)] == f.cur_pc) here |= 1u << __builtin_ctz(r);
          uint32_t g = here;
          if (in.guard != kNoSlot) {
            const uint64_t* gp = x.reg(in.guard);
            g = 0;
            for_lanes(here, [&](int l) { g |= static_cast<uint32_t>((gp[l] & 1) ^ in.guard_neg) << l; });
          }
          if (g) {
            const uint64_t* mm = x.reg(in.target);
            uint32_t need = 0;
            for_lanes(g, [&](int l) { need |= static_cast<uint32_t>(mm[l]); });
            if ((need & f.live & ~here) && !(g & w.excused)) {
              for (uint32_t r = here; r; r &= r - 1) {
                int l = __builtin_ctz(r);
                f.pc[l] = (g >> l) & 1 ? f.cur_pc : f.cur_pc + 1;
              }
              w.parked |= g;
              f.cur_mask = 0;
              regroup(w, f);
              break;
            }
            w.parked &= ~here;
            w.excused &= ~here;
            if (in.fn) {
              in.fn(x, in, g);
              if (x.fault != Fault::kNone) return Stop::kFault;
            }
          }
          f.cur_mask = here;
          ++f.cur_pc;
          break;
        }
        case Kind::kTrap:
          if (m == 0) {
            ++f.cur_pc;
            break;
          }
          fault(Fault::kTrap, "trap at line " + std::to_string(in.line) + " in " + f.fn->name);
          return Stop::kFault;
        case Kind::kUnsupported:
          if (m == 0) {
            ++f.cur_pc;
            break;
          }
          fault(Fault::kUnsupported, "unsupported instruction at line " + std::to_string(in.line) + " in " + f.fn->name);
          return Stop::kFault;
      }
    }
  }

  void setup_warp(Warp& w, uint32_t index, const uint32_t ctaid[3], uint32_t nthreads) {
    w.index = index;
    w.exited = 0;
    w.blocked = 0;
    w.parked = 0;
    w.excused = 0;
    w.done = false;
    w.at_barrier = false;
    w.depth = 1;
    w.local_sp = st.kernel->local_bytes;
    w.ctaid[0] = ctaid[0];
    w.ctaid[1] = ctaid[1];
    w.ctaid[2] = ctaid[2];
    w.red_slot = kNoSlot;
    w.red_lanes = 0;
    if (w.frames.empty()) w.frames.emplace_back();
    uint32_t exists = 0;
    for (uint32_t l = 0; l < 32; ++l)
      if (index * 32 + l < nthreads) exists |= 1u << l;
    Frame& f = w.frames[0];
    // pc[] needs no reset: lanes' pcs are written before they are read.
    f.fn = st.kernel;
    f.reg_base = 0;
    f.lparam_base = 0;
    f.local_base = 0;
    f.returned = 0;
    f.wait_min = kNoPc;
    f.call_site = 0;
    f.call_pc = 0;
    f.live = exists;
    f.cur_mask = exists;
    f.cur_pc = 0;
    init_frame(w, f);
  }

  bool run_block(uint64_t linear) {
    uint32_t ctaid[3] = {static_cast<uint32_t>(linear % st.grid.x),
                         static_cast<uint32_t>((linear / st.grid.x) % st.grid.y),
                         static_cast<uint32_t>(linear / (uint64_t{st.grid.x} * st.grid.y))};
    uint32_t nthreads = static_cast<uint32_t>(st.block.count());
    for (uint32_t i = 0; i < st.warps_per_block; ++i) setup_warp(warps[i], i, ctaid, nthreads);
    red_count = 0;
    red_all = true;
    red_any = false;
    for (;;) {
      bool all_done = true, yielded = false;
      for (uint32_t i = 0; i < st.warps_per_block; ++i) {
        Warp& w = warps[i];
        if (w.done || w.at_barrier) {
          all_done = all_done && w.done;
          continue;
        }
        Stop s = run_warp(w);
        if (s == Stop::kFault) return false;
        if (s == Stop::kBarrier) all_done = false;
        if (s == Stop::kYield) all_done = false, yielded = true;
      }
      if (all_done) return true;
      // A warp that used its turn (16384 instructions) goes on after the
      // others had theirs, so a warp spinning on another warp's flag lets it run.
      if (yielded) continue;
      uint32_t keep_count = red_count;
      bool keep_all = red_all, keep_any = red_any;
      red_count = 0;
      red_all = true;
      red_any = false;
      // Every warp is done or waiting: release the barrier.
      for (uint32_t i = 0; i < st.warps_per_block; ++i) {
        Warp& w = warps[i];
        if (w.done) continue;
        w.at_barrier = false;
        w.blocked = 0;
        Frame& f = w.frames[w.depth - 1];
        if (w.red_slot != kNoSlot) {
          uint64_t v = w.red_mode == 1 ? keep_count : w.red_mode == 2 ? keep_all : keep_any;
          uint64_t* d = w.regs.data() + f.reg_base + static_cast<size_t>(w.red_slot) * 32;
          for_lanes(w.red_lanes, [&](int l) { d[l] = v; });
          w.red_slot = kNoSlot;
          w.red_lanes = 0;
        }
        f.cur_mask = 0;
        regroup(w, f);
      }
    }
  }

  void run() {
    if (!mem.attach(st, x, warps)) return;
    until_check = 1 << 14;
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
    st.instructions.fetch_add(executed, std::memory_order_relaxed);
  }
};

}  // namespace

void BlockMemory::allocate(const LaunchState& st) {
  shared.reset(new uint8_t[std::max<uint32_t>(st.shared_bytes, 16)]);
  if (st.local_stride) local.reset(new uint8_t[static_cast<size_t>(st.local_stride) * st.warps_per_block * 32]);
}

void BlockMemory::out_of_memory(LaunchState& st) {
  st.record(Fault::kOutOfResources, "cannot allocate block memory for " + st.kernel->name, 0);
}

void BlockMemory::point(LaunchState& st, ExecCtx& x) const {
  x.shared = shared.get();
  x.shared_size = st.shared_bytes;
  x.local = local.get();
  x.local_stride = st.local_stride;
  x.local_total = uint64_t{st.local_stride} * st.warps_per_block * 32;
  x.kparams = st.params;
  x.kparam_size = st.params_size;
  x.launch = &st;
}

void run_worker(LaunchState& st) {
  auto w = std::make_unique<Worker>(st);
  w->run();
}

}  // namespace rgpu::ptx
