// Floating point instructions (f32, f64, f16, f16x2, bf16, bf16x2) and the
// comparison instructions setp/set for every type.
#include <cfenv>
#include <cmath>
#include <limits>

#include "ops_common.h"

namespace rgpu::ptx {
namespace {

struct FAdd { template <class T> static T f(T a, T b) { return a + b; } };
struct FSub { template <class T> static T f(T a, T b) { return a - b; } };
struct FMul { template <class T> static T f(T a, T b) { return a * b; } };
struct FDiv { template <class T> static T f(T a, T b) { return a / b; } };
struct FMin { template <class T> static T f(T a, T b) { return std::fmin(a, b); } };
struct FMax { template <class T> static T f(T a, T b) { return std::fmax(a, b); } };
struct FMinNaN { template <class T> static T f(T a, T b) { return (std::isnan(a) || std::isnan(b)) ? std::numeric_limits<T>::quiet_NaN() : std::fmin(a, b); } };
struct FMaxNaN { template <class T> static T f(T a, T b) { return (std::isnan(a) || std::isnan(b)) ? std::numeric_limits<T>::quiet_NaN() : std::fmax(a, b); } };
// copysign.f d, a, b: the sign of a on the magnitude of b.
struct FCopysign { template <class T> static T f(T a, T b) { return std::copysign(b, a); } };

template <class T>
inline T saturate(T v) {
  if (std::isnan(v)) return T(0);
  return v < T(0) ? T(0) : v > T(1) ? T(1) : v;
}

template <class T, class Op, bool kSat>
void h_fbin(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  for_lanes(m, [&](int l) {
    T r = Op::template f<T>(rd<T>(a[l]), rd<T>(b[l]));
    if (kSat) r = saturate(r);
    d[l] = wr<T>(r);
  });
}

template <class T, bool kSat>
void h_fma(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = x.reg(in.c);
  for_lanes(m, [&](int l) {
    T r = std::fma(rd<T>(a[l]), rd<T>(b[l]), rd<T>(c[l]));
    if (kSat) r = saturate(r);
    d[l] = wr<T>(r);
  });
}

enum UOp { kNeg, kAbs, kSqrt, kRsqrt, kRcp, kSin, kCos, kLg2, kEx2, kTanh, kSat };

template <class T, int kOp>
void h_funary(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  for_lanes(m, [&](int l) {
    T v = rd<T>(a[l]);
    T r;
    switch (kOp) {
      case kNeg: r = -v; break;
      case kAbs: r = std::fabs(v); break;
      case kSqrt: r = std::sqrt(v); break;
      case kRsqrt: r = T(1) / std::sqrt(v); break;
      case kRcp: r = T(1) / v; break;
      case kSin: r = std::sin(v); break;
      case kCos: r = std::cos(v); break;
      case kLg2: r = std::log2(v); break;
      case kEx2: r = std::exp2(v); break;
      case kTanh: r = std::tanh(v); break;
      default: r = saturate(v); break;
    }
    d[l] = wr<T>(r);
  });
}

// Runs handler H with the rounding mode in in.mode (.rz/.rm/.rp).
template <Handler H>
void h_rounded(ExecCtx& x, const Inst& in, uint32_t m) {
  int old = fegetround();
  fesetround(in.mode == 1 ? FE_TOWARDZERO : in.mode == 2 ? FE_DOWNWARD : FE_UPWARD);
  H(x, in, m);
  fesetround(old);
}

// Half precision: computed in float (exact for add/sub/mul of halves up to
// the final rounding) or double for fma, then rounded once.
template <bool kBf>
inline float h2f(uint16_t v) { return kBf ? bf16_to_f32(v) : f16_to_f32(v); }
template <bool kBf>
inline uint16_t f2h(float v) { return kBf ? f32_to_bf16(v) : f32_to_f16(v); }
template <bool kBf>
inline uint16_t d2h(double v) {
  // Round via float; for fma of halves the double result is exact enough that
  // the double rounding can only matter at exact ties, which we accept.
  return f2h<kBf>(static_cast<float>(v));
}

template <int kOp, bool kBf, bool kX2>
void h_half(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = in.b == kNoSlot ? nullptr : x.reg(in.b);
  const uint64_t* c = in.c == kNoSlot ? nullptr : x.reg(in.c);
  bool sat = in.aux & 1;
  for_lanes(m, [&](int l) {
    uint64_t out = 0;
    for (int h = 0; h < (kX2 ? 2 : 1); ++h) {
      float av = h2f<kBf>(static_cast<uint16_t>(a[l] >> (16 * h)));
      float bv = b ? h2f<kBf>(static_cast<uint16_t>(b[l] >> (16 * h))) : 0.f;
      uint16_t r;
      switch (kOp) {
        case 0: r = f2h<kBf>(sat ? saturate(av + bv) : av + bv); break;
        case 1: r = f2h<kBf>(sat ? saturate(av - bv) : av - bv); break;
        case 2: r = f2h<kBf>(sat ? saturate(av * bv) : av * bv); break;
        case 3: {
          float cv = h2f<kBf>(static_cast<uint16_t>(c[l] >> (16 * h)));
          double rr = static_cast<double>(av) * bv + cv;
          r = d2h<kBf>(sat ? saturate(rr) : rr);
          break;
        }
        case 4: r = static_cast<uint16_t>((a[l] >> (16 * h)) ^ 0x8000u); break;   // neg
        case 5: r = static_cast<uint16_t>((a[l] >> (16 * h)) & 0x7fffu); break;   // abs
        case 6: r = f2h<kBf>(std::fmin(av, bv)); break;
        case 7: r = f2h<kBf>(std::fmax(av, bv)); break;
        case 8: r = f2h<kBf>(std::exp2(av)); break;   // ex2.approx
        case 9: r = f2h<kBf>(std::tanh(av)); break;   // tanh.approx
        default: r = 0; break;
      }
      out |= static_cast<uint64_t>(r) << (16 * h);
    }
    d[l] = out;
  });
}

template <class T>
void h_testp(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  for_lanes(m, [&](int l) {
    T v = rd<T>(a[l]);
    bool r;
    switch (in.mode) {
      case 0: r = std::isfinite(v); break;
      case 1: r = std::isinf(v); break;
      case 2: r = !std::isnan(v); break;
      case 3: r = std::isnan(v); break;
      case 4: r = std::isnormal(v); break;
      default: r = std::fpclassify(v) == FP_SUBNORMAL; break;
    }
    d[l] = r;
  });
}

// Comparisons. Codes in Inst::mode.
enum Cmp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kEqu, kNeu, kLtu, kLeu, kGtu, kGeu, kNum, kNan };

template <class T>
inline bool compare(uint8_t c, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    bool un = std::isnan(a) || std::isnan(b);
    switch (c) {
      case kEq: return !un && a == b;
      case kNe: return !un && a != b;
      case kLt: return !un && a < b;
      case kLe: return !un && a <= b;
      case kGt: return !un && a > b;
      case kGe: return !un && a >= b;
      case kEqu: return un || a == b;
      case kNeu: return un || a != b;
      case kLtu: return un || a < b;
      case kLeu: return un || a <= b;
      case kGtu: return un || a > b;
      case kGeu: return un || a >= b;
      case kNum: return !un;
      default: return un;
    }
  } else {
    switch (c) {
      case kEq: return a == b;
      case kNe: return a != b;
      case kLt: return a < b;
      case kLe: return a <= b;
      case kGt: return a > b;
      default: return a >= b;
    }
  }
}

