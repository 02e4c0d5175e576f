// Integer, bit, predicate, comparison and move instructions.
#include <chrono>
#include <type_traits>

#include "ir.h"
#include "ops_common.h"

namespace rgpu::ptx {
namespace {

template <class T> using U = std::make_unsigned_t<T>;
template <class T> constexpr int kBits = sizeof(T) * 8;

struct Add { template <class T> static T f(T a, T b) { return static_cast<T>(static_cast<U<T>>(a) + static_cast<U<T>>(b)); } };
struct Sub { template <class T> static T f(T a, T b) { return static_cast<T>(static_cast<U<T>>(a) - static_cast<U<T>>(b)); } };
struct MulLo { template <class T> static T f(T a, T b) { return static_cast<T>(static_cast<U<T>>(a) * static_cast<U<T>>(b)); } };
struct MulHi {
  template <class T> static T f(T a, T b) {
    if constexpr (sizeof(T) == 8) {
      using W = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
      return static_cast<T>((static_cast<W>(a) * static_cast<W>(b)) >> 64);
    } else {
      using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
      return static_cast<T>((static_cast<W>(a) * static_cast<W>(b)) >> kBits<T>);
    }
  }
};
struct Div {
  template <class T> static T f(T a, T b) {
    if (b == 0) return static_cast<T>(-1);
    if constexpr (std::is_signed_v<T>) if (b == -1) return static_cast<T>(-static_cast<U<T>>(a));
    return a / b;
  }
};
struct Rem {
  template <class T> static T f(T a, T b) {
    if (b == 0) return a;
    if constexpr (std::is_signed_v<T>) if (b == -1) return 0;
    return a % b;
  }
};
struct Min { template <class T> static T f(T a, T b) { return a < b ? a : b; } };
struct Max { template <class T> static T f(T a, T b) { return a > b ? a : b; } };
struct And { template <class T> static T f(T a, T b) { return a & b; } };
struct Or { template <class T> static T f(T a, T b) { return a | b; } };
struct Xor { template <class T> static T f(T a, T b) { return a ^ b; } };
struct AddSat {
  template <class T> static T f(T a, T b) {
    int64_t r = static_cast<int64_t>(a) + static_cast<int64_t>(b);
    if (r > INT32_MAX) return INT32_MAX;
    if (r < INT32_MIN) return INT32_MIN;
    return static_cast<T>(r);
  }
};
struct SubSat {
  template <class T> static T f(T a, T b) {
    int64_t r = static_cast<int64_t>(a) - static_cast<int64_t>(b);
    if (r > INT32_MAX) return INT32_MAX;
    if (r < INT32_MIN) return INT32_MIN;
    return static_cast<T>(r);
  }
};
struct Mul24Lo {
  template <class T> static T f(T a, T b) {
    int64_t x = std::is_signed_v<T> ? (static_cast<int64_t>(static_cast<uint64_t>(a) << 40) >> 40) : (a & 0xffffff);
    int64_t y = std::is_signed_v<T> ? (static_cast<int64_t>(static_cast<uint64_t>(b) << 40) >> 40) : (b & 0xffffff);
    return static_cast<T>(x * y);
  }
};
struct Mul24Hi {
  template <class T> static T f(T a, T b) {
    int64_t x = std::is_signed_v<T> ? (static_cast<int64_t>(static_cast<uint64_t>(a) << 40) >> 40) : (a & 0xffffff);
    int64_t y = std::is_signed_v<T> ? (static_cast<int64_t>(static_cast<uint64_t>(b) << 40) >> 40) : (b & 0xffffff);
    return static_cast<T>((x * y) >> 16);
  }
};

template <class T, class Op>
void h_bin(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  for_lanes(m, [&](int l) { d[l] = wr<T>(Op::template f<T>(rd<T>(a[l]), rd<T>(b[l]))); });
}

template <class T, bool kLeft>
void h_shift(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  for_lanes(m, [&](int l) {
    uint32_t s = static_cast<uint32_t>(b[l]);
    T v = rd<T>(a[l]);
    T r;
    if (kLeft) r = s >= kBits<T> ? T(0) : static_cast<T>(static_cast<U<T>>(v) << s);
    else if (s >= kBits<T>) r = (std::is_signed_v<T> && v < 0) ? T(-1) : T(0);
    else r = static_cast<T>(v >> s);
    d[l] = wr<T>(r);
  });
}

// mul.wide / mad.wide: T -> twice the width.
template <class T, bool kMad>
void h_wide(ExecCtx& x, const Inst& in, uint32_t m) {
  using W = std::conditional_t<std::is_signed_v<T>,
                               std::conditional_t<sizeof(T) == 2, int32_t, int64_t>,
                               std::conditional_t<sizeof(T) == 2, uint32_t, uint64_t>>;
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = kMad ? x.reg(in.c) : nullptr;
  for_lanes(m, [&](int l) {
    W r = static_cast<W>(static_cast<std::make_unsigned_t<W>>(static_cast<W>(rd<T>(a[l]))) *
                         static_cast<std::make_unsigned_t<W>>(static_cast<W>(rd<T>(b[l]))));
    if (kMad) r = static_cast<W>(static_cast<std::make_unsigned_t<W>>(r) + static_cast<std::make_unsigned_t<W>>(rd<W>(c[l])));
    d[l] = wr<W>(r);
  });
}

template <class T, class Op>
void h_mad(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = x.reg(in.c);
  for_lanes(m, [&](int l) { d[l] = wr<T>(Add::f<T>(Op::template f<T>(rd<T>(a[l]), rd<T>(b[l])), rd<T>(c[l]))); });
}

// add.cc / addc / sub.cc / subc / mad.lo.cc / madc: carry kept per lane in x.carry.
template <class T>
void h_carry(ExecCtx& x, const Inst& in, uint32_t m) {
  // mode bits: 1 use carry in, 2 set carry out, 4 subtract, 8 mad (a*b lo), 16 mad hi
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = in.c == kNoSlot ? nullptr : x.reg(in.c);
  uint32_t cin = x.carry, cout = x.carry;
  using UT = U<T>;
  for_lanes(m, [&](int l) {
    UT av = static_cast<UT>(rd<T>(a[l])), bv = static_cast<UT>(rd<T>(b[l]));
    unsigned __int128 wide;
    if (in.mode & 8) av = static_cast<UT>(av * bv), bv = static_cast<UT>(rd<T>(c[l]));
    if (in.mode & 16) av = static_cast<UT>(MulHi::f<UT>(av, bv)), bv = static_cast<UT>(rd<T>(c[l]));
    UT ci = (in.mode & 1) ? ((cin >> l) & 1) : 0;
    if (in.mode & 4) {
      wide = static_cast<unsigned __int128>(av) - bv - ci;
    } else {
      wide = static_cast<unsigned __int128>(av) + bv + ci;
    }
    d[l] = wr<T>(static_cast<T>(static_cast<UT>(wide)));
    if (in.mode & 2) {
      bool carry = (wide >> kBits<T>) & 1;
      cout = (cout & ~(1u << l)) | (uint32_t{carry} << l);
    }
  });
  x.carry = cout;
}

template <class T, int kOp>
void h_unary(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  for_lanes(m, [&](int l) {
    T v = rd<T>(a[l]);
    using UT = U<T>;
    UT u = static_cast<UT>(v);
    switch (kOp) {
      case 0: d[l] = wr<T>(static_cast<T>(-u)); break;                                   // neg
      case 1: d[l] = wr<T>(v < 0 ? static_cast<T>(-u) : v); break;                        // abs
      case 2: d[l] = wr<T>(static_cast<T>(~u)); break;                                    // not
      case 3: d[l] = static_cast<uint32_t>(__builtin_popcountll(static_cast<uint64_t>(u))); break;  // popc
      case 4: d[l] = static_cast<uint32_t>(u == 0 ? kBits<T> : __builtin_clzll(static_cast<uint64_t>(u)) - (64 - kBits<T>)); break;
      case 5: {  // brev
        UT r = 0;
        for (int i = 0; i < kBits<T>; ++i) r |= static_cast<UT>(((u >> i) & 1) << (kBits<T> - 1 - i));
        d[l] = wr<T>(static_cast<T>(r));
        break;
      }
      case 6: {  // bfind: position of most significant non-sign bit
        UT w = (std::is_signed_v<T> && v < 0) ? static_cast<UT>(~u) : u;
        d[l] = w == 0 ? 0xffffffffu : static_cast<uint32_t>(63 - __builtin_clzll(static_cast<uint64_t>(w)));
        break;
      }
      case 7: d[l] = wr<T>(static_cast<T>(u == 0 ? 1 : 0)); break;  // cnot
      case 8: {  // bfind.shiftamt: left shift that brings that bit to the top
        UT w = (std::is_signed_v<T> && v < 0) ? static_cast<UT>(~u) : u;
        d[l] = w == 0 ? 0xffffffffu
                      : static_cast<uint32_t>(kBits<T> - 1 - (63 - __builtin_clzll(static_cast<uint64_t>(w))));
        break;
      }
    }
  });
}

template <class T>
void h_bfe(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = x.reg(in.c);
  for_lanes(m, [&](int l) {
    using UT = U<T>;
    UT v = static_cast<UT>(rd<T>(a[l]));
    uint32_t pos = static_cast<uint8_t>(b[l]), len = static_cast<uint8_t>(c[l]);
    bool sbit;
    if (std::is_signed_v<T>) {
      uint32_t top = std::min<uint32_t>(pos + len - 1, kBits<T> - 1);
      sbit = len == 0 ? false : ((v >> (pos >= kBits<T> ? kBits<T> - 1 : top)) & 1);
    } else {
      sbit = false;
    }
    UT r = 0;
    for (uint32_t i = 0; i < kBits<T>; ++i) {
      bool bit = (i < len && pos + i < kBits<T>) ? ((v >> (pos + i)) & 1) : sbit;
      r |= static_cast<UT>(UT{bit} << i);
    }
    d[l] = wr<T>(static_cast<T>(r));
  });
}

template <class T>
void h_bfi(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = x.reg(in.c);
  const uint64_t* e = x.reg(in.e);
  for_lanes(m, [&](int l) {
    using UT = U<T>;
    UT f = static_cast<UT>(rd<T>(a[l])), r = static_cast<UT>(rd<T>(b[l]));
    uint32_t pos = static_cast<uint8_t>(c[l]), len = static_cast<uint8_t>(e[l]);
    for (uint32_t i = 0; i < len && pos + i < kBits<T>; ++i) {
      UT bit = UT{1} << (pos + i);
      r = static_cast<UT>((r & ~bit) | (((f >> i) & 1) ? bit : UT{0}));
    }
    d[l] = wr<T>(static_cast<T>(r));
  });
}

void h_prmt(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = x.reg(in.c);
  uint8_t mode = in.mode;
  for_lanes(m, [&](int l) {
    uint64_t src = (static_cast<uint64_t>(static_cast<uint32_t>(b[l])) << 32) | static_cast<uint32_t>(a[l]);
    uint32_t sel = static_cast<uint32_t>(c[l]);
    uint8_t bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(src >> (8 * i));
    uint32_t r = 0;
    if (mode == 0) {
      for (int i = 0; i < 4; ++i) {
        uint32_t s = (sel >> (4 * i)) & 0xf;
        uint8_t v = bytes[s & 7];
        if (s & 8) v = (v & 0x80) ? 0xff : 0;
        r |= uint32_t{v} << (8 * i);
      }
    } else {
      uint32_t n = sel & 3;
      static const uint8_t kF4e[4][4] = {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}};
      static const uint8_t kB4e[4][4] = {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}};
      static const uint8_t kRc8[4][4] = {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}};
      static const uint8_t kEcl[4][4] = {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}};
      static const uint8_t kEcr[4][4] = {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}};
      static const uint8_t kRc16[4][4] = {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}};
      const uint8_t(*t)[4] = mode == 1 ? kF4e : mode == 2 ? kB4e : mode == 3 ? kRc8 : mode == 4 ? kEcl
                           : mode == 5 ? kEcr : kRc16;
      for (int i = 0; i < 4; ++i) r |= uint32_t{bytes[t[n][i]]} << (8 * i);
    }
    d[l] = r;
  });
}

