// Scalar video instructions: vadd vsub vabsdiff vmin vmax vshl vshr vmad
// (PTX ISA, "Scalar Video Instructions"). Each source is a byte, half-word
// or word of a register, sign- or zero-extended by its type; the operation
// is done in wide arithmetic, then optionally saturated to the destination's
// range, combined with c (.add/.min/.max) or merged into c (d.dsel), and
// truncated to 32 bits.
#include <algorithm>

#include "ir.h"

namespace rgpu::ptx {
namespace {

using i128 = __int128;

enum VOp : uint8_t { kVAdd, kVSub, kVAbsdiff, kVMin, kVMax, kVShl, kVShr, kVMad };

// The form of one instruction, packed into Inst::imm at decode time.
// Selectors: 0 the whole word, 1..4 bytes b0..b3, 5..6 half-words h0..h1.
constexpr int kASelShift = 0, kBSelShift = 3, kDSelShift = 6;
constexpr uint32_t kASigned = 1u << 9, kBSigned = 1u << 10, kDSigned = 1u << 11, kSat = 1u << 12,
                   kClamp = 1u << 13, kPlusOne = 1u << 14;
constexpr int kOp2Shift = 15;    // 0 none, 1 add, 2 min, 3 max
constexpr int kScaleShift = 17;  // vmad: 0 none, 1 shr7, 2 shr15

inline uint32_t sel_of(uint32_t cfg, int shift) { return (cfg >> shift) & 7u; }

// partSelectSignExtend of the ISA.
inline i128 part(uint64_t reg, uint32_t sel, bool sgn) {
  uint32_t v = static_cast<uint32_t>(reg);
  if (sel == 0) return sgn ? i128{static_cast<int32_t>(v)} : i128{v};
  if (sel <= 4) {
    uint8_t b = static_cast<uint8_t>(v >> (8 * (sel - 1)));
    return sgn ? i128{static_cast<int8_t>(b)} : i128{b};
  }
  uint16_t h = static_cast<uint16_t>(v >> (16 * (sel - 5)));
  return sgn ? i128{static_cast<int16_t>(h)} : i128{h};
}

inline i128 clamp(i128 v, i128 lo, i128 hi) { return v < lo ? lo : v > hi ? hi : v; }

// optSaturate, optSecondaryOp and optMerge of the ISA.
inline uint32_t finish(i128 t, uint64_t creg, uint32_t cfg) {
  uint32_t dsel = sel_of(cfg, kDSelShift);
  bool dsgn = cfg & kDSigned;
  if (cfg & kSat) {
    int bits = dsel == 0 ? 32 : dsel <= 4 ? 8 : 16;
    i128 lo = dsgn ? -(i128{1} << (bits - 1)) : 0;
    i128 hi = dsgn ? (i128{1} << (bits - 1)) - 1 : (i128{1} << bits) - 1;
    t = clamp(t, lo, hi);
  }
  uint32_t c = static_cast<uint32_t>(creg);
  switch ((cfg >> kOp2Shift) & 3u) {
    case 1: t += part(c, 0, dsgn); break;
    case 2: t = std::min(t, part(c, 0, dsgn)); break;
    case 3: t = std::max(t, part(c, 0, dsgn)); break;
    default: break;
  }
  uint32_t r = static_cast<uint32_t>(t);
  if (dsel >= 1 && dsel <= 4) {
    uint32_t sh = 8 * (dsel - 1);
    return ((r & 0xffu) << sh) | (c & ~(0xffu << sh));
  }
  if (dsel >= 5) {
    uint32_t sh = 16 * (dsel - 5);
    return ((r & 0xffffu) << sh) | (c & ~(0xffffu << sh));
  }
  return r;
}

template <int kOp>
void h_video(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = in.c == kNoSlot ? nullptr : x.reg(in.c);
  const uint32_t cfg = static_cast<uint32_t>(in.imm);
  const uint32_t asel = sel_of(cfg, kASelShift), bsel = sel_of(cfg, kBSelShift);
  const bool asgn = cfg & kASigned, bsgn = cfg & kBSigned;
  for_lanes(m, [&](int l) {
    i128 ta = part(a[l], asel, asgn), tb = part(b[l], bsel, bsgn);
    i128 t;
    if constexpr (kOp == kVAdd) {
      t = ta + tb;
    } else if constexpr (kOp == kVSub) {
      t = ta - tb;
    } else if constexpr (kOp == kVAbsdiff) {
      t = ta > tb ? ta - tb : tb - ta;
    } else if constexpr (kOp == kVMin) {
      t = std::min(ta, tb);
    } else if constexpr (kOp == kVMax) {
      t = std::max(ta, tb);
    } else {
      // The shift amount is unsigned (btype is .u32): .clamp caps it at 32,
      // .wrap keeps its low 5 bits. A signed a shifts right arithmetically.
      uint32_t sh = static_cast<uint32_t>(tb);
      sh = (cfg & kClamp) ? std::min<uint32_t>(sh, 32) : (sh & 31u);
      if constexpr (kOp == kVShl) t = static_cast<i128>(static_cast<unsigned __int128>(ta) << sh);
      else t = ta >> sh;
    }
    d[l] = finish(t, c ? c[l] : 0, cfg);
  });
}

// vmad: (a*b) + c [+1 with .po], optionally scaled right by 7 or 15 bits and
// saturated. The result is signed when a or b is; c has that signedness.
void h_vmad(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = x.reg(in.c);
  const uint32_t cfg = static_cast<uint32_t>(in.imm);
  const uint32_t asel = sel_of(cfg, kASelShift), bsel = sel_of(cfg, kBSelShift);
  const bool asgn = cfg & kASigned, bsgn = cfg & kBSigned, sgn = asgn || bsgn;
  const uint32_t scale = (cfg >> kScaleShift) & 3u;
  for_lanes(m, [&](int l) {
    i128 t = part(a[l], asel, asgn) * part(b[l], bsel, bsgn) + part(c[l], 0, sgn) + ((cfg & kPlusOne) ? 1 : 0);
    if (scale) t >>= scale == 1 ? 7 : 15;
    uint64_t r = static_cast<uint64_t>(t);
    if (cfg & kSat) {
      if (sgn) r = static_cast<uint64_t>(std::clamp<int64_t>(static_cast<int64_t>(r), INT32_MIN, INT32_MAX));
      else r = std::min<uint64_t>(r, UINT32_MAX);
    }
    d[l] = static_cast<uint32_t>(r);
  });
}

int vop_of(const std::string& b) {
  static const char* kNames[] = {"vadd", "vsub", "vabsdiff", "vmin", "vmax", "vshl", "vshr", "vmad"};
  for (int i = 0; i < 8; ++i)
    if (b == kNames[i]) return i;
  return -1;
}

}  // namespace

bool is_video(const std::string& base) { return vop_of(base) >= 0; }

uint8_t take_selector(std::string* name) {
  static const char* kSels[] = {".b0", ".b1", ".b2", ".b3", ".h0", ".h1"};
  if (name->size() < 4) return 0;
  std::string tail = name->substr(name->size() - 3);
  for (uint8_t i = 0; i < 6; ++i)
    if (tail == kSels[i]) {
      name->resize(name->size() - 3);
      return static_cast<uint8_t>(i + 1);
    }
  return 0;
}

std::string select_video(const OpText& op, uint32_t sels, size_t nops, Inst& in) {
  const int v = vop_of(op.base);
  const bool shift = v == kVShl || v == kVShr, mad = v == kVMad;
  if (op.types.size() != 3) return "needs .dtype.atype.btype";
  for (const auto& t : op.types)
    if (t != "u32" && t != "s32") return "types other than .u32/.s32";
  if (shift && op.types[2] != "u32") return "shift amount type must be .u32";
  uint32_t cfg = sels;
  if (op.types[0] == "s32") cfg |= kDSigned;
  if (op.types[1] == "s32") cfg |= kASigned;
  if (op.types[2] == "s32") cfg |= kBSigned;
  int modes = 0, op2 = 0;
  for (const auto& md : op.mods) {
    if (md == "sat") cfg |= kSat;
    else if (shift && (md == "clamp" || md == "wrap")) { ++modes; if (md == "clamp") cfg |= kClamp; }
    else if (!mad && !op2 && (md == "add" || md == "min" || md == "max")) op2 = md == "add" ? 1 : md == "min" ? 2 : 3;
    else if (mad && md == "po") cfg |= kPlusOne;
    else if (mad && !((cfg >> kScaleShift) & 3u) && (md == "shr7" || md == "shr15"))
      cfg |= (md == "shr7" ? 1u : 2u) << kScaleShift;
    else return "modifier ." + md + " of the SIMD or unknown form";
  }
  if (shift && modes != 1) return "needs exactly one of .clamp/.wrap";
  const uint32_t dsel = sel_of(sels, kDSelShift);
  if (mad && dsel) return "vmad has no destination selector";
  if (op2 && dsel) return "secondary operation with a destination selector";
  const size_t want = (mad || op2 || dsel) ? 4 : 3;
  if (nops != want) return "expects " + std::to_string(want) + " operands in this form";
  cfg |= static_cast<uint32_t>(op2) << kOp2Shift;
  in.imm = cfg;
  switch (v) {
    case kVAdd: in.fn = &h_video<kVAdd>; break;
    case kVSub: in.fn = &h_video<kVSub>; break;
    case kVAbsdiff: in.fn = &h_video<kVAbsdiff>; break;
    case kVMin: in.fn = &h_video<kVMin>; break;
    case kVMax: in.fn = &h_video<kVMax>; break;
    case kVShl: in.fn = &h_video<kVShl>; break;
    case kVShr: in.fn = &h_video<kVShr>; break;
    default: in.fn = &h_vmad; break;
  }
  return "";
}

}  // namespace rgpu::ptx
