// cvt: conversions between every integer and floating point width, with
// rounding (.rn/.rz/.rm/.rp, .rni/.rzi/.rmi/.rpi) and saturation.
#include <cfenv>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops_common.h"

namespace rgpu::ptx {
namespace {

struct Half { uint16_t bits; };
struct BHalf { uint16_t bits; };

template <class T> constexpr bool kIsHalf = std::is_same_v<T, Half> || std::is_same_v<T, BHalf>;

template <class T>
inline double to_double(uint64_t v) {
  if constexpr (std::is_same_v<T, Half>) return f16_to_f32(static_cast<uint16_t>(v));
  else if constexpr (std::is_same_v<T, BHalf>) return bf16_to_f32(static_cast<uint16_t>(v));
  else return static_cast<double>(rd<T>(v));
}

// Rounds a float to an integral value by mode (0 rn, 1 rz, 2 rm, 3 rp).
inline double round_int(double v, int mode) {
  switch (mode) {
    case 1: return std::trunc(v);
    case 2: return std::floor(v);
    case 3: return std::ceil(v);
    default: return std::nearbyint(v);
  }
}

template <class D>
inline D clamp_to_int(double v) {
  if (std::isnan(v)) return D(0);
  if (v <= static_cast<double>(std::numeric_limits<D>::min())) return std::numeric_limits<D>::min();
  if (v >= static_cast<double>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
  return static_cast<D>(v);
}

// mode: rounding 0..3; aux bit 1: .sat; aux bit 2: integer rounding (.rni etc).
template <class D, class S>
void h_cvt(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const int mode = in.mode;
  const bool sat = in.aux & 1;
  constexpr bool kDF = std::is_floating_point_v<D> || kIsHalf<D>;
  constexpr bool kSF = std::is_floating_point_v<S> || kIsHalf<S>;
  for_lanes(m, [&](int l) {
    if constexpr (!kDF && !kSF) {
      // Integer to integer: extend by the source's signedness, truncate or clamp.
      S v = rd<S>(a[l]);
      if (sat) {
        using W = std::conditional_t<std::is_signed_v<S>, int64_t, uint64_t>;
        W w = static_cast<W>(v);
        D r;
        if constexpr (std::is_signed_v<S>) {
          if (w < 0 && !std::is_signed_v<D>) r = 0;
          else if (w > static_cast<W>(std::numeric_limits<D>::max())) r = std::numeric_limits<D>::max();
          else if (std::is_signed_v<D> && w < static_cast<W>(std::numeric_limits<D>::min())) r = std::numeric_limits<D>::min();
          else r = static_cast<D>(w);
        } else {
          r = w > static_cast<uint64_t>(std::numeric_limits<D>::max()) ? std::numeric_limits<D>::max() : static_cast<D>(w);
        }
        d[l] = wr<D>(r);
      } else {
        using W = std::conditional_t<std::is_signed_v<S>, int64_t, uint64_t>;
        d[l] = wr<D>(static_cast<D>(static_cast<W>(v)));
      }
    } else if constexpr (kSF && !kDF) {
      // Float to integer: round per mode (default rzi... PTX requires one), clamp, NaN -> 0.
      double v = to_double<S>(a[l]);
      d[l] = wr<D>(clamp_to_int<D>(round_int(v, mode)));
    } else if constexpr (!kSF && kDF) {
      S v = rd<S>(a[l]);
      if constexpr (std::is_same_v<D, double>) {
        d[l] = wr<double>(static_cast<double>(v));
      } else if constexpr (std::is_same_v<D, float>) {
        float r;
        if (mode == 0) {
          r = static_cast<float>(v);
        } else {
          int old = fegetround();
          fesetround(mode == 1 ? FE_TOWARDZERO : mode == 2 ? FE_DOWNWARD : FE_UPWARD);
          volatile S vv = v;
          r = static_cast<float>(vv);
          fesetround(old);
        }
        if (sat) r = std::fmin(std::fmax(r, 0.f), 1.f);
        d[l] = wr<float>(r);
      } else if constexpr (std::is_same_v<D, Half>) {
        d[l] = f32_to_f16(static_cast<float>(v));
      } else {
        d[l] = f32_to_bf16(static_cast<float>(v));
      }
    } else {
      // Float to float.
      double v = to_double<S>(a[l]);
      if (in.aux & 2) v = round_int(v, mode);
      if (sat) v = std::isnan(v) ? 0.0 : std::fmin(std::fmax(v, 0.0), 1.0);
      if constexpr (std::is_same_v<D, double>) {
        d[l] = wr<double>(v);
      } else if constexpr (std::is_same_v<D, float>) {
        float r;
        if (mode == 0 || (in.aux & 2) || !std::is_same_v<S, double>) {
          r = static_cast<float>(v);
        } else {
          int old = fegetround();
          fesetround(mode == 1 ? FE_TOWARDZERO : mode == 2 ? FE_DOWNWARD : FE_UPWARD);
          volatile double vv = v;
          r = static_cast<float>(vv);
          fesetround(old);
        }
        d[l] = wr<float>(r);
      } else if constexpr (std::is_same_v<D, Half>) {
        d[l] = f32_to_f16(static_cast<float>(v));
      } else {
        d[l] = f32_to_bf16(static_cast<float>(v));
      }
    }
  });
}

// cvt.rn.{f16x2,bf16x2}.f32 d, a, b: a to the upper half, b to the lower.
template <bool kBf>
void h_cvt_x2(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  bool relu = in.aux & 4;
  for_lanes(m, [&](int l) {
    float av = rd<float>(a[l]), bv = rd<float>(b[l]);
    if (relu) av = av < 0 ? 0 : av, bv = bv < 0 ? 0 : bv;
    uint32_t hi = kBf ? f32_to_bf16(av) : f32_to_f16(av);
    uint32_t lo = kBf ? f32_to_bf16(bv) : f32_to_f16(bv);
    d[l] = (hi << 16) | lo;
  });
}

template <class D>
Handler pick_src(Ty s) {
  switch (s) {
    case Ty::kU8: case Ty::kB8: return &h_cvt<D, uint8_t>;
    case Ty::kS8: return &h_cvt<D, int8_t>;
    case Ty::kU16: case Ty::kB16: return &h_cvt<D, uint16_t>;
    case Ty::kS16: return &h_cvt<D, int16_t>;
    case Ty::kU32: case Ty::kB32: return &h_cvt<D, uint32_t>;
    case Ty::kS32: return &h_cvt<D, int32_t>;
    case Ty::kU64: case Ty::kB64: return &h_cvt<D, uint64_t>;
    case Ty::kS64: return &h_cvt<D, int64_t>;
    case Ty::kF16: return &h_cvt<D, Half>;
    case Ty::kBF16: return &h_cvt<D, BHalf>;
    case Ty::kF32: return &h_cvt<D, float>;
    case Ty::kF64: return &h_cvt<D, double>;
    default: return nullptr;
  }
}

// cvt.{rna,rn,rz}.tf32.f32: the f32 rounded to tf32's 10 mantissa bits (the
// low 13 bits zero). mode 0: to nearest, ties away; 1: to nearest even; 2:
// toward zero. NaN stays a NaN, infinities stay.
template <int kMode>
void h_cvt_tf32(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  for_lanes(m, [&](int l) {
    const uint32_t u = static_cast<uint32_t>(a[l]);
    uint32_t r;
    if ((u & 0x7fffffffu) > 0x7f800000u) r = 0x7fffe000u;
    else if ((u & 0x7fffffffu) == 0x7f800000u || kMode == 2) r = u & 0xffffe000u;
    else if (kMode == 0) r = (u + 0x1000u) & 0xffffe000u;
    else r = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
    d[l] = r;
  });
}

}  // namespace

bool select_cvt(const OpText& op, Inst& in) {
  // tf32 is not one of the operand types: it shows as a modifier.
  if (op.base == "cvt" && op.has("tf32") && op.types.size() == 1 && op.types[0] == "f32") {
    if (op.has("relu") || op.has("satfinite")) return false;
    if (op.has("rna")) in.fn = &h_cvt_tf32<0>;
    else if (op.has("rn")) in.fn = &h_cvt_tf32<1>;
    else if (op.has("rz")) in.fn = &h_cvt_tf32<2>;
    return in.fn != nullptr;
  }
  if (op.base != "cvt" || op.types.size() != 2) return false;
  Ty dt = parse_ty(op.types[0]), st = parse_ty(op.types[1]);
  in.aux = op.has("sat") ? 1 : 0;
  if (op.has("relu")) in.aux |= 4;
  in.mode = 0;
  if (op.has("rz") || op.has("rzi")) in.mode = 1;
  if (op.has("rm") || op.has("rmi")) in.mode = 2;
  if (op.has("rp") || op.has("rpi")) in.mode = 3;
  if (op.has("rni") || op.has("rzi") || op.has("rmi") || op.has("rpi")) in.aux |= 2;
  bool float_src = st == Ty::kF16 || st == Ty::kBF16 || st == Ty::kF32 || st == Ty::kF64;
  bool float_dst = dt == Ty::kF16 || dt == Ty::kBF16 || dt == Ty::kF32 || dt == Ty::kF64;
  // Float to integer without an explicit integer rounding rounds toward zero.
  if (float_src && !float_dst && !(in.aux & 2)) in.mode = 1;
  if ((dt == Ty::kF16x2 || dt == Ty::kBF16x2) && st == Ty::kF32) {
    if (in.b == kNoSlot) return false;
    in.fn = dt == Ty::kF16x2 ? &h_cvt_x2<false> : &h_cvt_x2<true>;
    return true;
  }
  switch (dt) {
    case Ty::kU8: case Ty::kB8: in.fn = pick_src<uint8_t>(st); break;
    case Ty::kS8: in.fn = pick_src<int8_t>(st); break;
    case Ty::kU16: case Ty::kB16: in.fn = pick_src<uint16_t>(st); break;
    case Ty::kS16: in.fn = pick_src<int16_t>(st); break;
    case Ty::kU32: case Ty::kB32: in.fn = pick_src<uint32_t>(st); break;
    case Ty::kS32: in.fn = pick_src<int32_t>(st); break;
    case Ty::kU64: case Ty::kB64: in.fn = pick_src<uint64_t>(st); break;
    case Ty::kS64: in.fn = pick_src<int64_t>(st); break;
    case Ty::kF16: in.fn = pick_src<Half>(st); break;
    case Ty::kBF16: in.fn = pick_src<BHalf>(st); break;
    case Ty::kF32: in.fn = pick_src<float>(st); break;
    case Ty::kF64: in.fn = pick_src<double>(st); break;
    default: break;
  }
  return in.fn != nullptr;
}

}  // namespace rgpu::ptx