void h_lop3(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = x.reg(in.c);
  const uint64_t* e = x.reg(in.e);
  for_lanes(m, [&](int l) {
    uint32_t lut = static_cast<uint8_t>(e[l]);
    uint32_t A = static_cast<uint32_t>(a[l]), B = static_cast<uint32_t>(b[l]), C = static_cast<uint32_t>(c[l]);
    uint32_t r = 0;
    if (lut & 0x01) r |= ~A & ~B & ~C;
    if (lut & 0x02) r |= ~A & ~B & C;
    if (lut & 0x04) r |= ~A & B & ~C;
    if (lut & 0x08) r |= ~A & B & C;
    if (lut & 0x10) r |= A & ~B & ~C;
    if (lut & 0x20) r |= A & ~B & C;
    if (lut & 0x40) r |= A & B & ~C;
    if (lut & 0x80) r |= A & B & C;
    d[l] = r;
  });
}

// shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: funnel shift of {b:a} by c.
void h_shf(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = x.reg(in.c);
  bool left = in.mode & 1, clamp = in.mode & 2;
  for_lanes(m, [&](int l) {
    uint64_t v = (static_cast<uint64_t>(static_cast<uint32_t>(b[l])) << 32) | static_cast<uint32_t>(a[l]);
    uint32_t n = static_cast<uint32_t>(c[l]);
    n = clamp ? std::min<uint32_t>(n, 32) : (n & 31);
    d[l] = left ? static_cast<uint32_t>((v << n) >> 32) : static_cast<uint32_t>(v >> n);
  });
}

