// Decoder of one function's body: resolves names to register slots, labels
// to instruction indices and opcodes to handler pointers, so that the
// interpreter never touches a string. The decoder itself is
// function_decoder.h; here, its choice of handler for each opcode. A
// module's load and a kernel's closure over the functions it calls are in
// decode_module.cpp; the matrix instructions in decode_tensor.cpp.
#include "decode.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "function_decoder.h"

namespace rgpu::ptx {
namespace {

Mem space_of(const OpText& t) {
  for (const auto& m : t.mods) {
    if (m == "shared::cluster") return Mem::kGeneric;  // refused by the caller
    if (m == "global") return Mem::kGlobal;
    if (m == "shared" || m == "shared::cta") return Mem::kShared;
    if (m == "local") return Mem::kLocal;
    if (m == "const") return Mem::kConst;
    if (m == "param") return Mem::kParamKernel;
  }
  return Mem::kGeneric;
}

}  // namespace

Status detail::FunctionDecoder::instruction(const ast::Instruction& ai, Inst& in) {
  OpText t = split_opcode(ai.opcode);
  const std::string& b = t.base;
  if (!ai.guard.empty()) {
    const Sym* g = lookup(ai.guard);
    if (!g || g->kind != Sym::Kind::kReg) return err(ai.line, "guard " + ai.guard + " is not a register");
    in.guard = g->index;
    in.guard_neg = ai.guard_neg;
  }
  const auto& ops = ai.ops;
  auto need = [&](size_t n) -> Status {
    if (ops.size() < n) return err(ai.line, ai.opcode + " needs " + std::to_string(n) + " operands");
    return Status::ok();
  };
  // Control flow first.
  if (b == "bra" || b == "brx") {
    if (b == "brx") {
      in.kind = Kind::kUnsupported;
      unsupported(ai, "indexed branch");
      return Status::ok();
    }
    if (Status s = need(1); !s.is_ok()) return s;
    auto it = labels_.find(ops[0].name);
    if (it == labels_.end()) return err(ai.line, "unknown label " + ops[0].name);
    in.kind = Kind::kBra;
    in.target = it->second;
    return Status::ok();
  }
  if (b == "call") return call(ai, in);
  if (b == "ret") { in.kind = Kind::kRet; return Status::ok(); }
  if (b == "exit") { in.kind = Kind::kExit; return Status::ok(); }
  if (b == "trap" || b == "brkpt") { in.kind = b == "trap" ? Kind::kTrap : Kind::kNop; return Status::ok(); }
  if ((b == "bar" || b == "barrier") && !t.has("warp")) {
    if (t.has("arrive")) {
      in.kind = Kind::kUnsupported;
      unsupported(ai, "barrier arrive");
      return Status::ok();
    }
    in.kind = Kind::kBar;
    if (t.has("red")) {
      // bar.red.{popc,and,or} d, id, [count,] {!}p: the block-wide reduction is
      // written to d when the barrier opens.
      in.mode = t.has("popc") ? 1 : t.has("and") ? 2 : t.has("or") ? 3 : 0;
      if (in.mode == 0 || ops.size() < 3) return err(ai.line, "bad barrier reduction");
      if (Status s = dest(ops[0], ai.line, &in.d); !s.is_ok()) return s;
      const auto& p = ops.back();
      if (p.kind != ast::Operand::Kind::kName) return err(ai.line, "barrier reduction needs a predicate");
      const Sym* ps = lookup(p.name);
      if (!ps || ps->kind != Sym::Kind::kReg) return err(ai.line, "unknown predicate " + p.name);
      in.a = ps->index;
      in.aux = p.negated ? 1 : 0;
    }
    return Status::ok();
  }
  if ((b == "bar" || b == "barrier") && t.has("warp")) {
    // bar.warp.sync membermask: waits for the mask's lanes (see exec.cpp).
    if (Status s = need(1); !s.is_ok()) return s;
    if (Status s = value(ops[0], ai.line, &in.a); !s.is_ok()) return s;
    in.kind = Kind::kWarpSync;
    in.target = in.a;
    in.fn = nullptr;
    return Status::ok();
  }
  if (b == "bar" || b == "membar" || b == "fence" || b == "nanosleep" || b == "prefetch" || b == "prefetchu" ||
      b == "griddepcontrol" || b == "pmevent" || b == "discard" || b == "applypriority") {
    in.kind = Kind::kNop;  // a CPU thread sees its own writes in order; others are fenced by the launch join
    return Status::ok();
  }
  if (is_video(b)) return video(ai, t, in);
  if (b == "cp" && t.has("async")) return cp_async(ai, t, in);
  if (b == "ldmatrix" || b == "stmatrix") return ld_st_matrix(ai, t, in, b == "stmatrix");
  if (b == "movmatrix") return movmatrix(ai, t, in);
  if (b == "mma") return mma(ai, t, in);
  if (b == "wmma") return wmma(ai, in);
  // Anything else we do not know is reported at launch, not at load.
  static const char* kKnown[] = {
      "add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "abs", "neg", "min", "max", "popc",
      "clz", "bfind", "brev", "bfe", "bfi", "prmt", "lop3", "shf", "shl", "shr", "and", "or", "xor", "not",
      "cnot", "addc", "subc", "madc", "copysign", "testp", "fma", "rcp", "sqrt", "rsqrt", "sin", "cos", "lg2",
      "ex2", "tanh", "setp", "set", "selp", "slct", "mov", "cvt", "cvta", "isspacep", "ld", "ldu", "st", "atom",
      "red", "shfl", "vote", "match", "activemask", "redux", "elect", "dp4a", "dp2a", "fns", "bmsk"};
  bool known = false;
  for (const char* k : kKnown) known = known || b == k;
  if (!known) {
    in.kind = Kind::kUnsupported;
    unsupported(ai, "not implemented");
    return Status::ok();
  }
  if (t.has("shared::cluster")) {
    in.kind = Kind::kUnsupported;
    unsupported(ai, "distributed shared memory");
    return Status::ok();
  }
  // Operand shapes for ordinary instructions.
  in.space = space_of(t);
  bool is_mem = b == "ld" || b == "ldu" || b == "st" || b == "atom" || b == "red";
  if (is_mem) {
    if (b == "st" || b == "red") {
      if (Status s = need(2); !s.is_ok()) return s;
      if (Status s = address(ops[0], ai.line, in); !s.is_ok()) return s;
      const auto& val = ops[1];
      if (val.kind == ast::Operand::Kind::kVec) {
        if (val.elems.size() > 4 || val.elems.empty()) return err(ai.line, "bad vector");
        for (size_t k = 0; k < val.elems.size(); ++k)
          if (Status s = value(val.elems[k], ai.line, &in.v[k]); !s.is_ok()) return s;
      } else {
        if (Status s = value(val, ai.line, &in.v[0], in.space == Mem::kGeneric); !s.is_ok()) return s;
        in.b = in.v[0];
      }
      if (ops.size() > 2) return err(ai.line, "too many operands");
    } else if (b == "atom") {
      if (Status s = need(3); !s.is_ok()) return s;
      if (Status s = dest(ops[0], ai.line, &in.d); !s.is_ok()) return s;
      if (Status s = address(ops[1], ai.line, in); !s.is_ok()) return s;
      if (Status s = value(ops[2], ai.line, &in.b); !s.is_ok()) return s;
      if (ops.size() > 3)
        if (Status s = value(ops[3], ai.line, &in.c); !s.is_ok()) return s;
    } else {
      if (Status s = need(2); !s.is_ok()) return s;
      if (Status s = address(ops[1], ai.line, in); !s.is_ok()) return s;
      const auto& dst = ops[0];
      if (dst.kind == ast::Operand::Kind::kVec) {
        if (dst.elems.size() > 4 || dst.elems.empty()) return err(ai.line, "bad vector");
        for (size_t k = 0; k < dst.elems.size(); ++k)
          if (Status s = dest(dst.elems[k], ai.line, &in.v[k]); !s.is_ok()) return s;
      } else {
        if (Status s = dest(dst, ai.line, &in.v[0]); !s.is_ok()) return s;
        in.d = in.v[0];
      }
    }
    if (!select_mem(t, in)) {
      in.kind = Kind::kUnsupported;
      unsupported(ai, "this form of memory access");
    }
    return Status::ok();
  }
  // Value instructions: d[,d2], a, b, c, e. Vectors appear only in mov.
  if (ops.empty()) {
    if (!select_warp(t, in)) {
      in.kind = Kind::kUnsupported;
      unsupported(ai, "not implemented");
    }
    return Status::ok();
  }
  // Symbols are addresses in their own state space; generic addresses come from cvta.
  bool dst_is_src = b == "prefetch";
  (void)dst_is_src;
  const auto& d0 = ops[0];
  if (d0.kind == ast::Operand::Kind::kVec) {
    // mov.b64 {lo, hi}, %rd : unpack
    if (d0.elems.size() > 4) return err(ai.line, "bad vector");
    for (size_t k = 0; k < d0.elems.size(); ++k)
      if (Status s = dest(d0.elems[k], ai.line, &in.v[k]); !s.is_ok()) return s;
    in.aux = static_cast<uint8_t>(d0.elems.size());
    in.mode = 1;  // unpack
  } else {
    if (Status s = dest(d0, ai.line, &in.d); !s.is_ok()) return s;
    if (!d0.pair.empty()) {
      const Sym* q = lookup(d0.pair);
      if (!q || q->kind != Sym::Kind::kReg) return err(ai.line, "bad second destination " + d0.pair);
      in.d2 = q->index;
    }
  }
  uint32_t* srcs[4] = {&in.a, &in.b, &in.c, &in.e};
  if (ops.size() > 5) return err(ai.line, "too many operands");
  for (size_t k = 1; k < ops.size(); ++k) {
    const auto& o = ops[k];
    if (o.kind == ast::Operand::Kind::kVec) {
      if (k != 1 || in.mode == 1 || o.elems.size() > 4) return err(ai.line, "unexpected vector operand");
      for (size_t j = 0; j < o.elems.size(); ++j)
        if (Status s = value(o.elems[j], ai.line, &in.v[j]); !s.is_ok()) return s;
      in.aux = static_cast<uint8_t>(o.elems.size());
      in.mode = 2;  // pack
      continue;
    }
    if (o.kind == ast::Operand::Kind::kName && o.negated) {
      // !%p as a source (selp/and.pred with negation is not PTX; setp's c operand is).
      if (Status s = value(ast::Operand{ast::Operand::Kind::kName, false, o.name, 0, {}, {}}, ai.line, srcs[k - 1]);
          !s.is_ok())
        return s;
      in.aux |= static_cast<uint8_t>(0x10u << (k - 1));
      continue;
    }
    if (o.kind == ast::Operand::Kind::kName &&
        (o.name == "%clock" || o.name == "%clock64" || o.name == "%globaltimer" || o.name == "%globaltimer_lo" ||
         o.name == "%globaltimer_hi" || o.name == "%clock_hi")) {
      in.mode = o.name == "%clock" ? 10 : o.name == "%clock64" ? 11 : o.name == "%globaltimer" ? 12
              : o.name == "%globaltimer_lo" ? 13 : o.name == "%clock_hi" ? 15 : 14;
      continue;
    }
    if (Status s = value(o, ai.line, srcs[k - 1]); !s.is_ok()) return s;
  }
  bool ok = select_int(t, in) || select_float(t, in) || select_cvt(t, in) || select_warp(t, in);
  if (!ok) {
    in.kind = Kind::kUnsupported;
    unsupported(ai, "not implemented for these types or modifiers");
  }
  return Status::ok();
}

OpText split_opcode(const std::string& s) {
  OpText t;
  size_t p = s.find('.');
  t.base = s.substr(0, p);
  while (p != std::string::npos) {
    size_t q = s.find('.', p + 1);
    std::string part = s.substr(p + 1, q == std::string::npos ? std::string::npos : q - p - 1);
    if (parse_ty(part) != Ty::kNone) t.types.push_back(part);
    else t.mods.push_back(part);
    p = q;
  }
  return t;
}

Status decode_function(KernelUnit& unit, const std::vector<VariableInfo>& variables,
                       const std::unordered_map<std::string, uint32_t>& funcs,
                       const std::unordered_map<std::string, uint32_t>& vars, const ast::Function& src,
                       Function& out, const std::vector<ParamInfo>* kparams) {
  return detail::FunctionDecoder(unit, variables, funcs, vars, src, out, kparams).run();
}

}  // namespace rgpu::ptx