// Value as used by a comparison: halves widen to float.
template <class T, int kHalf>
inline auto cmp_value(uint64_t v) {
  if constexpr (kHalf == 1) return f16_to_f32(static_cast<uint16_t>(v));
  else if constexpr (kHalf == 2) return bf16_to_f32(static_cast<uint16_t>(v));
  else return rd<T>(v);
}

// setp.cmp[.bool].T p[|q], a, b[, c]: boolean op in in.size (0 none, 1 and, 2 or, 3 xor).
template <class T, int kHalf>
void h_setp(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  uint64_t* d2 = in.d2 == kNoSlot ? nullptr : x.reg(in.d2);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = in.c == kNoSlot ? nullptr : x.reg(in.c);
  bool nc = in.aux & 0x40;
  uint8_t cmp = in.mode;
  uint16_t bop = in.size;
  for_lanes(m, [&](int l) {
    bool t = compare(cmp, cmp_value<T, kHalf>(a[l]), cmp_value<T, kHalf>(b[l]));
    bool f = !t;
    if (c) {
      bool cv = (c[l] & 1) ^ nc;
      if (bop == 1) t = t && cv, f = f && cv;
      else if (bop == 2) t = t || cv, f = f || cv;
      else t = t != cv, f = f != cv;
    }
    d[l] = t;
    if (d2) d2[l] = f;
  });
}