template <class T>
void h_sad(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = x.reg(in.c);
  for_lanes(m, [&](int l) {
    T av = rd<T>(a[l]), bv = rd<T>(b[l]);
    T diff = av < bv ? static_cast<T>(bv - av) : static_cast<T>(av - bv);
    d[l] = wr<T>(Add::f<T>(rd<T>(c[l]), diff));
  });
}

// dp4a / dp2a: aux bit 1 a signed, bit 2 b signed; mode 1 dp2a.lo, 2 dp2a.hi.
void h_dp(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = x.reg(in.c);
  bool sa = in.aux & 1, sb = in.aux & 2;
  for_lanes(m, [&](int l) {
    uint32_t av = static_cast<uint32_t>(a[l]), bv = static_cast<uint32_t>(b[l]);
    int64_t acc = (sa || sb) ? static_cast<int64_t>(static_cast<int32_t>(c[l])) : static_cast<int64_t>(static_cast<uint32_t>(c[l]));
    auto byte = [](uint32_t v, int i, bool s) -> int64_t {
      uint32_t u = (v >> (8 * i)) & 0xff;
      return s ? static_cast<int64_t>(static_cast<int8_t>(u)) : static_cast<int64_t>(u);
    };
    if (in.mode == 0) {
      for (int i = 0; i < 4; ++i) acc += byte(av, i, sa) * byte(bv, i, sb);
    } else {
      int base = in.mode == 2 ? 2 : 0;
      for (int i = 0; i < 2; ++i) {
        uint32_t h = (av >> (16 * i)) & 0xffff;
        int64_t hv = sa ? static_cast<int64_t>(static_cast<int16_t>(h)) : static_cast<int64_t>(h);
        acc += hv * byte(bv, base + i, sb);
      }
    }
    d[l] = static_cast<uint32_t>(acc);
  });
}

