// PTX type names and sizes for the decoder and the handler tables.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "decode.h"

namespace rgpu::ptx {

Ty parse_ty(const std::string& t) {
  static const struct { const char* n; Ty t; } kTys[] = {
      {"b8", Ty::kB8},     {"b16", Ty::kB16},   {"b32", Ty::kB32},       {"b64", Ty::kB64},   {"u8", Ty::kU8},
      {"u16", Ty::kU16},   {"u32", Ty::kU32},   {"u64", Ty::kU64},       {"s8", Ty::kS8},     {"s16", Ty::kS16},
      {"s32", Ty::kS32},   {"s64", Ty::kS64},   {"f16", Ty::kF16},       {"f16x2", Ty::kF16x2},
      {"bf16", Ty::kBF16}, {"bf16x2", Ty::kBF16x2}, {"f32", Ty::kF32},   {"f64", Ty::kF64},   {"pred", Ty::kPred},
      {"b128", Ty::kB128},
  };
  for (const auto& e : kTys)
    if (t == e.n) return e.t;
  return Ty::kNone;
}

uint32_t ty_size(Ty t) {
  switch (t) {
    case Ty::kB8: case Ty::kU8: case Ty::kS8: case Ty::kPred: return 1;
    case Ty::kB16: case Ty::kU16: case Ty::kS16: case Ty::kF16: case Ty::kBF16: return 2;
    case Ty::kB32: case Ty::kU32: case Ty::kS32: case Ty::kF32: case Ty::kF16x2: case Ty::kBF16x2: return 4;
    case Ty::kB64: case Ty::kU64: case Ty::kS64: case Ty::kF64: return 8;
    case Ty::kB128: return 16;
    case Ty::kNone: return 0;
  }
  return 0;
}

}  // namespace rgpu::ptx
