// Warp-level instructions: shfl.sync, vote.sync, match.sync, activemask,
// redux.sync, elect.sync. They see the whole warp's registers at once, which
// is why lanes of a warp run in lockstep.
#include "ops_common.h"

namespace rgpu::ptx {

bool select_cvta(const OpText& op, Inst& in);

namespace {

// mode: 0 up, 1 down, 2 bfly, 3 idx.
void h_shfl(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t src[32];
  const uint64_t* a = x.reg(in.a);
  memcpy(src, a, sizeof(src));
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = x.reg(in.c);
  uint64_t* d = x.reg(in.d);
  uint64_t* p = in.d2 == kNoSlot ? nullptr : x.reg(in.d2);
  uint8_t mode = in.mode;
  for_lanes(m, [&](int l) {
    int lane = l;
    uint32_t bval = static_cast<uint32_t>(b[l]) & 0x1f;
    uint32_t cval = static_cast<uint32_t>(c[l]);
    int seg = static_cast<int>((cval >> 8) & 0x1f);
    int max_lane = (lane & seg) | (static_cast<int>(cval & 0x1f) & ~seg);
    int min_lane = lane & seg;
    int j;
    bool pval;
    switch (mode) {
      case 0: j = lane - static_cast<int>(bval); pval = j >= max_lane; break;
      case 1: j = lane + static_cast<int>(bval); pval = j <= max_lane; break;
      case 2: j = lane ^ static_cast<int>(bval); pval = j <= max_lane; break;
      default: j = min_lane | (static_cast<int>(bval) & ~seg); pval = j <= max_lane; break;
    }
    if (!pval || j < 0 || j > 31) j = lane;
    d[l] = src[j] & 0xffffffffu;
    if (p) p[l] = pval;
  });
}

// mode: 0 all, 1 any, 2 uni, 3 ballot.
void h_vote(ExecCtx& x, const Inst& in, uint32_t m) {
  const uint64_t* a = x.reg(in.a);
  bool neg = in.aux & 0x10;
  uint32_t ballot = 0;
  for_lanes(m, [&](int l) {
    if ((a[l] & 1) ^ neg) ballot |= 1u << l;
  });
  uint64_t* d = x.reg(in.d);
  uint64_t r;
  switch (in.mode) {
    case 0: r = ballot == m; break;
    case 1: r = ballot != 0; break;
    case 2: r = ballot == 0 || ballot == m; break;
    default: r = ballot; break;
  }
  for_lanes(m, [&](int l) { d[l] = r; });
}

// mode: 0 any, 1 all. aux: operand width 8 bytes when 1.
void h_match(ExecCtx& x, const Inst& in, uint32_t m) {
  const uint64_t* a = x.reg(in.a);
  uint64_t vals[32];
  uint64_t mask = in.aux ? ~0ull : 0xffffffffull;
  for (int l = 0; l < 32; ++l) vals[l] = a[l] & mask;
  uint64_t* d = x.reg(in.d);
  uint64_t* p = in.d2 == kNoSlot ? nullptr : x.reg(in.d2);
  if (in.mode == 0) {
    uint32_t out[32];
    for_lanes(m, [&](int l) {
      uint32_t r = 0;
      for_lanes(m, [&](int k) {
        if (vals[k] == vals[l]) r |= 1u << k;
      });
      out[l] = r;
    });
    for_lanes(m, [&](int l) { d[l] = out[l]; });
  } else {
    bool all = true;
    int first = m ? __builtin_ctz(m) : 0;
    for_lanes(m, [&](int l) { all = all && vals[l] == vals[first]; });
    for_lanes(m, [&](int l) {
      d[l] = all ? m : 0;
      if (p) p[l] = all;
    });
  }
}

void h_activemask(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  for_lanes(m, [&](int l) { d[l] = m; });
}

// mode: 0 add, 1 min, 2 max, 3 and, 4 or, 5 xor; aux 1: signed.
void h_redux(ExecCtx& x, const Inst& in, uint32_t m) {
  const uint64_t* a = x.reg(in.a);
  bool sgn = in.aux & 1;
  uint32_t acc = 0;
  bool first = true;
  for_lanes(m, [&](int l) {
    uint32_t v = static_cast<uint32_t>(a[l]);
    if (first) {
      acc = v;
      first = false;
      return;
    }
    switch (in.mode) {
      case 0: acc += v; break;
      case 1: acc = sgn ? static_cast<uint32_t>(std::min<int32_t>(acc, v)) : std::min(acc, v); break;
      case 2: acc = sgn ? static_cast<uint32_t>(std::max<int32_t>(acc, v)) : std::max(acc, v); break;
      case 3: acc &= v; break;
      case 4: acc |= v; break;
      default: acc ^= v; break;
    }
  });
  uint64_t* d = x.reg(in.d);
  for_lanes(m, [&](int l) { d[l] = acc; });
}

void h_elect(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  uint64_t* p = in.d2 == kNoSlot ? nullptr : x.reg(in.d2);
  int leader = m ? __builtin_ctz(m) : 0;
  for_lanes(m, [&](int l) {
    d[l] = static_cast<uint32_t>(leader);
    if (p) p[l] = l == leader;
  });
}

}  // namespace

bool select_warp(const OpText& op, Inst& in) {
  const std::string& b = op.base;
  if (select_cvta(op, in)) return true;
  if (b == "shfl") {
    if (!op.has("sync")) return false;
    in.mode = op.has("up") ? 0 : op.has("down") ? 1 : op.has("bfly") ? 2 : op.has("idx") ? 3 : 255;
    if (in.mode == 255 || in.c == kNoSlot) return false;
    in.fn = &h_shfl;
    return true;
  }
  if (b == "vote") {
    in.mode = op.has("all") ? 0 : op.has("any") ? 1 : op.has("uni") ? 2 : op.has("ballot") ? 3 : 255;
    if (in.mode == 255) return false;
    in.fn = &h_vote;
    return true;
  }
  if (b == "match") {
    in.mode = op.has("any") ? 0 : op.has("all") ? 1 : 255;
    if (in.mode == 255 || op.types.empty()) return false;
    in.aux = parse_ty(op.types.back()) == Ty::kB64 ? 1 : 0;
    in.fn = &h_match;
    return true;
  }
  if (b == "activemask") {
    in.fn = &h_activemask;
    return true;
  }
  if (b == "redux") {
    static const char* kOps[] = {"add", "min", "max", "and", "or", "xor"};
    in.mode = 255;
    for (int i = 0; i < 6; ++i)
      if (op.has(kOps[i])) in.mode = static_cast<uint8_t>(i);
    if (in.mode == 255 || op.types.empty()) return false;
    Ty t = parse_ty(op.types.back());
    if (t != Ty::kU32 && t != Ty::kS32 && t != Ty::kB32) return false;
    in.aux = t == Ty::kS32 ? 1 : 0;
    in.fn = &h_redux;
    return true;
  }
  if (b == "elect") {
    in.fn = &h_elect;
    return true;
  }
  return false;
}

}  // namespace rgpu::ptx