// fns.b32 d, mask, base, offset: position of the offset-th set bit from base.
void h_fns(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = x.reg(in.c);
  for_lanes(m, [&](int l) {
    uint32_t mask = static_cast<uint32_t>(a[l]);
    int base = static_cast<int>(static_cast<uint32_t>(b[l]) & 31);
    int offset = static_cast<int32_t>(c[l]);
    uint32_t r = 0xffffffffu;
    if (offset == 0) {
      if (mask & (1u << base)) r = static_cast<uint32_t>(base);
    } else {
      int inc = offset > 0 ? 1 : -1;
      int64_t count = (offset > 0 ? static_cast<int64_t>(offset) : -static_cast<int64_t>(offset)) - 1;
      for (int pos = base; pos >= 0 && pos < 32; pos += inc) {
        if (mask & (1u << pos)) {
          if (count == 0) {
            r = static_cast<uint32_t>(pos);
            break;
          }
          --count;
        }
      }
    }
    d[l] = r;
  });
}

void h_mov(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  for_lanes(m, [&](int l) { d[l] = a[l]; });
}

void h_mov_clock(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  uint64_t ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch()).count());
  uint64_t v = ns;
  if (in.mode == 10) v = static_cast<uint32_t>(ns);
  if (in.mode == 13) v = static_cast<uint32_t>(ns);
  if (in.mode == 14 || in.mode == 15) v = static_cast<uint32_t>(ns >> 32);
  for_lanes(m, [&](int l) { d[l] = v; });
}

