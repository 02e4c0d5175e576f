// Memory instructions: ld, st, atom, red, cvta and isspacep, with address
// checking for every state space.
#include <atomic>
#include <cstdio>

#include "exec.h"
#include "ops_common.h"

namespace rgpu::ptx {
namespace {

const char* mem_name(Mem s) {
  switch (s) {
    case Mem::kGlobal: return "global";
    case Mem::kShared: return "shared";
    case Mem::kLocal: return "local";
    case Mem::kConst: return "const";
    case Mem::kParamKernel: case Mem::kParamLocal: return "param";
    case Mem::kGeneric: return "generic";
  }
  return "?";
}

std::string where(const Inst& in, uint64_t addr, uint32_t size, bool write) {
  char buf[160];
  snprintf(buf, sizeof(buf), "%s of %u bytes at 0x%llx (%s space) at line %u", write ? "write" : "read", size,
           static_cast<unsigned long long>(addr), mem_name(in.space), in.line);
  return buf;
}

// Classifies a generic address: 1 shared, 2 local, 3 kernel params, 0 global.
inline int window(const ExecCtx& x, uint64_t addr, uint32_t size) {
  uint64_t sh = reinterpret_cast<uint64_t>(x.shared);
  if (x.shared && addr >= sh && addr - sh + size <= x.shared_size) return 1;
  uint64_t lo = reinterpret_cast<uint64_t>(x.local);
  if (x.local && addr >= lo && addr - lo + size <= x.local_total) return 2;
  uint64_t pa = reinterpret_cast<uint64_t>(x.kparams);
  if (x.kparams && addr >= pa && addr - pa + size <= x.kparam_size) return 3;
  return 0;
}

// Resolves the host address of each access `m` names, access l at
// address_of(l), `size` bytes aligned to `align`. On error sets the fault and
// returns false. The local and parameter spaces are per lane: there access l
// is lane l's.
template <class AddressOf>
[[gnu::always_inline]] inline bool resolve_at(ExecCtx& x, const Inst& in, uint32_t m, uint32_t size, uint32_t align,
                                              bool write, uint8_t** host, AddressOf address_of) {
  uint64_t any = 0;
  for_lanes(m, [&](int l) { any |= address_of(l); });
  if (any & (align - 1)) {
    for_lanes(m, [&](int l) {
      uint64_t addr = address_of(l);
      if (addr & (align - 1)) x.set_fault(Fault::kMisalignedAddress, "misaligned " + where(in, addr, size, write), addr);
    });
    return false;
  }
  switch (in.space) {
    case Mem::kShared: {
      bool ok = true;
      for_lanes(m, [&](int l) {
        uint64_t off = address_of(l) & 0xffffffffu;
        if (off + size > x.shared_size) {
          if (ok) x.set_fault(Fault::kIllegalAddress, "out of bounds " + where(in, off, size, write), off);
          ok = false;
        }
        host[l] = x.shared + off;
      });
      return ok;
    }
    case Mem::kLocal: {
      bool ok = true;
      for_lanes(m, [&](int l) {
        uint64_t off = address_of(l) & 0xffffffffu;
        if (off + size > x.local_stride) {
          if (ok) x.set_fault(Fault::kIllegalAddress, "out of bounds " + where(in, off, size, write), off);
          ok = false;
        }
        host[l] = x.local + static_cast<size_t>(x.thread_base + l) * x.local_stride + off;
      });
      return ok;
    }
    case Mem::kParamKernel: {
      bool ok = true;
      for_lanes(m, [&](int l) {
        uint64_t off = address_of(l);
        if (write || off + size > x.kparam_size || off + size < off) {
          if (ok) x.set_fault(Fault::kIllegalAddress, "bad kernel parameter " + where(in, off, size, write), off);
          ok = false;
        }
        host[l] = const_cast<uint8_t*>(x.kparams) + off;
      });
      return ok;
    }
    case Mem::kParamLocal: {
      bool ok = true;
      for_lanes(m, [&](int l) {
        uint64_t off = address_of(l) & 0xffffffffu;
        if (off + size > x.lparam_stride) {
          if (ok) x.set_fault(Fault::kIllegalAddress, "bad parameter " + where(in, off, size, write), off);
          ok = false;
        }
        host[l] = x.lparams + static_cast<size_t>(l) * x.lparam_stride + off;
      });
      return ok;
    }
    case Mem::kGlobal:
    case Mem::kConst:
    case Mem::kGeneric: {
      uint64_t lo = ~0ull, hi = 0;
      for_lanes(m, [&](int l) {
        uint64_t addr = address_of(l);
        lo = addr < lo ? addr : lo;
        hi = addr > hi ? addr : hi;
      });
      if (lo > hi) return true;  // no lanes
      if (in.space == Mem::kGeneric) {
        int w = window(x, lo, static_cast<uint32_t>(hi - lo + size));
        if (w == 1 || w == 2 || (w == 3 && !write)) {
          for_lanes(m, [&](int l) { host[l] = reinterpret_cast<uint8_t*>(address_of(l)); });
          return true;
        }
      }
      bool write_ok = write && in.space == Mem::kConst ? false : true;
      if (write_ok && hi - lo < (1ull << 40) && x.launch->check(lo, hi - lo + size, write)) {
        for_lanes(m, [&](int l) { host[l] = reinterpret_cast<uint8_t*>(address_of(l)); });
        return true;
      }
      // Slow path: lane by lane, so the fault names the first bad address.
      bool ok = true;
      for_lanes(m, [&](int l) {
        uint64_t addr = address_of(l);
        host[l] = reinterpret_cast<uint8_t*>(addr);
        if (!ok) return;
        if (in.space == Mem::kGeneric) {
          int w = window(x, addr, size);
          if (w == 1 || w == 2 || (w == 3 && !write)) return;
        }
        if (!write_ok || !x.launch->check(addr, size, write)) {
          x.set_fault(Fault::kIllegalAddress, "illegal " + where(in, addr, size, write), addr);
          ok = false;
        }
      });
      return ok;
    }
  }
  return false;
}

// Each active lane's access of `size` bytes at its register a plus imm.
[[gnu::flatten]] bool resolve(ExecCtx& x, const Inst& in, uint32_t m, uint32_t size, bool write, uint8_t** host) {
  const uint64_t* a = x.reg(in.a);
  const uint64_t imm = static_cast<uint64_t>(in.imm);
  return resolve_at(x, in, m, size, size, write, host, [a, imm](int l) { return a[l] + imm; });
}

template <class T>
inline uint64_t extend(T v) {
  if constexpr (std::is_signed_v<T>) return static_cast<uint64_t>(static_cast<int64_t>(v));
  else return static_cast<uint64_t>(v);
}

// A vector access of up to 16 bytes is one memory access, as on a GPU: CUB's
// single-pass scans publish a tile's status and value together with
// st.relaxed.gpu.v2.u32 (or .v2.u64) and read them with one ld.v2, so an
// element-by-element copy let a reader see the new status with the old value.
// The address is aligned to the whole access (resolve() checked it); aligned
// 4- and 8-byte accesses are atomic on x86-64, and so are aligned 16-byte SSE
// accesses on processors with AVX (both vendors document it).
template <size_t kBytes>
inline void load_whole(const uint8_t* p, uint8_t* out) {
  if constexpr (kBytes == 4) {
    uint32_t v = __atomic_load_n(reinterpret_cast<const uint32_t*>(p), __ATOMIC_RELAXED);
    memcpy(out, &v, 4);
  } else if constexpr (kBytes == 8) {
    uint64_t v = __atomic_load_n(reinterpret_cast<const uint64_t*>(p), __ATOMIC_RELAXED);
    memcpy(out, &v, 8);
  } else if constexpr (kBytes == 16) {
#if defined(__x86_64__)
    __attribute__((vector_size(16))) long long v;
    asm volatile("movdqa %1, %0" : "=x"(v) : "m"(*reinterpret_cast<const char(*)[16]>(p)));
    memcpy(out, &v, 16);
#else
    memcpy(out, p, 16);
#endif
  } else {
    memcpy(out, p, kBytes);
  }
}

template <size_t kBytes>
inline void store_whole(uint8_t* p, const uint8_t* in) {
  if constexpr (kBytes == 4) {
    uint32_t v;
    memcpy(&v, in, 4);
    __atomic_store_n(reinterpret_cast<uint32_t*>(p), v, __ATOMIC_RELAXED);
  } else if constexpr (kBytes == 8) {
    uint64_t v;
    memcpy(&v, in, 8);
    __atomic_store_n(reinterpret_cast<uint64_t*>(p), v, __ATOMIC_RELAXED);
  } else if constexpr (kBytes == 16) {
#if defined(__x86_64__)
    __attribute__((vector_size(16))) long long v;
    memcpy(&v, in, 16);
    asm volatile("movdqa %1, %0" : "=m"(*reinterpret_cast<char(*)[16]>(p)) : "x"(v));
#else
    memcpy(p, in, 16);
#endif
  } else {
    memcpy(p, in, kBytes);
  }
}

template <class T, int kVec>
void h_ld(ExecCtx& x, const Inst& in, uint32_t m) {
  uint8_t* host[32];
  if (!resolve(x, in, m, sizeof(T) * kVec, false, host)) return;
  uint64_t* dst[kVec];
  for (int k = 0; k < kVec; ++k) dst[k] = x.reg(in.v[k]);
  for_lanes(m, [&](int l) {
    uint8_t buf[sizeof(T) * kVec];
    if constexpr (kVec == 1) memcpy(buf, host[l], sizeof(T));
    else load_whole<sizeof(T) * kVec>(host[l], buf);
    for (int k = 0; k < kVec; ++k) {
      T v;
      memcpy(&v, buf + k * sizeof(T), sizeof(T));
      dst[k][l] = extend(v);
    }
  });
}

template <class T, int kVec>
void h_st(ExecCtx& x, const Inst& in, uint32_t m) {
  uint8_t* host[32];
  if (!resolve(x, in, m, sizeof(T) * kVec, true, host)) return;
  const uint64_t* src[kVec];
  for (int k = 0; k < kVec; ++k) src[k] = x.reg(in.v[k]);
  for_lanes(m, [&](int l) {
    uint8_t buf[sizeof(T) * kVec];
    for (int k = 0; k < kVec; ++k) {
      T v = static_cast<T>(src[k][l]);
      memcpy(buf + k * sizeof(T), &v, sizeof(T));
    }
    if constexpr (kVec == 1) memcpy(host[l], buf, sizeof(T));
    else store_whole<sizeof(T) * kVec>(host[l], buf);
  });
}

enum AtomOp { kAAdd, kAMin, kAMax, kAInc, kADec, kACas, kAExch, kAAnd, kAOr, kAXor };

template <class T, int kOp>
T atom_apply(T old, T b) {
  if constexpr (kOp == kAAdd) {
    if constexpr (std::is_floating_point_v<T>) return old + b;
    else return static_cast<T>(static_cast<std::make_unsigned_t<T>>(old) + static_cast<std::make_unsigned_t<T>>(b));
  }
  if constexpr (kOp == kAMin) return b < old ? b : old;
  if constexpr (kOp == kAMax) return b > old ? b : old;
  if constexpr (kOp == kAInc) return old >= b ? T(0) : T(old + 1);
  if constexpr (kOp == kADec) return (old == 0 || old > b) ? b : T(old - 1);
  if constexpr (kOp == kAExch) return b;
  if constexpr (kOp == kAAnd) return old & b;
  if constexpr (kOp == kAOr) return old | b;
  if constexpr (kOp == kAXor) return old ^ b;
  return b;
}

// T is the value type; R the raw integer of the same size used for CAS.
template <class T, int kOp>
void h_atom(ExecCtx& x, const Inst& in, uint32_t m) {
  using R = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  uint8_t* host[32];
  if (!resolve(x, in, m, sizeof(T), true, host)) return;
  uint64_t* d = in.d == kNoSlot ? nullptr : x.reg(in.d);
  const uint64_t* b = x.reg(in.b);
  const uint64_t* c = in.c == kNoSlot ? nullptr : x.reg(in.c);
  for_lanes(m, [&](int l) {
    std::atomic_ref<R> ref(*reinterpret_cast<R*>(host[l]));
    R cur = ref.load(std::memory_order_relaxed);
    T bv = rd<T>(b[l]);
    if constexpr (kOp == kACas) {
      R expected = static_cast<R>(wr<T>(bv));
      R desired = static_cast<R>(wr<T>(rd<T>(c[l])));
      ref.compare_exchange_strong(expected, desired, std::memory_order_acq_rel);
      cur = expected;
    } else {
      for (;;) {
        R next = static_cast<R>(wr<T>(atom_apply<T, kOp>(rd<T>(cur), bv)));
        if (ref.compare_exchange_weak(cur, next, std::memory_order_acq_rel)) break;
      }
    }
    if (d) d[l] = wr<T>(rd<T>(cur));
  });
}

// atom.add.noftz on f16/bf16 (16-bit) and f16x2/bf16x2 (32-bit): CAS loops.
template <bool kBf, bool kX2>
void h_atom_half(ExecCtx& x, const Inst& in, uint32_t m) {
  using R = std::conditional_t<kX2, uint32_t, uint16_t>;
  uint8_t* host[32];
  if (!resolve(x, in, m, sizeof(R), true, host)) return;
  uint64_t* d = in.d == kNoSlot ? nullptr : x.reg(in.d);
  const uint64_t* b = x.reg(in.b);
  auto to_f = [](uint16_t h) { return kBf ? bf16_to_f32(h) : f16_to_f32(h); };
  auto to_h = [](float f) { return kBf ? f32_to_bf16(f) : f32_to_f16(f); };
  for_lanes(m, [&](int l) {
    std::atomic_ref<R> ref(*reinterpret_cast<R*>(host[l]));
    R cur = ref.load(std::memory_order_relaxed);
    for (;;) {
      R next = 0;
      for (int h = 0; h < (kX2 ? 2 : 1); ++h) {
        float sum = to_f(static_cast<uint16_t>(cur >> (16 * h))) + to_f(static_cast<uint16_t>(b[l] >> (16 * h)));
        next = static_cast<R>(next | (static_cast<R>(to_h(sum)) << (16 * h)));
      }
      if (ref.compare_exchange_weak(cur, next, std::memory_order_acq_rel)) break;
    }
    if (d) d[l] = cur;
  });
}

// cvta: in.mode 0 space->generic, 1 generic->space.
void h_cvta(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  bool to_space = in.mode == 1;
  uint64_t sh = reinterpret_cast<uint64_t>(x.shared);
  uint64_t lo = reinterpret_cast<uint64_t>(x.local);
  uint64_t pa = reinterpret_cast<uint64_t>(x.kparams);
  bool narrow = in.size == 4;
  for_lanes(m, [&](int l) {
    uint64_t v = a[l], r = v;
    switch (in.space) {
      case Mem::kShared: r = to_space ? v - sh : sh + (v & 0xffffffffu); break;
      case Mem::kLocal: {
        uint64_t base = lo + static_cast<uint64_t>(x.thread_base + l) * x.local_stride;
        r = to_space ? v - base : base + (v & 0xffffffffu);
        break;
      }
      case Mem::kParamKernel: r = to_space ? v - pa : pa + v; break;
      default: break;
    }
    d[l] = narrow ? (r & 0xffffffffu) : r;
  });
}

void h_isspacep(ExecCtx& x, const Inst& in, uint32_t m) {
  uint64_t* d = x.reg(in.d);
  const uint64_t* a = x.reg(in.a);
  for_lanes(m, [&](int l) {
    int w = window(x, a[l], 1);
    bool r = in.space == Mem::kShared ? w == 1 : in.space == Mem::kLocal ? w == 2
           : in.space == Mem::kParamKernel ? w == 3 : w == 0;
    d[l] = r;
  });
}

template <int kVec>
Handler pick_ld(Ty t, bool store) {
  switch (t) {
    case Ty::kU8: case Ty::kB8: return store ? &h_st<uint8_t, kVec> : &h_ld<uint8_t, kVec>;
    case Ty::kS8: return store ? &h_st<int8_t, kVec> : &h_ld<int8_t, kVec>;
    case Ty::kU16: case Ty::kB16: case Ty::kF16: case Ty::kBF16: return store ? &h_st<uint16_t, kVec> : &h_ld<uint16_t, kVec>;
    case Ty::kS16: return store ? &h_st<int16_t, kVec> : &h_ld<int16_t, kVec>;
    case Ty::kU32: case Ty::kB32: case Ty::kF32: case Ty::kF16x2: case Ty::kBF16x2:
      return store ? &h_st<uint32_t, kVec> : &h_ld<uint32_t, kVec>;
    case Ty::kS32: return store ? &h_st<int32_t, kVec> : &h_ld<int32_t, kVec>;
    case Ty::kU64: case Ty::kB64: case Ty::kF64: case Ty::kS64: return store ? &h_st<uint64_t, kVec> : &h_ld<uint64_t, kVec>;
    default: return nullptr;
  }
}

template <int kOp>
Handler pick_atom(Ty t) {
  switch (t) {
    case Ty::kU32: case Ty::kB32: return &h_atom<uint32_t, kOp>;
    case Ty::kS32: return &h_atom<int32_t, kOp>;
    case Ty::kU64: case Ty::kB64: return &h_atom<uint64_t, kOp>;
    case Ty::kS64: return &h_atom<int64_t, kOp>;
    case Ty::kF32:
      if constexpr (kOp == kAAdd || kOp == kAExch || kOp == kACas || kOp == kAMin || kOp == kAMax) return &h_atom<float, kOp>;
      return nullptr;
    case Ty::kF64:
      if constexpr (kOp == kAAdd || kOp == kAExch || kOp == kACas || kOp == kAMin || kOp == kAMax) return &h_atom<double, kOp>;
      return nullptr;
    default: return nullptr;
  }
}

}  // namespace

namespace {

void h_cp_async(ExecCtx& x, const Inst& in, uint32_t m) {
  uint8_t* dst[32];
  if (!resolve(x, in, m, in.size, true, dst)) return;
  const uint64_t* base = x.reg(in.b);
  const uint64_t* off = x.reg(in.c);
  const uint64_t* e = in.e == kNoSlot ? nullptr : x.reg(in.e);
  Inst src = in;
  src.space = Mem::kGlobal;
  src.a = in.b;
  for_lanes(m, [&](int l) {
    if (x.fault != Fault::kNone) return;
    uint32_t n = in.size;
    if (in.mode == 1) n = static_cast<uint32_t>(e[l]);
    if (in.mode == 2 && ((e[l] & 1) ^ (in.aux & 1))) n = 0;
    if (n > in.size) {
      x.set_fault(Fault::kIllegalAddress, "cp.async src-size " + std::to_string(n) + " above its cp-size at line " +
                                              std::to_string(in.line), 0);
      return;
    }
    const uint64_t addr = base[l] + off[l];
    if (addr & (in.size - 1)) {
      x.set_fault(Fault::kMisalignedAddress, "misaligned " + where(src, addr, in.size, false), addr);
      return;
    }
    if (n > 0 && !x.launch->check(addr, n, false)) {
      x.set_fault(Fault::kIllegalAddress, "illegal " + where(src, addr, n, false), addr);
      return;
    }
    if (n > 0) memcpy(dst[l], reinterpret_cast<const void*>(addr), n);
    if (n < in.size) memset(dst[l] + n, 0, in.size - n);
  });
}

}  // namespace

Handler cp_async_handler() { return &h_cp_async; }

bool resolve_access(ExecCtx& x, const Inst& in, uint32_t m, uint32_t size, bool write, uint8_t** host) {
  return resolve(x, in, m, size, write, host);
}

bool resolve_lines(ExecCtx& x, const Inst& in, uint64_t addr, uint64_t pitch, uint32_t lines, uint32_t bytes,
                   uint32_t align, bool write, uint8_t** host) {
  const uint32_t m = lines >= 32 ? kFullMask : (1u << lines) - 1;
  return resolve_at(x, in, m, bytes, align, write, host, [addr, pitch](int l) { return addr + pitch * l; });
}

bool select_mem(const OpText& op, Inst& in) {
  const std::string& b = op.base;
  if (op.types.empty()) return false;
  Ty t = parse_ty(op.types.back());
  if (b == "ld" || b == "ldu" || b == "st") {
    bool store = b == "st";
    int vec = op.has("v2") ? 2 : op.has("v4") ? 4 : 1;
    if (op.has("v8")) return false;
    in.vec = static_cast<uint8_t>(vec);
    in.size = static_cast<uint16_t>(ty_size(t) * vec);
    for (int k = 0; k < vec; ++k)
      if (in.v[k] == kNoSlot) return false;
    if (in.space == Mem::kParamKernel && store) in.space = Mem::kParamLocal;
    in.fn = vec == 1 ? pick_ld<1>(t, store) : vec == 2 ? pick_ld<2>(t, store) : pick_ld<4>(t, store);
    return in.fn != nullptr;
  }
  if (b == "atom" || b == "red") {
    if (in.space != Mem::kGlobal && in.space != Mem::kShared && in.space != Mem::kGeneric) return false;
    if (b == "red") in.d = kNoSlot;
    if (t == Ty::kF16 || t == Ty::kBF16 || t == Ty::kF16x2 || t == Ty::kBF16x2) {
      if (!op.has("add")) return false;
      in.size = static_cast<uint16_t>(ty_size(t));
      in.fn = t == Ty::kF16 ? &h_atom_half<false, false> : t == Ty::kBF16 ? &h_atom_half<true, false>
            : t == Ty::kF16x2 ? &h_atom_half<false, true> : &h_atom_half<true, true>;
      return true;
    }
    Handler h = nullptr;
    if (op.has("add")) h = pick_atom<kAAdd>(t);
    else if (op.has("min")) h = pick_atom<kAMin>(t);
    else if (op.has("max")) h = pick_atom<kAMax>(t);
    else if (op.has("inc")) h = (t == Ty::kU32) ? &h_atom<uint32_t, kAInc> : nullptr;
    else if (op.has("dec")) h = (t == Ty::kU32) ? &h_atom<uint32_t, kADec> : nullptr;
    else if (op.has("cas")) h = pick_atom<kACas>(t);
    else if (op.has("exch")) h = pick_atom<kAExch>(t);
    else if (op.has("and")) h = pick_atom<kAAnd>(t);
    else if (op.has("or")) h = pick_atom<kAOr>(t);
    else if (op.has("xor")) h = pick_atom<kAXor>(t);
    if (op.has("cas") && in.c == kNoSlot) return false;
    in.size = static_cast<uint16_t>(ty_size(t));
    in.fn = h;
    return h != nullptr;
  }
  return false;
}

// cvta and isspacep are value instructions; they are selected with the warp family.
bool select_cvta(const OpText& op, Inst& in) {
  if (op.base == "cvta") {
    in.mode = op.has("to") ? 1 : 0;
    Ty t = op.types.empty() ? Ty::kU64 : parse_ty(op.types.back());
    in.size = static_cast<uint16_t>(ty_size(t));
    if (in.space == Mem::kParamKernel) {
      // cvta.param: only kernel parameters have a generic address here.
    }
    in.fn = &h_cvta;
    return true;
  }
  if (op.base == "isspacep") {
    in.fn = &h_isspacep;
    return true;
  }
  return false;
}

}  // namespace rgpu::ptx
