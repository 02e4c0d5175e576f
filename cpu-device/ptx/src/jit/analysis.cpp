// The compiled path's analysis of a kernel's code (analysis.h): leaders,
// slot use and width, per-thread liveness, divergence.
#include "analysis.h"

#include <algorithm>
#include <string>
#include <vector>

#include "../ast.h"

namespace rgpu::ptx::jit {

std::string kernel_opcodes(const ProgramImpl& p, int k, const KernelUnit& unit, std::vector<std::string>* out) {
  ast::Function copy = p.ast.functions[static_cast<size_t>(p.kernel_function[static_cast<size_t>(k)])];
  std::string why;
  if (Status s = ast::parse_body(&copy); !s.is_ok()) why = "body: " + s.message();
  for (const auto& st : copy.body)
    if (st.kind == ast::Statement::Kind::kInstruction) out->push_back(st.inst.opcode);
  if (why.empty() && out->size() + 1 != unit.functions[0].code.size()) why = "internal: instruction count";
  return why;
}

bool Analysis::live_at(size_t pc, uint32_t s) const {
  auto r = std::lower_bound(run_start.begin(), run_start.end(), pc);
  if (r == run_start.end() || *r != pc || s / 64 >= words) return false;
  return live_in[static_cast<size_t>(r - run_start.begin()) * words + s / 64] >> (s % 64) & 1;
}

namespace {

// Basic blocks start where lanes can wait.
void find_leaders(const Function& fn, Analysis& a) {
  const auto& code = fn.code;
  size_t n = code.size();
  a.leader.assign(n, false);
  a.leader[0] = true;
  for (size_t pc = 0; pc < n; ++pc) {
    const Inst& in = code[pc];
    if (in.kind == Kind::kBra) {
      if (in.target < n) a.leader[in.target] = true;
      if (pc + 1 < n) a.leader[pc + 1] = true;
    }
    if (in.kind == Kind::kBar && pc + 1 < n) a.leader[pc + 1] = true;
    // Lanes park at a warp-sync instruction, and those of the group the
    // guard leaves out go on after it.
    if (in.kind == Kind::kWarpSync) {
      a.leader[pc] = true;
      if (pc + 1 < n) a.leader[pc + 1] = true;
    }
  }
}

// Slot use, and slots that are constants (immediates never written),
// narrow or of a value known when compiling.
void find_slots(const Function& fn, Analysis& a) {
  const auto& code = fn.code;
  size_t n = code.size();
  uint32_t ns = fn.num_slots;
  a.used.assign(ns, false);
  a.constant.assign(ns, false);
  a.const_val.assign(ns, 0);
  std::vector<bool> written(ns, false);
  a.handler_reads.assign(ns, false);
  auto fields = [](const Inst& in, auto&& f) {
    for (uint32_t s : {in.guard, in.d, in.d2, in.a, in.b, in.c, in.e, in.v[0], in.v[1], in.v[2], in.v[3]})
      if (s != kNoSlot) f(s);
  };
  for (size_t pc = 0; pc < n; ++pc) {
    const Inst& in = code[pc];
    fields(in, [&](uint32_t s) { a.used[s] = true; });
    if (in.kind == Kind::kWarpSync) {
      a.used[in.target] = true;
      a.handler_reads[in.target] = true;
      fields(in, [&](uint32_t s) { a.handler_reads[s] = true; });
      for (uint32_t s : {in.d, in.d2, in.v[0], in.v[1], in.v[2], in.v[3]})
        if (s != kNoSlot) written[s] = true;
    }
    if (in.kind != Kind::kOp) continue;
    const Native& nt = a.natives[pc];
    if (nt.op == Op::kNone) {
      fields(in, [&](uint32_t s) { a.handler_reads[s] = true; });
      for (uint32_t s : {in.d, in.d2, in.v[0], in.v[1], in.v[2], in.v[3]})
        if (s != kNoSlot) written[s] = true;
    } else if (nt.op == Op::kSt) {
    } else if (nt.op == Op::kLd) {
      for (int k = 0; k < nt.vec; ++k) written[in.v[k]] = true;
    } else {
      written[in.d] = true;
      if (in.d2 != kNoSlot) written[in.d2] = true;
    }
  }
  for (const SlotInit& si : fn.inits) {
    a.used[si.slot] = true;
    if (si.kind == SlotInit::Kind::kImm && !written[si.slot]) {
      a.constant[si.slot] = true;
      a.const_val[si.slot] = si.value;
    }
  }
  // Narrow slots: every value written to them fits 32 bits (zero-extended)
  // and no handler writes them. They live in the 32-bit register file,
  // which halves the vector work of 32-bit code.
  a.narrow.assign(ns, true);
  for (size_t pc = 0; pc < n; ++pc) {
    const Inst& in = code[pc];
    if (in.kind == Kind::kOp && a.natives[pc].op == Op::kNone)
      for (uint32_t s : {in.d, in.d2, in.v[0], in.v[1], in.v[2], in.v[3]})
        if (s != kNoSlot) a.narrow[s] = false;
    if (in.kind == Kind::kBar && in.d != kNoSlot) a.narrow[in.d] = false;
    if (in.kind == Kind::kWarpSync)
      for (uint32_t s : {in.d, in.d2, in.v[0], in.v[1], in.v[2], in.v[3]})
        if (s != kNoSlot) a.narrow[s] = false;
  }
  for (const SlotInit& si : fn.inits) {
    bool small = (si.kind == SlotInit::Kind::kImm && si.value <= 0xffffffffull) ||
                 si.kind == SlotInit::Kind::kSpecial || si.kind == SlotInit::Kind::kLocalAddr;
    if (!small) a.narrow[si.slot] = false;
  }
  auto fits = [&](uint32_t s) { return a.constant[s] ? a.const_val[s] <= 0xffffffffull : bool(a.narrow[s]); };
  for (bool changed = true; changed;) {
    changed = false;
    auto widen = [&](uint32_t s) {
      if (a.narrow[s]) a.narrow[s] = false, changed = true;
    };
    for (size_t pc = 0; pc < n; ++pc) {
      const Inst& in = code[pc];
      const Native& nt = a.natives[pc];
      if (in.kind != Kind::kOp || nt.op == Op::kNone || nt.op == Op::kSt) continue;
      switch (nt.op) {
        case Op::kMov: if (!fits(in.a)) widen(in.d); break;
        case Op::kSelp: if (!fits(in.a) || !fits(in.b)) widen(in.d); break;
        case Op::kLd:
          if (is_signed_ty(nt.t) || ty_size(nt.t) > 4)
            for (int k = 0; k < nt.vec; ++k) widen(in.v[k]);
          break;
        case Op::kSetp: case Op::kPAnd: case Op::kPOr: case Op::kPXor: case Op::kPNot: break;
        case Op::kMulWide: case Op::kMadWide: if (ty_size(nt.t) > 2) widen(in.d); break;
        case Op::kCvta: if (in.size > 4) widen(in.d); break;
        default: if (ty_size(nt.t) > 4) widen(in.d); break;
      }
    }
  }
  for (uint32_t s = 0; s < ns; ++s)
    if (a.constant[s]) a.narrow[s] = false;
  // Slots every write of which moves the same immediate into them: a
  // lane that reads one (having written it first, as PTX requires) reads
  // that value. Shuffles use it for their lane and clamp operands.
  a.known.assign(ns, 0);
  a.known_val.assign(ns, 0);
  for (size_t pc = 0; pc < n; ++pc) {
    const Inst& in = code[pc];
    auto wr = [&](uint32_t s, bool ok, uint64_t v) {
      if (s == kNoSlot) return;
      if (!ok) a.known[s] = 2;
      else if (a.known[s] == 0) a.known[s] = 1, a.known_val[s] = v;
      else if (a.known[s] == 1 && a.known_val[s] != v) a.known[s] = 2;
    };
    bool mov = in.kind == Kind::kOp && a.natives[pc].op == Op::kMov && a.constant[in.a];
    uint64_t v = mov ? a.const_val[in.a] : 0;
    if (mov) v &= ty_size(a.natives[pc].t) >= 8 ? ~0ull : (1ull << (8 * ty_size(a.natives[pc].t))) - 1;
    if (mov) {
      wr(in.d, true, v);
    } else {
      for (uint32_t s : {in.d, in.d2, in.v[0], in.v[1], in.v[2], in.v[3]}) wr(s, false, 0);
    }
  }
  for (const SlotInit& si : fn.inits) a.known[si.slot] = 2;
}

// Whether the interpreter's handler for the instruction at pc writes its
// d (and d2) in every active lane without reading them: the families
// known to, by opcode; others count as reading them.
bool handler_defines(const Function& fn, const std::vector<std::string>& opcodes, size_t pc) {
  static const char* kFull[] = {"sin", "cos", "ex2", "lg2", "sqrt", "rsqrt", "rcp", "tanh", "div", "rem", "abs",
                                "neg", "min", "max", "fma", "mad", "mul", "add", "sub", "cvt", "cvta", "selp",
                                "set", "setp", "popc", "clz", "brev", "bfe", "bfi", "bfind", "testp", "copysign",
                                "and", "or", "xor", "not", "shl", "shr", "cnot", "mul24", "mad24", "sad", "prmt",
                                "shf", "ld", "ldu", "atom", "shfl", "vote", "activemask", "mov"};
  const Inst& in = fn.code[pc];
  if (pc >= opcodes.size()) return false;
  if (in.d == kNoSlot || (in.aux & 0xf0) || in.d == in.a || in.d == in.b || in.d == in.c || in.d == in.e) return false;
  for (uint32_t v : in.v)
    if (v != kNoSlot && (v == in.d || v == in.d2)) return false;
  std::string base = opcodes[pc].substr(0, opcodes[pc].find('.'));
  for (const char* k : kFull)
    if (base == k) return true;
  return false;
}

// a.waits, a.zero and a.saved (the slots live where warps resume after a
// barrier: every live lane of a warp that leaves waits right after a
// bar.sync), and the live-in sets they come from. Per-thread
// liveness over the PTX control flow, run by run; conservative where it
// does not know an instruction (every named slot read, no write kills).
void liveness(const Function& fn, const std::vector<std::string>& opcodes, Analysis& a) {
  const auto& code = fn.code;
  size_t n = code.size();
  uint32_t ns = fn.num_slots;
  size_t words = (ns + 63) / 64;
  std::vector<size_t> start;                 // run index -> first pc
  std::vector<uint32_t> run_of(n, 0);
  for (size_t pc = 0; pc < n; ++pc) {
    if (a.leader[pc]) start.push_back(pc);
    run_of[pc] = static_cast<uint32_t>(start.size() - 1);
  }
  size_t nr = start.size();
  std::vector<uint64_t> use(nr * words, 0), def(nr * words, 0), in(nr * words, 0);
  std::vector<std::vector<uint32_t>> succ(nr);
  auto bit = [&](std::vector<uint64_t>& v, size_t r, uint32_t s) -> uint64_t& { return v[r * words + s / 64]; };
  for (size_t r = 0; r < nr; ++r) {
    size_t end = r + 1 < nr ? start[r + 1] : n;
    // Backwards through the run: use = read before any killing write.
    for (size_t pc = end; pc-- > start[r];) {
      const Inst& ins = code[pc];
      auto read = [&](uint32_t s) {
        if (s != kNoSlot) bit(use, r, s) |= 1ull << (s % 64);
      };
      auto kill = [&](uint32_t s) {
        if (s == kNoSlot || ins.guard != kNoSlot) return;
        bit(use, r, s) &= ~(1ull << (s % 64));
        bit(def, r, s) |= 1ull << (s % 64);
      };
      const Native& nt = ins.kind == Kind::kOp ? a.natives[pc] : Native{};
      const bool native = ins.kind == Kind::kOp && nt.op != Op::kNone;
      // Run by a handler that writes d (and d2) in every active lane.
      const bool defines = !native && (ins.kind == Kind::kOp || ins.kind == Kind::kWarpSync) && handler_defines(fn, opcodes, pc);
      if (native && nt.op == Op::kLd) {
        for (int k = 0; k < nt.vec; ++k) kill(ins.v[k]);
      } else if ((native && nt.op != Op::kSt) || defines) {
        kill(ins.d);
        kill(ins.d2);
      }
      if (native && nt.op == Op::kLd) {
        read(ins.a);
      } else if (native && nt.op != Op::kSt) {
        for (uint32_t s : {ins.a, ins.b, ins.c, ins.e, ins.v[0], ins.v[1], ins.v[2], ins.v[3]}) read(s);
      } else if (defines) {
        for (uint32_t s : {ins.a, ins.b, ins.c, ins.e, ins.v[0], ins.v[1], ins.v[2], ins.v[3]}) read(s);
      } else {
        for (uint32_t s : {ins.d, ins.d2, ins.a, ins.b, ins.c, ins.e, ins.v[0], ins.v[1], ins.v[2], ins.v[3]}) read(s);
      }
      read(ins.guard);
      if (ins.kind == Kind::kWarpSync) read(ins.target);
    }
    const Inst& last = code[end - 1];
    if (last.kind == Kind::kBra && last.target < n) succ[r].push_back(run_of[last.target]);
    bool stops = (last.kind == Kind::kBra || last.kind == Kind::kExit || last.kind == Kind::kRet) && last.guard == kNoSlot;
    if (!stops && end < n) succ[r].push_back(run_of[end]);
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = nr; r-- > 0;)
      for (size_t w = 0; w < words; ++w) {
        uint64_t out = 0;
        for (uint32_t q : succ[r]) out |= in[q * words + w];
        uint64_t v = use[r * words + w] | (out & ~def[r * words + w]);
        if (v != in[r * words + w]) in[r * words + w] = v, changed = true;
      }
  }
  a.waits.assign(ns, false);
  for (size_t r = 0; r < nr; ++r)
    for (uint32_t s = 0; s < ns; ++s)
      if (in[r * words + s / 64] >> (s % 64) & 1) a.waits[s] = true;
  // Registers a fresh warp must start at zero, as the interpreter's do:
  // those a lane can read before writing (live at pc 0) and the sources
  // of shuffles, which read lanes outside the group (the interpreter's
  // handler copies all 32; such a lane may never have written it).
  // Every other register is written by each lane before that lane
  // reads it.
  a.zero.assign(ns, false);
  for (uint32_t s = 0; s < ns; ++s)
    if (in[s / 64] >> (s % 64) & 1) a.zero[s] = true;
  for (size_t pc = 0; pc < n; ++pc)
    if (pc < opcodes.size() && opcodes[pc].compare(0, 5, "shfl.") == 0 && code[pc].a != kNoSlot)
      a.zero[code[pc].a] = true;
  a.saved.assign(ns, false);
  for (size_t pc = 0; pc + 1 < n; ++pc)
    if (code[pc].kind == Kind::kBar) {
      size_t r = run_of[pc + 1];
      for (uint32_t s = 0; s < ns; ++s)
        if (in[r * words + s / 64] >> (s % 64) & 1) a.saved[s] = true;
    }
  a.run_start = std::move(start);
  a.live_in = std::move(in);
  a.words = words;
}
// The pcs control can reach next from pc.
template <class F>
void successors(const std::vector<Inst>& code, size_t pc, F&& f) {
  const Inst& in = code[pc];
  if (in.kind == Kind::kBra && in.target < code.size()) f(size_t{in.target});
  bool stops = (in.kind == Kind::kBra || in.kind == Kind::kExit || in.kind == Kind::kRet) && in.guard == kNoSlot;
  if (!stops && pc + 1 < code.size()) f(pc + 1);
}

}  // namespace