// mov.bN {a, b, ...}, x (unpack: mode 1) and mov.bN x, {a, b, ...} (pack: mode 2).
void h_mov_vec(ExecCtx& x, const Inst& in, uint32_t m) {
  uint32_t n = in.aux & 0xf;
  uint32_t w = in.size * 8 / (n ? n : 1);
  uint64_t mask = w >= 64 ? ~0ull : ((1ull << w) - 1);
  if (in.mode == 1) {
    const uint64_t* a = x.reg(in.a);
    for_lanes(m, [&](int l) {
      uint64_t v = a[l];
      for (uint32_t k = 0; k < n; ++k) x.reg(in.v[k])[l] = (v >> (k * w)) & mask;
    });
  } else {
    uint64_t* d = x.reg(in.d);
    for_lanes(m, [&](int l) {
      uint64_t r = 0;
      for (uint32_t k = 0; k < n; ++k) r |= (x.reg(in.v[k])[l] & mask) << (k * w);
      d[l] = r;
    });
  }
}

void h_selp(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = x.reg(in.c);
  for_lanes(m, [&](int l) { d[l] = (c[l] & 1) ? a[l] : b[l]; });
}

template <class T>
void h_slct(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = x.reg(in.c);
  for_lanes(m, [&](int l) { d[l] = rd<T>(c[l]) >= T(0) ? a[l] : b[l]; });
}

// Predicate logic: and/or/xor/not on .pred.
template <int kOp>
void h_pred(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = kOp == 3 ? nullptr : x.reg(in.b);
  bool na = in.aux & 0x10, nb = in.aux & 0x20;
  for_lanes(m, [&](int l) {
    bool p = (a[l] & 1) ^ na;
    bool q = kOp == 3 ? false : ((b[l] & 1) ^ nb);
    d[l] = kOp == 0 ? (p & q) : kOp == 1 ? (p | q) : kOp == 2 ? (p ^ q) : !p;
  });
}

template <class Op>
Handler pick(Ty t) {
  switch (t) {
    case Ty::kB16: case Ty::kU16: return &h_bin<uint16_t, Op>;
    case Ty::kS16: return &h_bin<int16_t, Op>;
    case Ty::kB32: case Ty::kU32: return &h_bin<uint32_t, Op>;
    case Ty::kS32: return &h_bin<int32_t, Op>;
    case Ty::kB64: case Ty::kU64: return &h_bin<uint64_t, Op>;
    case Ty::kS64: return &h_bin<int64_t, Op>;
    default: return nullptr;
  }
}
template <template <class> class H>
Handler pick1(Ty t) {
  switch (t) {
    case Ty::kB16: case Ty::kU16: return &H<uint16_t>::run;
    case Ty::kS16: return &H<int16_t>::run;
    case Ty::kB32: case Ty::kU32: return &H<uint32_t>::run;
    case Ty::kS32: return &H<int32_t>::run;
    case Ty::kB64: case Ty::kU64: return &H<uint64_t>::run;
    case Ty::kS64: return &H<int64_t>::run;
    default: return nullptr;
  }
}
template <int kOp> struct Un { template <class T> struct H { static void run(ExecCtx& x, const Inst& in, uint32_t m) { h_unary<T, kOp>(x, in, m); } }; };
template <bool kL> struct Sh { template <class T> struct H { static void run(ExecCtx& x, const Inst& in, uint32_t m) { h_shift<T, kL>(x, in, m); } }; };
template <class Op> struct Md { template <class T> struct H { static void run(ExecCtx& x, const Inst& in, uint32_t m) { h_mad<T, Op>(x, in, m); } }; };
template <class T> struct Bfe { static void run(ExecCtx& x, const Inst& in, uint32_t m) { h_bfe<T>(x, in, m); } };
// bmsk.{clamp,wrap}.b32 d, a, b: b bits set from bit a (a and b clamped to
// 32, or taken modulo 32 with .wrap); bits past 31 are dropped.
template <bool kWrap>
void h_bmsk(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  const uint64_t* b = x.reg(in.b);
  for_lanes(m, [&](int l) {
    uint32_t start = static_cast<uint32_t>(a[l]), width = static_cast<uint32_t>(b[l]);
    if (kWrap) {
      start &= 31;
      width &= 31;
    } else {
      start = start < 32 ? start : 32;
      width = width < 32 ? width : 32;
    }
    const uint64_t mask = (uint64_t{1} << width) - 1;
    d[l] = (mask << start) & 0xffffffffu;
  });
}