// set.cmp.dtype.stype: in.imm (all ones, or 1.0 in the destination type) when true.
template <class T, int kHalf>
void h_set(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  uint64_t one = static_cast<uint64_t>(in.imm);
  for_lanes(m, [&](int l) {
    bool t = compare(in.mode, cmp_value<T, kHalf>(a[l]), cmp_value<T, kHalf>(b[l]));
    d[l] = t ? one : 0u;
  });
}

// set and setp on packed halves: each half compared on its own. set: in.imm
// is the true value of one half (1.0 in the destination's half type, or
// 0xffff for a .u32/.s32 destination). setp: d gets the low half's result,
// d2 the high half's, each combined with c like setp's.
template <int kHalf>
void h_set_x2(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t one = static_cast<uint64_t>(in.imm);
  for_lanes(m, [&](int l) {
    uint64_t r = 0;
    for (int h = 0; h < 2; ++h) {
      const uint64_t av = (a[l] >> (16 * h)) & 0xffff, bv = (b[l] >> (16 * h)) & 0xffff;
      if (compare(in.mode, cmp_value<float, kHalf>(av), cmp_value<float, kHalf>(bv))) r |= one << (16 * h);
    }
    d[l] = r;
  });
}

template <int kHalf>
void h_setp_x2(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  uint64_t* d2 = in.d2 == kNoSlot ? nullptr : x.reg(in.d2);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = in.c == kNoSlot ? nullptr : x.reg(in.c);
  const bool nc = in.aux & 0x40;
  const uint16_t bop = in.size;
  for_lanes(m, [&](int l) {
    bool t[2];
    for (int h = 0; h < 2; ++h) {
      const uint64_t av = (a[l] >> (16 * h)) & 0xffff, bv = (b[l] >> (16 * h)) & 0xffff;
      t[h] = compare(in.mode, cmp_value<float, kHalf>(av), cmp_value<float, kHalf>(bv));
      if (c) {
        const bool cv = (c[l] & 1) ^ nc;
        t[h] = bop == 1 ? t[h] && cv : bop == 2 ? t[h] || cv : t[h] != cv;
      }
    }
    d[l] = t[0];
    if (d2) d2[l] = t[1];
  });
}

template <class Op, bool kSat>
Handler pick_bin(Ty t) {
  if (t == Ty::kF32) return &h_fbin<float, Op, kSat>;
  if (t == Ty::kF64) return &h_fbin<double, Op, kSat>;
  return nullptr;
}
template <int kOp>
Handler pick_un(Ty t) {
  if (t == Ty::kF32) return &h_funary<float, kOp>;
  if (t == Ty::kF64) return &h_funary<double, kOp>;
  return nullptr;
}
template <int kOp>
Handler pick_half(Ty t) {
  switch (t) {
    case Ty::kF16: return &h_half<kOp, false, false>;
    case Ty::kF16x2: return &h_half<kOp, false, true>;
    case Ty::kBF16: return &h_half<kOp, true, false>;
    case Ty::kBF16x2: return &h_half<kOp, true, true>;
    default: return nullptr;
  }
}

Handler with_rounding(Handler h, uint8_t mode) {
  if (!h || mode == 0) return h;
  // Only a few handlers need a non-default rounding mode; list them explicitly.
#define RGPU_RND(H) if (h == (H)) return &h_rounded<(H)>;
  RGPU_RND((&h_fbin<float, FAdd, false>)) RGPU_RND((&h_fbin<double, FAdd, false>))
  RGPU_RND((&h_fbin<float, FSub, false>)) RGPU_RND((&h_fbin<double, FSub, false>))
  RGPU_RND((&h_fbin<float, FMul, false>)) RGPU_RND((&h_fbin<double, FMul, false>))
  RGPU_RND((&h_fbin<float, FDiv, false>)) RGPU_RND((&h_fbin<double, FDiv, false>))
  RGPU_RND((&h_fma<float, false>)) RGPU_RND((&h_fma<double, false>))
  RGPU_RND((&h_funary<float, kSqrt>)) RGPU_RND((&h_funary<double, kSqrt>))
  RGPU_RND((&h_funary<float, kRcp>)) RGPU_RND((&h_funary<double, kRcp>))
#undef RGPU_RND
  return nullptr;
}

