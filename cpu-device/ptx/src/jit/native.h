// Which decoded instructions the compiled path emits as native vector code
// (classify), and in what form; every other instruction calls the
// interpreter's handler. No LLVM here: the analysis (analysis.h) and the
// code generator (gen.h) both read it.
#pragma once

#include <cstdint>

#include "../ir.h"

namespace rgpu::ptx::jit {

bool is_int_ty(Ty t);
bool is_signed_ty(Ty t);
bool is_float_ty(Ty t);

// The natively compiled operations.
enum class Op : uint8_t {
  kNone,  // the interpreter's handler
  kMov, kSelp, kAdd, kSub, kMul, kMad, kMulWide, kMadWide, kAnd, kOr, kXor, kNot, kShl, kShr, kMin, kMax, kNeg,
  kPAnd, kPOr, kPXor, kPNot,
  kSetp, kCvt,
  kFAdd, kFSub, kFMul, kFFma, kFDiv, kFNeg, kFAbs,
  kLd, kSt, kCvta,
};

struct Native {
  Op op = Op::kNone;
  Ty t = Ty::kNone;    // operation type (last type of the opcode)
  Ty t2 = Ty::kNone;   // cvt: source type
  uint8_t cmp = 0;     // setp: comparison
  uint8_t bop = 0;     // setp: 0 none, 1 and, 2 or, 3 xor
  bool fcmp = false;   // setp: float comparison
  uint8_t rnd = 0;     // cvt float to int: 0 rn, 1 rz, 2 rm, 3 rp
  uint8_t vec = 1;     // ld/st
};

// Chooses a native form for an ordinary instruction (Kind::kOp) whose
// opcode text is `o`, or kNone.
Native classify(const OpText& o, const Inst& in);

}  // namespace rgpu::ptx::jit