template <class T> struct Bfi { static void run(ExecCtx& x, const Inst& in, uint32_t m) { h_bfi<T>(x, in, m); } };
template <class T> struct Sad { static void run(ExecCtx& x, const Inst& in, uint32_t m) { h_sad<T>(x, in, m); } };
template <class T> struct Carry { static void run(ExecCtx& x, const Inst& in, uint32_t m) { h_carry<T>(x, in, m); } };

bool is_int(Ty t) {
  switch (t) {
    case Ty::kB16: case Ty::kU16: case Ty::kS16: case Ty::kB32: case Ty::kU32: case Ty::kS32:
    case Ty::kB64: case Ty::kU64: case Ty::kS64: return true;
    default: return false;
  }
}

}  // namespace

bool select_int(const OpText& op, Inst& in) {
  const std::string& b = op.base;
  Ty t = op.types.empty() ? Ty::kNone : parse_ty(op.types.back());
  if (b == "mov") {
    if (in.mode >= 10) { in.fn = &h_mov_clock; return true; }
    if (in.mode == 1 || in.mode == 2) {
      in.size = static_cast<uint16_t>(ty_size(t));
      if (in.size == 0) return false;
      in.fn = &h_mov_vec;
      return true;
    }
    in.fn = &h_mov;
    return t != Ty::kNone;
  }
  if (b == "selp") { in.fn = &h_selp; return true; }
  if (t == Ty::kPred) {
    if (b == "and") in.fn = &h_pred<0>;
    else if (b == "or") in.fn = &h_pred<1>;
    else if (b == "xor") in.fn = &h_pred<2>;
    else if (b == "not") in.fn = &h_pred<3>;
    return in.fn != nullptr;
  }
  if (b == "slct") {
    if (op.types.size() != 2) return false;
    Ty ct = parse_ty(op.types[1]);
    if (ct == Ty::kS32) in.fn = &h_slct<int32_t>;
    else if (ct == Ty::kF32) in.fn = &h_slct<float>;
    return in.fn != nullptr;
  }
  if (b == "prmt") {
    in.mode = op.has("f4e") ? 1 : op.has("b4e") ? 2 : op.has("rc8") ? 3 : op.has("ecl") ? 4 : op.has("ecr") ? 5
            : op.has("rc16") ? 6 : 0;
    in.fn = &h_prmt;
    return true;
  }
  if (b == "lop3") { in.fn = &h_lop3; return true; }
  if (b == "fns") { in.fn = &h_fns; return true; }
  if (b == "dp4a" || b == "dp2a") {
    if (op.types.size() != 2 || in.c == kNoSlot) return false;
    in.aux = static_cast<uint8_t>((op.types[0] == "s32" ? 1 : 0) | (op.types[1] == "s32" ? 2 : 0));
    in.mode = b == "dp4a" ? 0 : op.has("hi") ? 2 : 1;
    in.fn = &h_dp;
    return true;
  }
  if (b == "shf") {
    in.mode = static_cast<uint8_t>((op.has("l") ? 1 : 0) | (op.has("clamp") ? 2 : 0));
    in.fn = &h_shf;
    return true;
  }
  if (b == "popc" || b == "clz" || b == "brev" || b == "bfind" || b == "cnot") {
    if (!is_int(t)) return false;
    int k = b == "popc" ? 3 : b == "clz" ? 4 : b == "brev" ? 5 : b == "bfind" ? 6 : 7;
    if (b == "bfind" && op.has("shiftamt")) {
      in.fn = pick1<Un<8>::H>(t);
      return in.fn != nullptr;
    }
    in.fn = k == 3 ? pick1<Un<3>::H>(t) : k == 4 ? pick1<Un<4>::H>(t) : k == 5 ? pick1<Un<5>::H>(t)
          : k == 6 ? pick1<Un<6>::H>(t) : pick1<Un<7>::H>(t);
    return in.fn != nullptr;
  }
  if (!is_int(t)) return false;
  bool cc = op.has("cc");
  if (b == "addc" || b == "subc" || b == "madc" || ((b == "add" || b == "sub" || b == "mad") && cc)) {
    in.mode = static_cast<uint8_t>((b.back() == 'c' && b != "mad" ? 1 : 0) | (cc ? 2 : 0) |
                                   (b[0] == 's' ? 4 : 0));
    if (b == "mad" || b == "madc") in.mode |= op.has("hi") ? 16 : 8;
    if (b == "madc") in.mode |= 1;
    if (t == Ty::kS32 || t == Ty::kU32 || t == Ty::kB32) in.fn = &h_carry<uint32_t>;
    else if (t == Ty::kS64 || t == Ty::kU64 || t == Ty::kB64) in.fn = &h_carry<uint64_t>;
    return in.fn != nullptr;
  }
  if (b == "add") in.fn = op.has("sat") ? (t == Ty::kS32 ? &h_bin<int32_t, AddSat> : nullptr) : pick<Add>(t);
  else if (b == "sub") in.fn = op.has("sat") ? (t == Ty::kS32 ? &h_bin<int32_t, SubSat> : nullptr) : pick<Sub>(t);
  else if (b == "mul" || b == "mad") {
    bool mad = b == "mad";
    if (op.has("wide")) {
      switch (t) {
        case Ty::kU16: in.fn = mad ? &h_wide<uint16_t, true> : &h_wide<uint16_t, false>; break;
        case Ty::kS16: in.fn = mad ? &h_wide<int16_t, true> : &h_wide<int16_t, false>; break;
        case Ty::kU32: in.fn = mad ? &h_wide<uint32_t, true> : &h_wide<uint32_t, false>; break;
        case Ty::kS32: in.fn = mad ? &h_wide<int32_t, true> : &h_wide<int32_t, false>; break;
        default: break;
      }
    } else if (op.has("hi")) {
      in.fn = mad ? pick1<Md<MulHi>::H>(t) : pick<MulHi>(t);
    } else {
      in.fn = mad ? pick1<Md<MulLo>::H>(t) : pick<MulLo>(t);
    }
  } else if (b == "mul24" || b == "mad24") {
    bool hi = op.has("hi");
    if (t == Ty::kS32) in.fn = b == "mad24" ? (hi ? &Md<Mul24Hi>::H<int32_t>::run : &Md<Mul24Lo>::H<int32_t>::run)
                                            : (hi ? &h_bin<int32_t, Mul24Hi> : &h_bin<int32_t, Mul24Lo>);
    else if (t == Ty::kU32) in.fn = b == "mad24" ? (hi ? &Md<Mul24Hi>::H<uint32_t>::run : &Md<Mul24Lo>::H<uint32_t>::run)
                                                 : (hi ? &h_bin<uint32_t, Mul24Hi> : &h_bin<uint32_t, Mul24Lo>);
  } else if (b == "div") in.fn = pick<Div>(t);
  else if (b == "rem") in.fn = pick<Rem>(t);
  else if (b == "min") in.fn = pick<Min>(t);
  else if (b == "max") in.fn = pick<Max>(t);
  else if (b == "and") in.fn = pick<And>(t);
  else if (b == "or") in.fn = pick<Or>(t);
  else if (b == "xor") in.fn = pick<Xor>(t);
  else if (b == "shl") in.fn = pick1<Sh<true>::H>(t);
  else if (b == "shr") in.fn = pick1<Sh<false>::H>(t);
  else if (b == "neg") in.fn = pick1<Un<0>::H>(t);
  else if (b == "abs") in.fn = pick1<Un<1>::H>(t);
  else if (b == "not") in.fn = pick1<Un<2>::H>(t);
  else if (b == "bfe") in.fn = pick1<Bfe>(t);
  else if (b == "bfi") in.fn = pick1<Bfi>(t);
  else if (b == "bmsk" && t == Ty::kB32) in.fn = op.has("wrap") ? &h_bmsk<true> : &h_bmsk<false>;
  else if (b == "sad") in.fn = pick1<Sad>(t);
  else if (b == "setp" || b == "set") return select_compare(op, in);
  return in.fn != nullptr;
}

}  // namespace rgpu::ptx
