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

// The lanes each lane's collective covers: its membermask operand (in.target
// for the .sync forms) among the lanes executing the instruction together.
// The scheduler has already waited for every non-exited lane of the mask
// (Kind::kWarpSync), so m holds all of them that will ever come. Lanes may
// pass different masks (groups from match.any.sync): `each_group` calls
// fn(members, lanes) once per distinct mask, lanes being those that passed it.
template <typename F>
void each_group(ExecCtx& x, const Inst& in, uint32_t m, F&& fn) {
  if (in.target == kNoSlot) {
    fn(m, m);
    return;
  }
  const uint64_t* mm = x.reg(in.target);
  uint32_t todo = m;
  while (todo) {
    uint32_t members = static_cast<uint32_t>(mm[__builtin_ctz(todo)]) & m;
    uint32_t lanes = 0;
    for_lanes(todo, [&](int l) {
      if ((static_cast<uint32_t>(mm[l]) & m) == members) lanes |= 1u << l;
    });
    fn(members, lanes);
    todo &= ~lanes;
  }
}

// mode: 0 all, 1 any, 2 uni, 3 ballot. A lane outside a lane's membermask
// contributes nothing (a 0 bit to ballot).
void h_vote(ExecCtx& x, const Inst& in, uint32_t m) {
  const uint64_t* a = x.reg(in.a);
  bool neg = in.aux & 0x10;
  uint32_t truth = 0;
  for_lanes(m, [&](int l) {
    if ((a[l] & 1) ^ neg) truth |= 1u << l;
  });
  uint64_t* d = x.reg(in.d);
  each_group(x, in, m, [&](uint32_t members, uint32_t lanes) {
    uint32_t ballot = truth & members;
    uint64_t r;
    switch (in.mode) {
      case 0: r = ballot == members; break;
      case 1: r = ballot != 0; break;
      case 2: r = ballot == 0 || ballot == members; break;
      default: r = ballot; break;
    }
    for_lanes(lanes, [&](int l) { d[l] = r; });
  });
}

// mode: 0 any, 1 all. aux: operand width 8 bytes when 1.
void h_match(ExecCtx& x, const Inst& in, uint32_t m) {
  const uint64_t* a = x.reg(in.a);
  uint64_t vals[32];
  uint64_t mask = in.aux ? ~0ull : 0xffffffffull;
  for (int l = 0; l < 32; ++l) vals[l] = a[l] & mask;
  uint64_t* d = x.reg(in.d);
  uint64_t* p = in.d2 == kNoSlot ? nullptr : x.reg(in.d2);
  uint32_t out[32] = {};
  bool pout[32] = {};
  each_group(x, in, m, [&](uint32_t members, uint32_t lanes) {
    if (in.mode == 0) {
      for_lanes(lanes, [&](int l) {
        uint32_t r = 0;
        for_lanes(members, [&](int k) {
          if (vals[k] == vals[l]) r |= 1u << k;
        });
        out[l] = r;
      });
    } else {
      bool all = true;
      int first = members ? __builtin_ctz(members) : 0;
      for_lanes(members, [&](int k) { all = all && vals[k] == vals[first]; });
      for_lanes(lanes, [&](int l) {
        out[l] = all ? members : 0;
        pout[l] = all;
      });
    }
  });
  for_lanes(m, [&](int l) {
    d[l] = out[l];
    if (p) p[l] = pout[l];
  });
}

void h_activemask(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  for_lanes(m, [&](int l) { d[l] = m; });
}

// mode: 0 add, 1 min, 2 max, 3 and, 4 or, 5 xor; aux 1: signed. Each lane
// gets the reduction over the lanes of its own membermask.
void h_redux(ExecCtx& x, const Inst& in, uint32_t m) {
  const uint64_t* a = x.reg(in.a);
  bool sgn = in.aux & 1;
  uint32_t out[32] = {};
  each_group(x, in, m, [&](uint32_t members, uint32_t lanes) {
    uint32_t acc = 0;
    bool first = true;
    for_lanes(members, [&](int l) {
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
    for_lanes(lanes, [&](int l) { out[l] = acc; });
  });
  uint64_t* d = x.reg(in.d);
  for_lanes(m, [&](int l) { d[l] = out[l]; });
}

// The leader is the lowest lane of the membermask that executes elect.sync.
void h_elect(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  uint64_t* p = in.d2 == kNoSlot ? nullptr : x.reg(in.d2);
  int leader[32] = {};
  each_group(x, in, m, [&](uint32_t members, uint32_t lanes) {
    int first = members ? __builtin_ctz(members) : -1;
    for_lanes(lanes, [&](int l) { leader[l] = first; });
  });
  for_lanes(m, [&](int l) {
    if (in.d != kNoSlot) d[l] = static_cast<uint32_t>(leader[l] < 0 ? 0 : leader[l]);
    if (p) p[l] = l == leader[l];
  });
}

}  // namespace

// The .sync forms carry a membermask: the scheduler waits for its lanes
// (Kind::kWarpSync) and the handler reads it from in.target.
void sync_form(Inst& in, uint32_t mask_slot) {
  in.kind = mask_slot == kNoSlot ? Kind::kOp : Kind::kWarpSync;
  in.target = mask_slot;
}

bool select_warp(const OpText& op, Inst& in) {
  const std::string& b = op.base;
  if (select_cvta(op, in)) return true;
  bool sync = op.has("sync");
  if (b == "shfl") {
    if (!sync) return false;
    in.mode = op.has("up") ? 0 : op.has("down") ? 1 : op.has("bfly") ? 2 : op.has("idx") ? 3 : 255;
    if (in.mode == 255 || in.c == kNoSlot) return false;
    in.fn = &h_shfl;
    sync_form(in, in.e);
    return true;
  }
  if (b == "vote") {
    in.mode = op.has("all") ? 0 : op.has("any") ? 1 : op.has("uni") ? 2 : op.has("ballot") ? 3 : 255;
    if (in.mode == 255) return false;
    if (sync && in.b == kNoSlot) return false;
    in.fn = &h_vote;
    sync_form(in, sync ? in.b : kNoSlot);
    return true;
  }
  if (b == "match") {
    in.mode = op.has("any") ? 0 : op.has("all") ? 1 : 255;
    if (in.mode == 255 || op.types.empty() || in.b == kNoSlot) return false;
    in.aux = parse_ty(op.types.back()) == Ty::kB64 ? 1 : 0;
    in.fn = &h_match;
    sync_form(in, in.b);
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
    if (in.mode == 255 || op.types.empty() || in.b == kNoSlot) return false;
    Ty t = parse_ty(op.types.back());
    if (t != Ty::kU32 && t != Ty::kS32 && t != Ty::kB32) return false;
    in.aux = t == Ty::kS32 ? 1 : 0;
    in.fn = &h_redux;
    sync_form(in, in.b);
    return true;
  }
  if (b == "elect") {
    if (in.a == kNoSlot) return false;
    in.fn = &h_elect;
    sync_form(in, in.a);
    return true;
  }
  return false;
}

}  // namespace rgpu::ptx