Analysis analyze(const Function& fn, const std::vector<std::string>& opcodes) {
  Analysis a;
  const auto& code = fn.code;
  size_t n = code.size();
  a.natives.resize(n);
  for (size_t pc = 0; pc + 1 < n; ++pc)
    if (code[pc].kind == Kind::kOp) a.natives[pc] = classify(split_opcode(opcodes[pc]), code[pc]);
  find_leaders(fn, a);
  find_slots(fn, a);
  liveness(fn, opcodes, a);
  return a;
}

Divergence divergence(const Function& fn, const Analysis& an) {
  const auto& code = fn.code;
  const size_t n = code.size();
  Divergence d;
  d.varying.assign(fn.num_slots, false);
  d.branch.assign(n, false);
  for (const SlotInit& si : fn.inits)
    if (si.kind == SlotInit::Kind::kSpecial &&
        (si.index == kTidX || si.index == kTidY || si.index == kTidZ || si.index == kLaneId ||
         (si.index >= kLanemaskEq && si.index <= kLanemaskGt)))
      d.varying[si.slot] = true;
  // Reachable from a divergent branch: the group that runs there may be
  // part of the warp, and lanes that went the other way meet it later
  // with values of their own.
  std::vector<bool> apart(n, false);
  auto varies = [&](uint32_t s) { return s != kNoSlot && d.varying[s]; };
  for (bool changed = true; changed;) {
    changed = false;
    auto vary = [&](uint32_t s) {
      if (s != kNoSlot && !d.varying[s]) d.varying[s] = true, changed = true;
    };
    for (size_t pc = 0; pc < n; ++pc) {
      const Inst& in = code[pc];
      if (in.kind == Kind::kBra) {
        if (varies(in.guard) && !d.branch[pc]) d.branch[pc] = true, changed = true;
        continue;
      }
      const Native& nt = an.natives[pc];
      const bool native = in.kind == Kind::kOp && nt.op != Op::kNone;
      bool v = apart[pc] || varies(in.guard) || !native;
      if (native && nt.op == Op::kSt) continue;
      if (native && nt.op == Op::kLd) {
        // Memory other threads write may change between lanes' reads.
        v = v || varies(in.a) || (in.space != Mem::kParamKernel && in.space != Mem::kConst);
        if (v)
          for (int k = 0; k < nt.vec; ++k) vary(in.v[k]);
        continue;
      }
      for (uint32_t s : {in.a, in.b, in.c, in.e}) v = v || varies(s);
      if (!v) continue;
      vary(in.d);
      vary(in.d2);
      if (!native)
        for (uint32_t s : in.v) vary(s);
    }
    std::vector<size_t> todo;
    for (size_t pc = 0; pc < n; ++pc)
      if (d.branch[pc]) successors(code, pc, [&](size_t q) { todo.push_back(q); });
    while (!todo.empty()) {
      size_t pc = todo.back();
      todo.pop_back();
      if (apart[pc]) continue;
      apart[pc] = true;
      changed = true;
      successors(code, pc, [&](size_t q) { todo.push_back(q); });
    }
  }
  return d;
}

}  // namespace rgpu::ptx::jit
