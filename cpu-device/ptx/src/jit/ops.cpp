// Gen's native operations (gen.h): integer and floating-point arithmetic,
// predicate logic, comparisons, selects, conversions and cvta, as vector
// operations over a warp's lanes; every other instruction goes to the
// interpreter's handler.
#include "gen.h"

namespace rgpu::ptx::jit {

void Gen::emit_op(const Inst& in, const Native& n, Value* gm) {
  if (n.op == Op::kNone) {
    BasicBlock* run = BasicBlock::Create(C, "handler", F);
    BasicBlock* after = BasicBlock::Create(C, "after", F);
    B.CreateCondBr(B.CreateICmpNE(gm, B.getInt32(0)), run, after);
    B.SetInsertPoint(run);
    call_handler(in, gm);
    B.CreateBr(after);
    B.SetInsertPoint(after);
    return;
  }
  if (n.op == Op::kLd || n.op == Op::kSt) {
    emit_mem(in, n, gm);
    return;
  }
  Value* act = lanes(gm);
  unsigned bits = ty_size(n.t) * 8;
  bool sg = is_signed_ty(n.t);
  switch (n.op) {
    case Op::kMov: set(in.d, get(in.a, an_.narrow[in.d] ? 32 : 64), act); break;
    case Op::kSelp: {
      unsigned w = an_.narrow[in.d] ? 32 : 64;
      set(in.d, B.CreateSelect(bool_vec(in.c, false), get(in.a, w), get(in.b, w)), act);
      break;
    }
    case Op::kAdd: set(in.d, B.CreateAdd(get(in.a, bits), get(in.b, bits)), act); break;
    case Op::kSub: set(in.d, B.CreateSub(get(in.a, bits), get(in.b, bits)), act); break;
    case Op::kMul: set(in.d, B.CreateMul(get(in.a, bits), get(in.b, bits)), act); break;
    case Op::kMad: set(in.d, B.CreateAdd(B.CreateMul(get(in.a, bits), get(in.b, bits)), get(in.c, bits)), act); break;
    case Op::kMulWide:
    case Op::kMadWide: {
      auto ext = [&](uint32_t s) {
        Value* v = get(s, bits);
        return sg ? B.CreateSExt(v, vty(bits * 2)) : B.CreateZExt(v, vty(bits * 2));
      };
      Value* r = B.CreateMul(ext(in.a), ext(in.b));
      if (n.op == Op::kMadWide) r = B.CreateAdd(r, get(in.c, bits * 2));
      set(in.d, r, act);
      break;
    }
    case Op::kAnd: set(in.d, B.CreateAnd(get(in.a, bits), get(in.b, bits)), act); break;
    case Op::kOr: set(in.d, B.CreateOr(get(in.a, bits), get(in.b, bits)), act); break;
    case Op::kXor: set(in.d, B.CreateXor(get(in.a, bits), get(in.b, bits)), act); break;
    case Op::kNot: set(in.d, B.CreateNot(get(in.a, bits)), act); break;
    case Op::kNeg: set(in.d, B.CreateNeg(get(in.a, bits)), act); break;
    case Op::kMin:
    case Op::kMax: {
      Value* a = get(in.a, bits);
      Value* b = get(in.b, bits);
      Value* lt = sg ? B.CreateICmpSLT(a, b) : B.CreateICmpULT(a, b);
      Value* gt = sg ? B.CreateICmpSGT(a, b) : B.CreateICmpUGT(a, b);
      set(in.d, n.op == Op::kMin ? B.CreateSelect(lt, a, b) : B.CreateSelect(gt, a, b), act);
      break;
    }
    case Op::kShl:
    case Op::kShr: {
      Value* v = get(in.a, bits);
      Value* s = get(in.b, 32);
      Value* big = B.CreateICmpUGE(s, splat(32, bits));
      Value* amt = B.CreateSelect(big, splat(32, bits - 1), s);
      if (bits != 32) amt = bits < 32 ? B.CreateTrunc(amt, vty(bits)) : B.CreateZExt(amt, vty(bits));
      Value* r;
      if (n.op == Op::kShl) r = B.CreateSelect(big, splat(bits, 0), B.CreateShl(v, amt));
      else if (sg) r = B.CreateAShr(v, amt);
      else r = B.CreateSelect(big, splat(bits, 0), B.CreateLShr(v, amt));
      set(in.d, r, act);
      break;
    }
    case Op::kPAnd:
    case Op::kPOr:
    case Op::kPXor:
    case Op::kPNot: {
      Value* p = bool_vec(in.a, in.aux & 0x10);
      Value* r;
      if (n.op == Op::kPNot) {
        r = B.CreateNot(p);
      } else {
        Value* q = bool_vec(in.b, in.aux & 0x20);
        r = n.op == Op::kPAnd ? B.CreateAnd(p, q) : n.op == Op::kPOr ? B.CreateOr(p, q) : B.CreateXor(p, q);
      }
      set(in.d, B.CreateZExt(r, vty(32)), act);
      break;
    }
    case Op::kSetp: {
      Value* t;
      if (n.fcmp) {
        static const llvm::CmpInst::Predicate kF[] = {
            llvm::CmpInst::FCMP_OEQ, llvm::CmpInst::FCMP_ONE, llvm::CmpInst::FCMP_OLT, llvm::CmpInst::FCMP_OLE,
            llvm::CmpInst::FCMP_OGT, llvm::CmpInst::FCMP_OGE, llvm::CmpInst::FCMP_UEQ, llvm::CmpInst::FCMP_UNE,
            llvm::CmpInst::FCMP_ULT, llvm::CmpInst::FCMP_ULE, llvm::CmpInst::FCMP_UGT, llvm::CmpInst::FCMP_UGE,
            llvm::CmpInst::FCMP_ORD, llvm::CmpInst::FCMP_UNO};
        bool dbl = n.t == Ty::kF64;
        t = B.CreateFCmp(kF[n.cmp], getf(in.a, dbl), getf(in.b, dbl));
      } else {
        static const llvm::CmpInst::Predicate kS[] = {llvm::CmpInst::ICMP_EQ, llvm::CmpInst::ICMP_NE,
                                                      llvm::CmpInst::ICMP_SLT, llvm::CmpInst::ICMP_SLE,
                                                      llvm::CmpInst::ICMP_SGT, llvm::CmpInst::ICMP_SGE};
        static const llvm::CmpInst::Predicate kU[] = {llvm::CmpInst::ICMP_EQ, llvm::CmpInst::ICMP_NE,
                                                      llvm::CmpInst::ICMP_ULT, llvm::CmpInst::ICMP_ULE,
                                                      llvm::CmpInst::ICMP_UGT, llvm::CmpInst::ICMP_UGE};
        t = B.CreateICmp(sg ? kS[n.cmp] : kU[n.cmp], get(in.a, bits), get(in.b, bits));
      }
      Value* f = B.CreateNot(t);
      if (in.c != kNoSlot) {
        Value* cv = bool_vec(in.c, in.aux & 0x40);
        if (n.bop == 1) t = B.CreateAnd(t, cv), f = B.CreateAnd(f, cv);
        else if (n.bop == 2) t = B.CreateOr(t, cv), f = B.CreateOr(f, cv);
        else t = B.CreateXor(t, cv), f = B.CreateXor(f, cv);
      }
      set(in.d, B.CreateZExt(t, vty(32)), act);
      if (in.d2 != kNoSlot) set(in.d2, B.CreateZExt(f, vty(32)), act);
      break;
    }
    case Op::kCvt: emit_cvt(in, n, act); break;
    case Op::kCvta: {
      // Global addresses are generic addresses; shared ones are offsets
      // from the block's shared memory (h_cvta).
      Value* v = get(in.a, 64);
      if (in.space == Mem::kShared) {
        Value* sh = B.CreateVectorSplat(32, B.CreatePtrToInt(shared_, i64));
        v = in.mode == 1 ? B.CreateSub(v, sh) : B.CreateAdd(sh, B.CreateAnd(v, splat(64, 0xffffffffull)));
      }
      if (in.size == 4) v = B.CreateAnd(v, splat(64, 0xffffffffull));
      set(in.d, v, act);
      break;
    }
    case Op::kFAdd:
    case Op::kFSub:
    case Op::kFMul:
    case Op::kFDiv: {
      bool dbl = n.t == Ty::kF64;
      Value* a = getf(in.a, dbl);
      Value* b = getf(in.b, dbl);
      Value* r = n.op == Op::kFAdd ? B.CreateFAdd(a, b) : n.op == Op::kFSub ? B.CreateFSub(a, b)
               : n.op == Op::kFMul ? B.CreateFMul(a, b) : B.CreateFDiv(a, b);
      setf(in.d, r, act);
      break;
    }
    case Op::kFFma: {
      bool dbl = n.t == Ty::kF64;
      Value* r = B.CreateIntrinsic(llvm::Intrinsic::fma, {fvty(dbl)}, {getf(in.a, dbl), getf(in.b, dbl), getf(in.c, dbl)});
      setf(in.d, r, act);
      break;
    }
    case Op::kFNeg:
    case Op::kFAbs: {
      bool dbl = n.t == Ty::kF64;
      Value* a = getf(in.a, dbl);
      setf(in.d, n.op == Op::kFNeg ? B.CreateFNeg(a) : B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a), act);
      break;
    }
    default: error_ = "internal: op"; break;
  }
}

