// The decoder's warp-wide matrix instructions: ldmatrix, stmatrix,
// movmatrix, mma.sync and wmma (their handlers: ops_tensor.cpp).
#include <string>
#include <vector>

#include "function_decoder.h"

namespace rgpu::ptx::detail {

// ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}{.shared{::cta}}.b16 d, [a]
// and its inverse stmatrix ... [a], s (`store`): mode the matrices, aux 1
// .trans, v the destinations or sources, a/imm/space the address.
Status FunctionDecoder::ld_st_matrix(const ast::Instruction& ai, const OpText& t, Inst& in, bool store) {
  const std::string what = store ? "stmatrix" : "ldmatrix";
  const uint8_t n = t.has("x1") ? 1 : t.has("x2") ? 2 : t.has("x4") ? 4 : 0;
  if (!t.has("m8n8") || n == 0 || t.types.size() != 1 || t.types[0] != "b16") {
    in.kind = Kind::kUnsupported;
    unsupported(ai, "this shape or type of " + what);
    return Status::ok();
  }
  if (ai.ops.size() != 2) return err(ai.line, what + " needs 2 operands");
  const ast::Operand& regs = ai.ops[store ? 1 : 0];
  const ast::Operand& addr = ai.ops[store ? 0 : 1];
  std::vector<uint32_t> r;
  if (Status s = registers(regs, ai.line, !store, &r); !s.is_ok()) return s;
  if (r.size() != n) {
    return err(ai.line, what + " .x" + std::to_string(n) + " needs " + std::to_string(n) +
                            (store ? " source registers" : " destination registers"));
  }
  in.space = t.has("shared") || t.has("shared::cta") ? Mem::kShared : Mem::kGeneric;
  if (Status s = address(addr, ai.line, in); !s.is_ok()) return s;
  for (uint8_t k = 0; k < n; ++k) in.v[k] = r[k];
  in.mode = n;
  in.aux = t.has("trans") ? 1 : 0;
  f_.interpreted_because = "uses " + what;
  in.fn = store ? stmatrix_handler() : ldmatrix_handler();
  return Status::ok();
}

// movmatrix.sync.aligned.m8n8.trans.b16 d, a: the 8x8 matrix held by the
// warp in ldmatrix's fragment layout, transposed. v[0] d, v[1] a.
Status FunctionDecoder::movmatrix(const ast::Instruction& ai, const OpText& t, Inst& in) {
  if (!t.has("m8n8") || !t.has("trans") || t.types.size() != 1 || t.types[0] != "b16") {
    in.kind = Kind::kUnsupported;
    unsupported(ai, "this shape or type of movmatrix");
    return Status::ok();
  }
  if (ai.ops.size() != 2) return err(ai.line, "movmatrix needs 2 operands");
  std::vector<uint32_t> r;
  if (Status st = registers(ai.ops[0], ai.line, true, &r); !st.is_ok()) return st;
  if (Status st = registers(ai.ops[1], ai.line, false, &r); !st.is_ok()) return st;
  if (r.size() != 2) return err(ai.line, "movmatrix takes one destination and one source register");
  in.v[0] = r[0];
  in.v[1] = r[1];
  f_.interpreted_because = "uses movmatrix";
  in.fn = movmatrix_handler();
  return Status::ok();
}

// mma.sync.aligned.{m16n8k16,m16n8k8,m16n8k4}.row.col.dtype.atype.btype.ctype d, a, b, c
Status FunctionDecoder::mma(const ast::Instruction& ai, const OpText& t, Inst& in) {
  const uint8_t shape = t.has("m16n8k16") ? 0 : t.has("m16n8k8") ? 1 : t.has("m16n8k4") ? 2 : 3;
  // The last four parts of the opcode are the types of d, a, b and c
  // (tf32 is not one of OpText's types).
  std::vector<std::string> ty;
  for (size_t end = ai.opcode.size(); ty.size() < 4;) {
    const size_t dot = ai.opcode.rfind('.', end - 1);
    if (dot == std::string::npos || dot == 0) break;
    ty.insert(ty.begin(), ai.opcode.substr(dot + 1, end - dot - 1));
    end = dot;
  }
  uint8_t type = 3;
  if (ty.size() == 4 && ty[1] == ty[2]) type = ty[1] == "f16" ? 0 : ty[1] == "bf16" ? 1 : ty[1] == "tf32" ? 2 : 3;
  const bool float_acc = ty.size() == 4 && (ty[0] == "f32" || ty[0] == "f16") && (ty[3] == "f32" || ty[3] == "f16");
  uint32_t counts[4] = {0, 0, 0, 0};
  const bool ok = shape != 3 && type != 3 && float_acc && t.has("row") && t.has("col") && !t.has("satfinite") &&
                  mma_counts(shape, type, ty[0] == "f16", ty[3] == "f16", counts);
  if (!ok) {
    in.kind = Kind::kUnsupported;
    unsupported(ai, "this shape or type of mma");
    return Status::ok();
  }
  if (ai.ops.size() != 4) return err(ai.line, "mma needs 4 operands");
  std::vector<uint32_t> list(counts, counts + 4);
  for (int k = 0; k < 4; ++k) {
    const size_t before = list.size();
    if (Status s = registers(ai.ops[k], ai.line, k == 0, &list); !s.is_ok()) return s;
    if (list.size() - before != counts[k]) {
      return err(ai.line, "mma operand " + std::to_string(k) + " needs " + std::to_string(counts[k]) + " registers");
    }
  }
  in.mode = shape;
  in.aux = static_cast<uint8_t>(type | (ty[0] == "f16" ? 0x10 : 0) | (ty[3] == "f16" ? 0x20 : 0));
  keep_list(std::move(list), in);
  in.fn = mma_handler();
  return Status::ok();
}

// wmma.load.{a,b,c}.sync.aligned.{row,col}.shape{.global,.shared{::cta}}.type r, [p]{, stride}
// wmma.store.d.sync.aligned.{row,col}.shape{.global,.shared{::cta}}.type [p], r{, stride}
// wmma.mma.sync.aligned.{row,col}.{row,col}.shape then .dtype.ctype (f16
// multiplicands), .f32.atype.btype.f32 (bf16, tf32) or
// .s32.atype.btype.s32{.satfinite} (s8, u8) d, a, b, c.
// Any other part (.b1, .s4, .u4, .f64, .rnd, another shape) is refused.
Status FunctionDecoder::wmma(const ast::Instruction& ai, Inst& in) {
  std::vector<std::string> parts;
  for (size_t p = 0; p != std::string::npos;) {
    const size_t q = ai.opcode.find('.', p);
    parts.push_back(ai.opcode.substr(p, q == std::string::npos ? q : q - p));
    p = q == std::string::npos ? q : q + 1;
  }
  const std::string op = parts.size() > 1 ? parts[1] : "";
  int shape = -1, matrix = -1;
  bool sync = false, sat = false, bad = false;
  std::vector<bool> col;
  std::vector<uint8_t> types;
  in.space = Mem::kGeneric;
  for (size_t i = 2; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    const int sh = p == "m16n16k16" ? kWmmaM16N16K16 : p == "m32n8k16" ? kWmmaM32N8K16
                 : p == "m8n32k16" ? kWmmaM8N32K16 : p == "m16n16k8" ? kWmmaM16N16K8 : -1;
    const int ty = p == "f16" ? kWmmaF16 : p == "bf16" ? kWmmaBF16 : p == "tf32" ? kWmmaTF32 : p == "s8" ? kWmmaS8
                 : p == "u8" ? kWmmaU8 : p == "f32" ? kWmmaF32 : p == "s32" ? kWmmaS32 : -1;
    if (i == 2 && op == "load" && (p == "a" || p == "b" || p == "c")) matrix = p == "a" ? kWmmaA : p == "b" ? kWmmaB : kWmmaC;
    else if (i == 2 && op == "store" && p == "d") matrix = kWmmaC;
    else if (p == "sync") sync = true;
    else if (p == "aligned") continue;
    else if (p == "row" || p == "col") col.push_back(p == "col");
    else if (sh >= 0 && shape < 0) shape = sh;
    else if (p == "global" && op != "mma") in.space = Mem::kGlobal;
    else if ((p == "shared" || p == "shared::cta") && op != "mma") in.space = Mem::kShared;
    else if (p == "satfinite" && op == "mma") sat = true;
    else if (ty >= 0) types.push_back(static_cast<uint8_t>(ty));
    else bad = true;
  }
  auto refuse = [&]() {
    in.kind = Kind::kUnsupported;
    unsupported(ai, "this shape or type of wmma");
    return Status::ok();
  };
  if (bad || !sync || shape < 0) return refuse();
  const uint8_t sh = static_cast<uint8_t>(shape);
  std::vector<uint32_t> list;
  auto operand = [&](const ast::Operand& o, bool write, uint32_t count, const char* what) -> Status {
    const size_t before = list.size();
    if (Status s = registers(o, ai.line, write, &list); !s.is_ok()) return s;
    if (list.size() - before != count)
      return err(ai.line, std::string("wmma ") + what + " needs " + std::to_string(count) + " registers");
    return Status::ok();
  };
  if (op == "load" || op == "store") {
    uint32_t n = 0;
    if (matrix < 0 || col.size() != 1 || types.size() != 1 ||
        !wmma_regs(sh, static_cast<uint8_t>(matrix), types[0], &n))
      return refuse();
    const bool load = op == "load";
    if (ai.ops.size() != 2 && ai.ops.size() != 3) return err(ai.line, "wmma." + op + " needs 2 or 3 operands");
    list.push_back(n);
    if (Status s = operand(ai.ops[load ? 0 : 1], load, n, "fragment"); !s.is_ok()) return s;
    if (Status s = address(ai.ops[load ? 1 : 0], ai.line, in); !s.is_ok()) return s;
    if (in.space != Mem::kGlobal && in.space != Mem::kShared && in.space != Mem::kGeneric)
      return err(ai.line, "wmma." + op + " accesses global or shared memory");
    in.b = kNoSlot;
    if (ai.ops.size() == 3)
      if (Status s = value(ai.ops[2], ai.line, &in.b); !s.is_ok()) return s;
    // keep_list takes imm: the address's offset goes in the list.
    list.insert(list.begin() + 1, {static_cast<uint32_t>(in.imm), static_cast<uint32_t>(in.imm >> 32)});
    in.mode = sh;
    in.aux = static_cast<uint8_t>(types[0] | matrix << 4 | (col[0] ? 0x40 : 0));
    in.fn = load ? wmma_load_handler() : wmma_store_handler();
  } else if (op == "mma") {
    // Types: d, c for f16 multiplicands; else d, a, b, c.
    if (col.size() != 2 || (types.size() != 2 && types.size() != 4)) return refuse();
    const bool f16 = types.size() == 2;
    const uint8_t d = types[0], c = types.back();
    const uint8_t a = f16 ? uint8_t{kWmmaF16} : types[1], b = f16 ? uint8_t{kWmmaF16} : types[2];
    const bool integer = a == kWmmaS8 || a == kWmmaU8;
    bool ok = f16 ? (d == kWmmaF16 || d == kWmmaF32) && (c == kWmmaF16 || c == kWmmaF32)
              : integer ? (b == kWmmaS8 || b == kWmmaU8) && d == kWmmaS32 && c == kWmmaS32
                        : (a == kWmmaBF16 || a == kWmmaTF32) && b == a && d == kWmmaF32 && c == kWmmaF32;
    ok = ok && (!sat || integer);
    uint32_t counts[4] = {0, 0, 0, 0};
    ok = ok && wmma_regs(sh, kWmmaC, d, &counts[0]) && wmma_regs(sh, kWmmaA, a, &counts[1]) &&
         wmma_regs(sh, kWmmaB, b, &counts[2]) && wmma_regs(sh, kWmmaC, c, &counts[3]);
    if (!ok) return refuse();
    if (ai.ops.size() != 4) return err(ai.line, "wmma.mma needs 4 operands");
    list.assign(counts, counts + 4);
    static const char* kNames[] = {"d", "a", "b", "c"};
    for (int k = 0; k < 4; ++k)
      if (Status s = operand(ai.ops[k], k == 0, counts[k], kNames[k]); !s.is_ok()) return s;
    in.mode = static_cast<uint8_t>(sh | (d == kWmmaF16 ? 0x10 : 0) | (c == kWmmaF16 ? 0x20 : 0) | (sat ? 0x40 : 0));
    in.aux = static_cast<uint8_t>(a | b << 4);
    in.fn = wmma_mma_handler();
  } else {
    return refuse();
  }
  keep_list(std::move(list), in);
  f_.interpreted_because = "uses wmma";
  return Status::ok();
}

}  // namespace rgpu::ptx::detail
