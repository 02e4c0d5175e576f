// Warp-wide matrix instructions: ldmatrix, stmatrix, movmatrix, mma.sync and
// wmma. For the first four each lane holds a fragment of the matrices by
// PTX's documented layout ("Matrix fragments for mma.m16n8k*" and "ldmatrix"
// in the PTX ISA);
// wmma's layout is rgpu's own (below). The handler gathers the whole
// matrices from the 32 lanes, computes, and scatters the result back. All
// need every lane of the warp at once (.sync.aligned): a warp that does not
// arrive whole is refused, never computed from part of its fragments. mma's
// and wmma's operand lists (up to 26 registers) live in the function's
// operand_lists; `imm` points at one: {counts..., slots...}.
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "exec.h"
#include "ops_common.h"

namespace rgpu::ptx {
namespace {

bool whole_warp(ExecCtx& x, const Inst& in, uint32_t m, const char* what) {
  if (m == kFullMask) return true;
  char lanes[16];
  snprintf(lanes, sizeof lanes, "0x%08x", m);
  x.set_fault(Fault::kUnsupported, std::string(what) + " at line " + std::to_string(in.line) +
                                       " ran with part of a warp (lanes " + lanes +
                                       "); the CPU device runs it only for a whole converged warp");
  return false;
}

const uint32_t* list_of(const Inst& in) { return reinterpret_cast<const uint32_t*>(in.imm); }

// ---- ldmatrix ---------------------------------------------------------------

// mode: matrices (1, 2, 4); aux 1: .trans; v: the destinations; a, imm and
// space: the address.
void h_ldmatrix(ExecCtx& x, const Inst& in, uint32_t m) {
  if (!whole_warp(x, in, m, "ldmatrix")) return;
  const uint32_t n = in.mode;
  const uint32_t* d = in.v;
  // Lanes 8j..8j+7 give the addresses of the rows of matrix j.
  const uint32_t rows = n == 4 ? kFullMask : (1u << (8 * n)) - 1;
  uint8_t* host[32];
  if (!resolve_access(x, in, rows, 16, false, host)) return;
  uint16_t mat[4][8][8];
  for (uint32_t j = 0; j < n; ++j)
    for (uint32_t r = 0; r < 8; ++r) memcpy(mat[j][r], host[8 * j + r], 16);
  for (uint32_t j = 0; j < n; ++j) {
    uint64_t* out = x.reg(d[j]);
    for (int t = 0; t < 32; ++t) {
      uint16_t lo, hi;
      if (in.aux & 1) {
        lo = mat[j][2 * (t % 4)][t / 4];
        hi = mat[j][2 * (t % 4) + 1][t / 4];
      } else {
        lo = mat[j][t / 4][2 * (t % 4)];
        hi = mat[j][t / 4][2 * (t % 4) + 1];
      }
      out[t] = static_cast<uint32_t>(lo) | static_cast<uint32_t>(hi) << 16;
    }
  }
}

// stmatrix: ldmatrix's fields, v the sources. Lane t's register j holds
// row t / 4, columns 2 (t % 4) and 2 (t % 4) + 1 of matrix j (with .trans,
// those of its transpose); lanes 8j..8j+7 give the addresses of its rows.
void h_stmatrix(ExecCtx& x, const Inst& in, uint32_t m) {
  if (!whole_warp(x, in, m, "stmatrix")) return;
  const uint32_t n = in.mode;
  const uint32_t rows = n == 4 ? kFullMask : (1u << (8 * n)) - 1;
  uint8_t* host[32];
  if (!resolve_access(x, in, rows, 16, true, host)) return;
  uint16_t mat[4][8][8];
  for (uint32_t j = 0; j < n; ++j) {
    const uint64_t* src = x.reg(in.v[j]);
    for (int t = 0; t < 32; ++t) {
      const uint16_t lo = static_cast<uint16_t>(src[t]), hi = static_cast<uint16_t>(src[t] >> 16);
      if (in.aux & 1) {
        mat[j][2 * (t % 4)][t / 4] = lo;
        mat[j][2 * (t % 4) + 1][t / 4] = hi;
      } else {
        mat[j][t / 4][2 * (t % 4)] = lo;
        mat[j][t / 4][2 * (t % 4) + 1] = hi;
      }
    }
  }
  for (uint32_t j = 0; j < n; ++j)
    for (uint32_t r = 0; r < 8; ++r) memcpy(host[8 * j + r], mat[j][r], 16);
}

// movmatrix.trans: v[0] the destination, v[1] the source, both one 8x8
// matrix of b16 in ldmatrix's fragment layout.
void h_movmatrix(ExecCtx& x, const Inst& in, uint32_t m) {
  if (!whole_warp(x, in, m, "movmatrix")) return;
  uint16_t mat[8][8];
  const uint64_t* src = x.reg(in.v[1]);
  for (int t = 0; t < 32; ++t) {
    mat[t / 4][2 * (t % 4)] = static_cast<uint16_t>(src[t]);
    mat[t / 4][2 * (t % 4) + 1] = static_cast<uint16_t>(src[t] >> 16);
  }
  uint64_t* out = x.reg(in.v[0]);
  for (int t = 0; t < 32; ++t)
    out[t] = static_cast<uint32_t>(mat[2 * (t % 4)][t / 4]) | static_cast<uint32_t>(mat[2 * (t % 4) + 1][t / 4]) << 16;
}

// D = A B + C on float matrices stored by rows (lda, ldb and ldc elements
// apart; C and D share ldc): each element of D is its C plus the K products
// in order, accumulated with fused multiply-adds in float32. The arithmetic
// of mma.sync and wmma.mma alike.
void gemm_fma(int M, int N, int K, const float* A, int lda, const float* B, int ldb, const float* C, float* D,
              int ldc) {
  for (int r = 0; r < M; ++r) {
    for (int c = 0; c < N; ++c) {
      float acc = C[r * ldc + c];
      for (int k = 0; k < K; ++k) acc = __builtin_fmaf(A[r * lda + k], B[k * ldb + c], acc);
      D[r * ldc + c] = acc;
    }
  }
}

// ---- mma.sync ---------------------------------------------------------------

// in.mode: the shape (MmaShape); in.aux: the input type (MmaInput) | 0x10 D is
// f16 | 0x20 C is f16. list: {nd, na, nb, nc, d..., a..., b..., c...}.
enum MmaShape : uint8_t { kM16N8K16 = 0, kM16N8K8 = 1, kM16N8K4 = 2 };
enum MmaInput : uint8_t { kInF16 = 0, kInBF16 = 1, kInTF32 = 2 };

float input(uint32_t bits, uint8_t type) {
  switch (type) {
    case kInF16: return f16_to_f32(static_cast<uint16_t>(bits));
    case kInBF16: return bf16_to_f32(static_cast<uint16_t>(bits));
    default: return bits_f32(bits & 0xffffe000u);  // tf32: the low 13 mantissa bits are not read
  }
}

void h_mma(ExecCtx& x, const Inst& in, uint32_t m) {
  if (!whole_warp(x, in, m, "mma.sync")) return;
  const uint32_t* L = list_of(in);
  const uint32_t nd = L[0], na = L[1], nb = L[2];
  const uint32_t* ds = L + 4;
  const uint32_t* as = ds + nd;
  const uint32_t* bs = as + na;
  const uint32_t* cs = bs + nb;
  const uint8_t type = in.aux & 0x0f;
  const int K = in.mode == kM16N8K16 ? 16 : in.mode == kM16N8K8 ? 8 : 4;
  float A[16][16], B[16][8], C[16][8];
  for (int t = 0; t < 32; ++t) {
    const int g = t >> 2, q = t & 3;
    if (type == kInTF32) {
      // a0 (g, q), a1 (g+8, q), a2 (g, q+4), a3 (g+8, q+4); b0 (q, g), b1 (q+4, g).
      for (uint32_t r = 0; r < na; ++r) {
        A[g + 8 * (r & 1)][q + 4 * (r >> 1)] = input(static_cast<uint32_t>(x.reg(as[r])[t]), type);
      }
      for (uint32_t r = 0; r < nb; ++r) B[q + 4 * r][g] = input(static_cast<uint32_t>(x.reg(bs[r])[t]), type);
    } else {
      // Two 16-bit values per register; element i = 2r + h.
      for (uint32_t r = 0; r < na; ++r) {
        const uint32_t v = static_cast<uint32_t>(x.reg(as[r])[t]);
        for (uint32_t h = 0; h < 2; ++h) {
          const uint32_t i = 2 * r + h;
          A[g + 8 * ((i >> 1) & 1)][2 * q + (i & 1) + 8 * (i >> 2)] = input(v >> (16 * h), type);
        }
      }
      for (uint32_t r = 0; r < nb; ++r) {
        const uint32_t v = static_cast<uint32_t>(x.reg(bs[r])[t]);
        for (uint32_t h = 0; h < 2; ++h) {
          const uint32_t i = 2 * r + h;
          B[2 * q + (i & 1) + 8 * (i >> 1)][g] = input(v >> (16 * h), type);
        }
      }
    }
    // C: element i at row g + 8 (i >> 1), column 2q + (i & 1).
    for (uint32_t i = 0; i < 4; ++i) {
      float c;
      if (in.aux & 0x20) {
        c = f16_to_f32(static_cast<uint16_t>(x.reg(cs[i >> 1])[t] >> (16 * (i & 1))));
      } else {
        c = bits_f32(static_cast<uint32_t>(x.reg(cs[i])[t]));
      }
      C[g + 8 * (i >> 1)][2 * q + (i & 1)] = c;
    }
  }
  float D[16][8];
  gemm_fma(16, 8, K, &A[0][0], 16, &B[0][0], 8, &C[0][0], &D[0][0], 8);
  for (int t = 0; t < 32; ++t) {
    const int g = t >> 2, q = t & 3;
    if (in.aux & 0x10) {
      for (uint32_t r = 0; r < 2; ++r) {
        const uint32_t lo = f32_to_f16(D[g + 8 * r][2 * q]), hi = f32_to_f16(D[g + 8 * r][2 * q + 1]);
        x.reg(ds[r])[t] = lo | hi << 16;
      }
    } else {
      for (uint32_t i = 0; i < 4; ++i) x.reg(ds[i])[t] = f32_bits(D[g + 8 * (i >> 1)][2 * q + (i & 1)]);
    }
  }
}

// ---- wmma -------------------------------------------------------------------
//
// The PTX ISA fixes a wmma fragment's register count per shape and type and
// leaves the distribution of its elements over the warp unspecified. rgpu's:
// a fragment holds its matrix (A is MxK, B KxN, C and D MxN) by the matrix's
// own rows, whatever its layout in memory (.row or .col): slot s of lane t is
// element e = (t S + s) mod E, at row e / cols and column e % cols, where E
// is the matrix's element count and S a lane's slots, its registers times the
// elements each packs (two 16-bit halves for f16 and bf16, four bytes for s8
// and u8, one value for tf32, f32 and s32; lowest bits first). So an
// accumulator of any shape and type (E = 256, S = 8) holds each element once:
// lane t has row t / 2, columns 8 (t % 2) to 8 (t % 2) + 7. An f16 A or B
// fragment has 16 slots a lane by the ISA (512 in all, against 256 or 128
// elements), so it holds its matrix two or four times over: a load writes
// every copy, mma and store read the first (lane e / S, slot e % S), and
// element-wise code keeps the copies equal.

constexpr uint32_t kShapeMNK[4][3] = {{16, 16, 16}, {32, 8, 16}, {8, 32, 16}, {16, 16, 8}};

uint32_t type_bits(uint8_t type) {
  switch (type) {
    case kWmmaF16: case kWmmaBF16: return 16;
    case kWmmaS8: case kWmmaU8: return 8;
    default: return 32;
  }
}

// A fragment's shape: its matrix's rows and columns, its element bits and
// its registers a lane.
struct Frag {
  uint32_t rows = 0, cols = 0, bits = 32, regs = 0;
  uint32_t per_reg() const { return 32 / bits; }
  uint32_t slots() const { return regs * per_reg(); }
  uint32_t elems() const { return rows * cols; }
};

bool frag_of(uint8_t shape, uint8_t matrix, uint8_t type, Frag* f) {
  if (shape > kWmmaM16N16K8 || matrix > kWmmaC || type > kWmmaS32) return false;
  const bool tf32_shape = shape == kWmmaM16N16K8;
  const bool ok = matrix == kWmmaC
                      ? (tf32_shape ? type == kWmmaF32 : type == kWmmaF16 || type == kWmmaF32 || type == kWmmaS32)
                      : (tf32_shape ? type == kWmmaTF32
                                    : type == kWmmaF16 || type == kWmmaBF16 || type == kWmmaS8 || type == kWmmaU8);
  if (!ok) return false;
  const uint32_t* mnk = kShapeMNK[shape];
  f->rows = matrix == kWmmaB ? mnk[2] : mnk[0];
  f->cols = matrix == kWmmaA ? mnk[2] : mnk[1];
  f->bits = type_bits(type);
  // f16 multiplicands take 8 registers for every shape; the rest exactly
  // hold their matrix.
  f->regs = matrix != kWmmaC && type == kWmmaF16 ? 8 : f->elems() / 32 / f->per_reg();
  return true;
}

Frag frag(uint8_t shape, uint8_t matrix, uint8_t type) {
  Frag f;
  frag_of(shape, matrix, type, &f);  // the decoder accepted only valid ones
  return f;
}

// Element e (its bits) of fragment f in registers `regs`: its first copy.
uint32_t frag_get(ExecCtx& x, const Frag& f, const uint32_t* regs, uint32_t e) {
  const uint32_t S = f.slots(), per = f.per_reg();
  const uint32_t v = static_cast<uint32_t>(x.reg(regs[(e % S) / per])[e / S]);
  return f.bits == 32 ? v : (v >> (f.bits * ((e % S) % per))) & ((1u << f.bits) - 1);
}

// Fills every slot of fragment f in registers `regs` from `elems` (the
// matrix by rows, each element's bits).
void frag_set(ExecCtx& x, const Frag& f, const uint32_t* regs, const uint32_t* elems) {
  const uint32_t S = f.slots(), per = f.per_reg(), E = f.elems();
  for (uint32_t r = 0; r < f.regs; ++r) {
    uint64_t* out = x.reg(regs[r]);
    for (uint32_t t = 0; t < 32; ++t) {
      uint32_t v = 0;
      for (uint32_t h = 0; h < per; ++h) v |= elems[(t * S + r * per + h) % E] << (f.bits * h);
      out[t] = v;
    }
  }
}

// Load and store: in.mode the shape; in.aux the type | matrix << 4 | 0x40
// for .col; a, space and the list's offset the address; b the stride's slot,
// in elements (kNoSlot: the default, the length of a row, or of a column
// with .col); list: {n, offset's low and high words, registers...}.
// Moves fragment f's matrix between memory and `elems` (by rows, each
// element's bits), a line (row, or column with .col) at a time. The warp
// gives one address and one stride; lanes that differ are refused.
bool move(ExecCtx& x, const Inst& in, const Frag& f, bool store, uint32_t* elems, const char* what) {
  const bool col = in.aux & 0x40;
  const uint64_t* a = x.reg(in.a);
  const uint64_t* st = in.b == kNoSlot ? nullptr : x.reg(in.b);
  for (int t = 1; t < 32; ++t) {
    if (a[t] != a[0] || (st && static_cast<uint32_t>(st[t]) != static_cast<uint32_t>(st[0]))) {
      x.set_fault(Fault::kUnsupported, std::string(what) + " at line " + std::to_string(in.line) +
                                           " ran with an address or a stride that differs across the warp");
      return false;
    }
  }
  const uint32_t lines = col ? f.cols : f.rows, len = col ? f.rows : f.cols, es = f.bits / 8;
  const uint64_t stride = st ? static_cast<uint32_t>(st[0]) : len;
  const uint64_t offset = list_of(in)[1] | static_cast<uint64_t>(list_of(in)[2]) << 32;
  uint8_t* host[32];
  if (!resolve_lines(x, in, a[0] + offset, stride * es, lines, len * es, es, store, host))
    return false;
  for (uint32_t l = 0; l < lines; ++l) {
    for (uint32_t i = 0; i < len; ++i) {
      uint32_t& v = elems[col ? i * f.cols + l : l * f.cols + i];
      uint8_t* p = host[l] + i * es;
      if (store) {
        for (uint32_t k = 0; k < es; ++k) p[k] = static_cast<uint8_t>(v >> (8 * k));
      } else {
        v = 0;
        for (uint32_t k = 0; k < es; ++k) v |= static_cast<uint32_t>(p[k]) << (8 * k);
      }
    }
  }
  return true;
}

void h_wmma_load(ExecCtx& x, const Inst& in, uint32_t m) {
  if (!whole_warp(x, in, m, "wmma.load")) return;
  const Frag f = frag(in.mode, (in.aux >> 4) & 3, in.aux & 0x0f);
  uint32_t elems[512];
  if (!move(x, in, f, false, elems, "wmma.load")) return;
  frag_set(x, f, list_of(in) + 3, elems);
}

void h_wmma_store(ExecCtx& x, const Inst& in, uint32_t m) {
  if (!whole_warp(x, in, m, "wmma.store")) return;
  const Frag f = frag(in.mode, kWmmaC, in.aux & 0x0f);
  uint32_t elems[512];
  for (uint32_t e = 0; e < f.elems(); ++e) elems[e] = frag_get(x, f, list_of(in) + 3, e);
  move(x, in, f, true, elems, "wmma.store");
}

float wmma_input(uint32_t bits, uint8_t type) {
  return input(bits, type == kWmmaF16 ? kInF16 : type == kWmmaBF16 ? kInBF16 : kInTF32);
}

// mma: in.mode the shape | 0x10 D is f16 | 0x20 C is f16 | 0x40 .satfinite;
// in.aux A's type | B's type << 4. list: {nd, na, nb, nc, d..., a..., b...,
// c...}. Floating point: D as mma.sync computes it (gemm_fma), from f16,
// bf16 or tf32 inputs (tf32's low 13 mantissa bits not read). Integer: each
// D element is C plus the products, exactly, then wrapped to 32 bits, or
// with .satfinite clamped to the s32 range.
void h_wmma_mma(ExecCtx& x, const Inst& in, uint32_t m) {
  if (!whole_warp(x, in, m, "wmma.mma")) return;
  const uint8_t shape = in.mode & 0x0f, atype = in.aux & 0x0f, btype = in.aux >> 4;
  const bool integer = atype == kWmmaS8 || atype == kWmmaU8;
  const uint8_t ctype = integer ? kWmmaS32 : (in.mode & 0x20) ? kWmmaF16 : kWmmaF32;
  const uint8_t dtype = integer ? kWmmaS32 : (in.mode & 0x10) ? kWmmaF16 : kWmmaF32;
  const Frag fa = frag(shape, kWmmaA, atype), fb = frag(shape, kWmmaB, btype);
  const Frag fc = frag(shape, kWmmaC, ctype), fd = frag(shape, kWmmaC, dtype);
  const uint32_t* L = list_of(in);
  const uint32_t* ds = L + 4;
  const uint32_t* as = ds + L[0];
  const uint32_t* bs = as + L[1];
  const uint32_t* cs = bs + L[2];
  const int M = static_cast<int>(kShapeMNK[shape][0]), N = static_cast<int>(kShapeMNK[shape][1]),
            K = static_cast<int>(kShapeMNK[shape][2]);
  uint32_t out[256];
  if (integer) {
    auto value = [](uint32_t bits, uint8_t type) {
      return type == kWmmaS8 ? static_cast<int64_t>(static_cast<int8_t>(bits)) : static_cast<int64_t>(bits);
    };
    int64_t A[512], B[512];
    for (int e = 0; e < M * K; ++e) A[e] = value(frag_get(x, fa, as, e), atype);
    for (int e = 0; e < K * N; ++e) B[e] = value(frag_get(x, fb, bs, e), btype);
    for (int r = 0; r < M; ++r) {
      for (int c = 0; c < N; ++c) {
        int64_t acc = static_cast<int32_t>(frag_get(x, fc, cs, r * N + c));
        for (int k = 0; k < K; ++k) acc += A[r * K + k] * B[k * N + c];
        if (in.mode & 0x40) acc = acc > INT32_MAX ? INT32_MAX : acc < INT32_MIN ? INT32_MIN : acc;
        out[r * N + c] = static_cast<uint32_t>(static_cast<uint64_t>(acc));
      }
    }
  } else {
    float A[512], B[512], C[256], D[256];
    for (int e = 0; e < M * K; ++e) A[e] = wmma_input(frag_get(x, fa, as, e), atype);
    for (int e = 0; e < K * N; ++e) B[e] = wmma_input(frag_get(x, fb, bs, e), btype);
    for (int e = 0; e < M * N; ++e) {
      const uint32_t bits = frag_get(x, fc, cs, e);
      C[e] = ctype == kWmmaF16 ? f16_to_f32(static_cast<uint16_t>(bits)) : bits_f32(bits);
    }
    gemm_fma(M, N, K, A, K, B, N, C, D, N);
    for (int e = 0; e < M * N; ++e) out[e] = dtype == kWmmaF16 ? f32_to_f16(D[e]) : f32_bits(D[e]);
  }
  frag_set(x, fd, ds, out);
}

}  // namespace

Handler ldmatrix_handler() { return &h_ldmatrix; }
Handler stmatrix_handler() { return &h_stmatrix; }
Handler movmatrix_handler() { return &h_movmatrix; }
Handler mma_handler() { return &h_mma; }
Handler wmma_load_handler() { return &h_wmma_load; }
Handler wmma_store_handler() { return &h_wmma_store; }
Handler wmma_mma_handler() { return &h_wmma_mma; }

bool wmma_regs(uint8_t shape, uint8_t matrix, uint8_t type, uint32_t* regs) {
  Frag f;
  if (!frag_of(shape, matrix, type, &f)) return false;
  *regs = f.regs;
  return true;
}

// The register counts of an mma's D, A, B and C for a shape, input type and
// D/C types; false when the combination is not one rgpu runs.
bool mma_counts(uint8_t shape, uint8_t type, bool d_f16, bool c_f16, uint32_t counts[4]) {
  if (type == kInTF32) {
    if (d_f16 || c_f16 || shape == kM16N8K16) return false;
    counts[1] = shape == kM16N8K8 ? 4 : 2;
    counts[2] = shape == kM16N8K8 ? 2 : 1;
  } else {
    if (shape == kM16N8K4) return false;
    if (type == kInBF16 && (d_f16 || c_f16)) return false;
    counts[1] = shape == kM16N8K16 ? 4 : 2;
    counts[2] = shape == kM16N8K16 ? 2 : 1;
  }
  counts[0] = d_f16 ? 2 : 4;
  counts[3] = c_f16 ? 2 : 4;
  return true;
}

}  // namespace rgpu::ptx