uint8_t rounding(const OpText& op) {
  if (op.has("rz")) return 1;
  if (op.has("rm")) return 2;
  if (op.has("rp")) return 3;
  return 0;
}

}  // namespace

bool select_compare(const OpText& op, Inst& in) {
  static const char* kNames[] = {"eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
  int cmp = -1;
  bool unsigned_alias = false;
  for (const auto& mname : op.mods) {
    for (int i = 0; i < 14; ++i)
      if (mname == kNames[i]) cmp = i;
    if (mname == "lo") cmp = kLt, unsigned_alias = true;
    if (mname == "ls") cmp = kLe, unsigned_alias = true;
    if (mname == "hi") cmp = kGt, unsigned_alias = true;
    if (mname == "hs") cmp = kGe, unsigned_alias = true;
    if (mname == "and") in.size = 1;
    if (mname == "or") in.size = 2;
    if (mname == "xor") in.size = 3;
  }
  if (cmp < 0 || op.types.empty()) return false;
  in.mode = static_cast<uint8_t>(cmp);
  Ty t = parse_ty(op.types.back());
  const bool packed = t == Ty::kF16x2 || t == Ty::kBF16x2;
  bool is_float = t == Ty::kF32 || t == Ty::kF64 || t == Ty::kF16 || t == Ty::kBF16 || packed;
  if (!is_float && cmp > kGe) return false;
  if (packed && op.base == "set") {
    if (op.types.size() != 2 || in.size != 0) return false;
    const Ty dt = parse_ty(op.types[0]);
    if (dt == Ty::kF16x2) in.imm = 0x3c00;
    else if (dt == Ty::kBF16x2) in.imm = 0x3f80;
    else if (dt == Ty::kU32 || dt == Ty::kS32 || dt == Ty::kB32) in.imm = 0xffff;
    else return false;
    in.fn = t == Ty::kF16x2 ? &h_set_x2<1> : &h_set_x2<2>;
    return true;
  }
  if (packed) {
    in.fn = t == Ty::kF16x2 ? &h_setp_x2<1> : &h_setp_x2<2>;
    return true;
  }
  if (op.base == "set") {
    if (op.types.size() != 2 || in.size != 0) return false;
    Ty dt = parse_ty(op.types[0]);
    in.imm = dt == Ty::kF32 ? 0x3f800000 : dt == Ty::kF16 ? 0x3c00 : dt == Ty::kBF16 ? 0x3f80
           : ty_size(dt) == 2 ? 0xffff : 0xffffffff;
    switch (t) {
      case Ty::kF32: in.fn = &h_set<float, 0>; break;
      case Ty::kF64: in.fn = &h_set<double, 0>; break;
      case Ty::kF16: in.fn = &h_set<float, 1>; break;
      case Ty::kBF16: in.fn = &h_set<float, 2>; break;
      case Ty::kS16: in.fn = unsigned_alias ? &h_set<uint16_t, 0> : &h_set<int16_t, 0>; break;
      case Ty::kU16: case Ty::kB16: in.fn = &h_set<uint16_t, 0>; break;
      case Ty::kS32: in.fn = unsigned_alias ? &h_set<uint32_t, 0> : &h_set<int32_t, 0>; break;
      case Ty::kU32: case Ty::kB32: in.fn = &h_set<uint32_t, 0>; break;
      case Ty::kS64: in.fn = unsigned_alias ? &h_set<uint64_t, 0> : &h_set<int64_t, 0>; break;
      case Ty::kU64: case Ty::kB64: in.fn = &h_set<uint64_t, 0>; break;
      default: return false;
    }
    return true;
  }
  switch (t) {
    case Ty::kF32: in.fn = &h_setp<float, 0>; break;
    case Ty::kF64: in.fn = &h_setp<double, 0>; break;
    case Ty::kF16: in.fn = &h_setp<float, 1>; break;
    case Ty::kBF16: in.fn = &h_setp<float, 2>; break;
    case Ty::kS16: in.fn = unsigned_alias ? &h_setp<uint16_t, 0> : &h_setp<int16_t, 0>; break;
    case Ty::kU16: case Ty::kB16: in.fn = &h_setp<uint16_t, 0>; break;
    case Ty::kS32: in.fn = unsigned_alias ? &h_setp<uint32_t, 0> : &h_setp<int32_t, 0>; break;
    case Ty::kU32: case Ty::kB32: in.fn = &h_setp<uint32_t, 0>; break;
    case Ty::kS64: in.fn = unsigned_alias ? &h_setp<uint64_t, 0> : &h_setp<int64_t, 0>; break;
    case Ty::kU64: case Ty::kB64: in.fn = &h_setp<uint64_t, 0>; break;
    case Ty::kU8: case Ty::kB8: in.fn = &h_setp<uint8_t, 0>; break;
    case Ty::kS8: in.fn = &h_setp<int8_t, 0>; break;
    default: return false;
  }
  return true;
}

bool select_float(const OpText& op, Inst& in) {
  if (op.types.empty()) return false;
  const std::string& b = op.base;
  Ty t = parse_ty(op.types.back());
  if (b == "setp" || b == "set") return select_compare(op, in);
  if (b == "testp") {
    static const char* kModes[] = {"finite", "infinite", "number", "notanumber", "normal", "subnormal"};
    for (int i = 0; i < 6; ++i)
      if (op.has(kModes[i])) in.mode = static_cast<uint8_t>(i), in.fn = t == Ty::kF32 ? &h_testp<float> : &h_testp<double>;
    return in.fn != nullptr && (t == Ty::kF32 || t == Ty::kF64);
  }
  if (t == Ty::kF16 || t == Ty::kF16x2 || t == Ty::kBF16 || t == Ty::kBF16x2) {
    in.aux = op.has("sat") ? 1 : 0;
    if (b == "add") in.fn = pick_half<0>(t);
    else if (b == "sub") in.fn = pick_half<1>(t);
    else if (b == "mul") in.fn = pick_half<2>(t);
    else if (b == "fma") in.fn = op.has("relu") ? nullptr : pick_half<3>(t);
    else if (b == "neg") in.fn = pick_half<4>(t);
    else if (b == "abs") in.fn = pick_half<5>(t);
    else if (b == "min") in.fn = pick_half<6>(t);
    else if (b == "max") in.fn = pick_half<7>(t);
    else if (b == "ex2") in.fn = pick_half<8>(t);
    else if (b == "tanh") in.fn = pick_half<9>(t);
    return in.fn != nullptr;
  }
  if (t != Ty::kF32 && t != Ty::kF64) return false;
  bool sat = op.has("sat");
  uint8_t rnd = rounding(op);
  Handler h = nullptr;
  if (b == "add") h = sat ? pick_bin<FAdd, true>(t) : pick_bin<FAdd, false>(t);
  else if (b == "sub") h = sat ? pick_bin<FSub, true>(t) : pick_bin<FSub, false>(t);
  else if (b == "mul") h = sat ? pick_bin<FMul, true>(t) : pick_bin<FMul, false>(t);
  else if (b == "div") h = pick_bin<FDiv, false>(t);
  else if (b == "min") h = op.has("NaN") ? pick_bin<FMinNaN, false>(t) : pick_bin<FMin, false>(t);
  else if (b == "max") h = op.has("NaN") ? pick_bin<FMaxNaN, false>(t) : pick_bin<FMax, false>(t);
  else if (b == "copysign") h = pick_bin<FCopysign, false>(t);
  else if (b == "fma" || b == "mad") {
    if (t == Ty::kF32) h = sat ? &h_fma<float, true> : &h_fma<float, false>;
    else h = sat ? &h_fma<double, true> : &h_fma<double, false>;
  } else if (b == "neg") h = pick_un<kNeg>(t);
  else if (b == "abs") h = pick_un<kAbs>(t);
  else if (b == "sqrt") h = pick_un<kSqrt>(t);
  else if (b == "rsqrt") h = pick_un<kRsqrt>(t);
  else if (b == "rcp") h = pick_un<kRcp>(t);
  else if (b == "sin") h = pick_un<kSin>(t);
  else if (b == "cos") h = pick_un<kCos>(t);
  else if (b == "lg2") h = pick_un<kLg2>(t);
  else if (b == "ex2") h = pick_un<kEx2>(t);
  else if (b == "tanh") h = pick_un<kTanh>(t);
  if (!h) return false;
  if (rnd != 0 && !sat) {
    in.mode = rnd;
    h = with_rounding(h, rnd);
  }
  in.fn = h;
  return h != nullptr;
}

}  // namespace rgpu::ptx