void Gen::emit_cvt(const Inst& in, const Native& n, Value* act) {
  Ty dt = n.t, st = n.t2;
  unsigned db = ty_size(dt) * 8, sb = ty_size(st) * 8;
  bool df = is_float_ty(dt), sf = is_float_ty(st);
  if (!df && !sf) {
    Value* v = get(in.a, sb);
    if (db > sb) v = is_signed_ty(st) ? B.CreateSExt(v, vty(db)) : B.CreateZExt(v, vty(db));
    else if (db < sb) v = B.CreateTrunc(v, vty(db));
    set(in.d, v, act);
  } else if (df && !sf) {
    Value* v = get(in.a, sb);
    Value* r = is_signed_ty(st) ? B.CreateSIToFP(v, fvty(dt == Ty::kF64)) : B.CreateUIToFP(v, fvty(dt == Ty::kF64));
    setf(in.d, r, act);
  } else if (df && sf) {
    Value* v = getf(in.a, st == Ty::kF64);
    setf(in.d, dt == Ty::kF64 ? B.CreateFPExt(v, fvty(true)) : B.CreateFPTrunc(v, fvty(false)), act);
  } else {
    Value* v = getf(in.a, st == Ty::kF64);
    if (st == Ty::kF32) v = B.CreateFPExt(v, fvty(true));
    llvm::Intrinsic::ID rid = n.rnd == 0 ? llvm::Intrinsic::roundeven : n.rnd == 1 ? llvm::Intrinsic::trunc
                            : n.rnd == 2 ? llvm::Intrinsic::floor : llvm::Intrinsic::ceil;
    v = B.CreateUnaryIntrinsic(rid, v);
    llvm::Intrinsic::ID cid = is_signed_ty(dt) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
    Value* r = B.CreateIntrinsic(cid, {vty(db), fvty(true)}, {v});
    set(in.d, r, act);
  }
}

}  // namespace rgpu::ptx::jit
