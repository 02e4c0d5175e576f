// classify(): the native forms of the instructions the compiled path
// emits itself (native.h).
#include <initializer_list>
#include <string>

#include "native.h"

namespace rgpu::ptx::jit {

bool is_int_ty(Ty t) {
  switch (t) {
    case Ty::kB16: case Ty::kB32: case Ty::kB64: case Ty::kU16: case Ty::kU32: case Ty::kU64:
    case Ty::kS16: case Ty::kS32: case Ty::kS64: return true;
    default: return false;
  }
}
bool is_signed_ty(Ty t) { return t == Ty::kS8 || t == Ty::kS16 || t == Ty::kS32 || t == Ty::kS64; }
bool is_float_ty(Ty t) { return t == Ty::kF32 || t == Ty::kF64; }

namespace {

bool only_mods(const OpText& o, std::initializer_list<const char*> allowed) {
  for (const auto& m : o.mods) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || m == a;
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Native classify(const OpText& o, const Inst& in) {
  Native n;
  const std::string& b = o.base;
  Ty t = o.types.empty() ? Ty::kNone : parse_ty(o.types.back());
  n.t = t;
  bool plain = in.v[0] == kNoSlot && in.d2 == kNoSlot && (in.aux & 0xf0) == 0;
  auto bin = [&](Op op) {
    if (plain && in.d != kNoSlot && in.a != kNoSlot && in.b != kNoSlot) n.op = op;
    return n;
  };
  if (b == "ld" || b == "st" || b == "ldu") {
    bool st = b == "st";
    uint32_t sz = ty_size(t);
    if (o.types.size() != 1 || sz == 0 || sz > 8 || t == Ty::kPred) return n;
    if (!only_mods(o, {"global", "shared", "shared::cta", "param", "const", "nc", "ca", "cg", "cs", "lu", "cv",
                       "v2", "v4", "weak"}))
      return n;
    uint8_t vec = 0;
    for (int k = 0; k < 4; ++k) vec += in.v[k] != kNoSlot;
    if (vec == 0 || vec == 3 || in.guard == in.a) return n;
    if (in.space == Mem::kGlobal || in.space == Mem::kConst) {
      if (vec != 1 || (st && in.space == Mem::kConst)) return n;
    } else if (in.space == Mem::kShared) {
    } else if (in.space == Mem::kParamKernel) {
      if (st) return n;
    } else {
      return n;
    }
    if (in.a == kNoSlot) return n;
    n.vec = vec;
    n.op = st ? Op::kSt : Op::kLd;
    return n;
  }
  if (b == "cvta") {
    if (plain && in.d != kNoSlot && in.a != kNoSlot && (in.space == Mem::kGlobal || in.space == Mem::kShared) &&
        (in.size == 4 || in.size == 8))
      n.op = Op::kCvta;
    return n;
  }
  if (b == "mov") {
    if (in.mode == 0 && plain && in.a != kNoSlot && in.d != kNoSlot && t != Ty::kNone) n.op = Op::kMov;
    return n;
  }
  if (b == "selp") {
    if (plain && in.c != kNoSlot) return bin(Op::kSelp);
    return n;
  }
  if (t == Ty::kPred && (b == "and" || b == "or" || b == "xor" || b == "not")) {
    if (in.v[0] != kNoSlot || in.d2 != kNoSlot || in.d == kNoSlot || in.a == kNoSlot) return n;
    if (b != "not" && in.b == kNoSlot) return n;
    n.op = b == "and" ? Op::kPAnd : b == "or" ? Op::kPOr : b == "xor" ? Op::kPXor : Op::kPNot;
    return n;
  }
  if (b == "setp") {
    static const char* kNames[] = {"eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
    int cmp = -1;
    bool ualias = false;
    for (const auto& m : o.mods) {
      bool known = false;
      for (int i = 0; i < 14; ++i)
        if (m == kNames[i]) cmp = i, known = true;
      if (m == "lo") cmp = 2, ualias = true, known = true;
      if (m == "ls") cmp = 3, ualias = true, known = true;
      if (m == "hi") cmp = 4, ualias = true, known = true;
      if (m == "hs") cmp = 5, ualias = true, known = true;
      if (m == "and") n.bop = 1, known = true;
      if (m == "or") n.bop = 2, known = true;
      if (m == "xor") n.bop = 3, known = true;
      if (m == "ftz") known = true;
      if (!known) return n;
    }
    if (cmp < 0 || o.types.size() != 1 || in.v[0] != kNoSlot || (in.aux & 0x30)) return n;
    if (in.d == kNoSlot || in.a == kNoSlot || in.b == kNoSlot) return n;
    n.fcmp = is_float_ty(t);
    if (!n.fcmp && (!is_int_ty(t) || cmp > 5)) return n;
    if (!n.fcmp && ualias) n.t = ty_size(t) == 2 ? Ty::kU16 : ty_size(t) == 4 ? Ty::kU32 : Ty::kU64;
    n.cmp = static_cast<uint8_t>(cmp);
    n.op = Op::kSetp;
    return n;
  }
  if (b == "cvt") {
    if (o.types.size() != 2 || !plain || in.d == kNoSlot || in.a == kNoSlot) return n;
    Ty dt = parse_ty(o.types[0]), st = parse_ty(o.types[1]);
    n.t = dt;
    n.t2 = st;
    bool irnd = false;
    for (const auto& m : o.mods) {
      if (m == "rni") n.rnd = 0, irnd = true;
      else if (m == "rzi") n.rnd = 1, irnd = true;
      else if (m == "rmi") n.rnd = 2, irnd = true;
      else if (m == "rpi") n.rnd = 3, irnd = true;
      else if (m != "rn" && m != "ftz") return n;
    }
    bool df = is_float_ty(dt), sf = is_float_ty(st);
    bool di = is_int_ty(dt) || dt == Ty::kU8 || dt == Ty::kS8 || dt == Ty::kB8;
    bool si = is_int_ty(st) || st == Ty::kU8 || st == Ty::kS8 || st == Ty::kB8;
    if (di && si && !irnd) n.op = Op::kCvt;
    else if (df && si && !irnd) n.op = Op::kCvt;
    else if (df && sf && !irnd && dt != st) n.op = Op::kCvt;
    else if (sf && di && ty_size(dt) >= 4) {
      if (!irnd) n.rnd = 1;
      n.op = Op::kCvt;
    }
    return n;
  }
  if (is_float_ty(t) && o.types.size() == 1) {
    if (!only_mods(o, {"rn", "ftz", "approx", "full"})) return n;
    if (b == "add") return bin(Op::kFAdd);
    if (b == "sub") return bin(Op::kFSub);
    if (b == "mul") return bin(Op::kFMul);
    if (b == "div") return bin(Op::kFDiv);
    if ((b == "fma" || b == "mad") && in.c != kNoSlot) return bin(Op::kFFma);
    if ((b == "neg" || b == "abs") && plain && in.d != kNoSlot && in.a != kNoSlot)
      n.op = b == "neg" ? Op::kFNeg : Op::kFAbs;
    return n;
  }
  if (!is_int_ty(t) || o.types.size() != 1) return n;
  if (b == "add" || b == "sub") {
    if (!o.mods.empty()) return n;
    return bin(b == "add" ? Op::kAdd : Op::kSub);
  }
  if (b == "mul" || b == "mad") {
    bool mad = b == "mad";
    if (mad && in.c == kNoSlot) return n;
    if (only_mods(o, {"lo"})) return bin(mad ? Op::kMad : Op::kMul);
    if (only_mods(o, {"wide"}) && (t == Ty::kS32 || t == Ty::kU32 || t == Ty::kS16 || t == Ty::kU16))
      return bin(mad ? Op::kMadWide : Op::kMulWide);
    return n;
  }
  if (!o.mods.empty()) return n;
  if (b == "and") return bin(Op::kAnd);
  if (b == "or") return bin(Op::kOr);
  if (b == "xor") return bin(Op::kXor);
  if (b == "shl") return bin(Op::kShl);
  if (b == "shr") return bin(Op::kShr);
  if (b == "min") return bin(Op::kMin);
  if (b == "max") return bin(Op::kMax);
  if ((b == "not" || b == "neg") && plain && in.d != kNoSlot && in.a != kNoSlot) n.op = b == "not" ? Op::kNot : Op::kNeg;
  return n;
}

}  // namespace rgpu::ptx::jit
