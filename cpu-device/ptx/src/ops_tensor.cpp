// Warp-wide matrix instructions: ldmatrix and mma.sync. Each lane holds a
// fragment of the matrices by PTX's documented layout ("Matrix fragments
// for mma.m16n8k*" and "ldmatrix" in the PTX ISA); the handler gathers the
// whole matrices from the 32 lanes, computes, and scatters the result back.
// Both need every lane of the warp at once (.sync.aligned): a warp that does
// not arrive whole is refused, never computed from part of its fragments.
// mma's operand list (up to 14 registers) lives in the function's
// operand_lists; `imm` points at it: {counts..., slots...}.
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
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 8; ++c) {
      float acc = C[r][c];
      for (int k = 0; k < K; ++k) acc = __builtin_fmaf(A[r][k], B[k][c], acc);
      D[r][c] = acc;
    }
  }
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

}  // namespace

Handler ldmatrix_handler() { return &h_ldmatrix; }
Handler mma_handler() { return &h_mma; }

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
