// Gen's loads and stores (gen.h): a warp's access checked once in its
// common shapes (an address known when compiling, a full warp at
// consecutive addresses, groups of 8 lanes), shared accesses whose shape
// comes from the base register, global checks through the instruction's
// window, and the general path; what none accepts runs the interpreter's
// handler, which reports the exact fault.
#include <vector>

#include "gen.h"

namespace rgpu::ptx::jit {

// Whether the global access [lo, lo + len) is allowed. Inside the extent
// the instruction's window holds, with the memory's release counter as it
// was, it is, without a call; else the checker answers (rgpu_jit_check)
// and refills the window. The insert point ends at the join.
llvm::Value* Gen::check_global(Value* lo, Value* len, bool write, uint32_t win) {
  Value* wp = B.CreateConstInBoundsGEP1_64(i64, windows_, uint64_t{win} * kWindowWords);
  Value* wlo = B.CreateLoad(i64, wp);
  Value* whi = B.CreateLoad(i64, B.CreateConstInBoundsGEP1_64(i64, wp, 1));
  Value* inside = B.CreateAnd(B.CreateICmpULT(B.CreateSub(lo, wlo), B.CreateSub(whi, wlo)),
                              B.CreateICmpULE(len, B.CreateSub(whi, lo)));
  BasicBlock* epoch = BasicBlock::Create(C, "wepoch", F);
  BasicBlock* miss = BasicBlock::Create(C, "wmiss", F);
  BasicBlock* join = BasicBlock::Create(C, "wjoin", F);
  likely_(inside, epoch, miss);
  B.SetInsertPoint(epoch);
  Value* counter = B.CreateLoad(ptr, B.CreateConstInBoundsGEP1_64(i64, wp, 2));
  llvm::LoadInst* now = B.CreateAlignedLoad(i64, counter, llvm::Align(8));
  now->setAtomic(llvm::AtomicOrdering::Acquire);
  Value* same = B.CreateICmpEQ(now, B.CreateLoad(i64, B.CreateConstInBoundsGEP1_64(i64, wp, 3)));
  likely_(same, join, miss);
  B.SetInsertPoint(miss);
  Value* c = B.CreateCall(helper_ty({ptr, i64, i64, i32, ptr}, i32), helper(reinterpret_cast<void*>(&rgpu_jit_check)),
                          {W, lo, len, B.getInt32(write), wp});
  Value* checked = B.CreateICmpNE(c, B.getInt32(0));
  BasicBlock* miss_end = B.GetInsertBlock();
  B.CreateBr(join);
  B.SetInsertPoint(join);
  llvm::PHINode* ok = B.CreatePHI(i1, 2);
  ok->addIncoming(B.getTrue(), epoch);
  ok->addIncoming(checked, miss_end);
  return ok;
}

// The common shapes of a warp's access, checked once for the warp: an
// address the same in every lane known when compiling (kernel parameters,
// shared variables), and a full warp at consecutive addresses. On success
// they end in `done`; what they do not accept goes on in the general
// path, emitted after them at the insert point (it checks again).
void Gen::emit_mem_quick(const Inst& in, const Native& n, Value* gm, Value* act, Value* av, BasicBlock* done,
                         BasicBlock* slow, uint32_t win) {
  bool write = n.op == Op::kSt;
  uint32_t esize = ty_size(n.t);
  bool sext = is_signed_ty(n.t);
  llvm::Align al(esize);
  llvm::Type* ety = B.getIntNTy(esize * 8);
  // Whether [lo, lo + len) is inside the space, and where it is on the host.
  auto range = [&](Value* lo, uint64_t len, Value** host) -> Value* {
    if (in.space == Mem::kGlobal || in.space == Mem::kConst) {
      *host = B.CreateIntToPtr(lo, ptr);
      return check_global(lo, B.getInt64(len), write, win);
    }
    if (in.space == Mem::kShared) {
      Value* off = B.CreateAnd(lo, B.getInt64(0xffffffffull));
      *host = B.CreateGEP(i8, shared_, off);
      return B.CreateICmpULE(B.CreateAdd(off, B.getInt64(len)), shared_size_);
    }
    *host = B.CreateGEP(i8, kparams_, lo);
    return B.CreateAnd(B.CreateICmpULT(lo, B.getInt64(1ull << 32)),
                       B.CreateICmpULE(B.CreateAdd(lo, B.getInt64(len)), kparam_size_));
  };
  if (an_.constant[in.a] && !(write && n.vec > 1)) {
    uint64_t lo = an_.const_val[in.a] + static_cast<uint64_t>(in.imm);
    if (lo % (esize * n.vec)) return;  // misaligned: the handler faults
    Value* host = nullptr;
    Value* ok = range(B.getInt64(lo), uint64_t{esize} * n.vec, &host);
    BasicBlock* go = BasicBlock::Create(C, "mconst", F);
    likely_(ok, go, slow);
    B.SetInsertPoint(go);
    if (write) {
      // The highest active lane's value is the one left in memory.
      Value* last = B.CreateSub(B.getInt32(31), B.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, gm, B.getTrue()));
      tag(B.CreateAlignedStore(B.CreateExtractElement(get(in.v[0], esize * 8), last), host, al), false);
    } else {
      for (uint32_t k = 0; k < n.vec; ++k) {
        Value* hk = k ? B.CreateConstInBoundsGEP1_64(i8, host, uint64_t{k} * esize) : host;
        Value* v = tag(B.CreateAlignedLoad(ety, hk, al), false);
        set(in.v[k], B.CreateVectorSplat(32, v), act, sext);
      }
    }
    B.CreateBr(done);
    // Unreachable from here: a fresh block for the general path's code.
    B.SetInsertPoint(BasicBlock::Create(C, "mdead", F));
    return;
  }
  if (n.vec != 1 || (esize != 4 && esize != 8)) return;
  BasicBlock* contig = BasicBlock::Create(C, "mcontig", F);
  BasicBlock* vec = BasicBlock::Create(C, "mcvec", F);
  BasicBlock* general = BasicBlock::Create(C, "mgeneral", F);
  Value* first = B.CreateExtractElement(av, uint64_t{0});
  std::vector<llvm::Constant*> steps;
  for (uint64_t l = 0; l < 32; ++l) steps.push_back(B.getInt64(l * esize));
  Value* expect = B.CreateAdd(B.CreateVectorSplat(32, first), llvm::ConstantVector::get(steps));
  Value* same = B.CreateBitCast(B.CreateICmpEQ(av, expect), i32);
  likely_(B.CreateAnd(B.CreateICmpEQ(gm, B.getInt32(~0u)), B.CreateICmpEQ(same, B.getInt32(~0u))), contig, general);
  B.SetInsertPoint(contig);
  Value* host = nullptr;
  Value* ok = B.CreateAnd(B.CreateICmpEQ(B.CreateAnd(first, B.getInt64(esize - 1)), B.getInt64(0)),
                          range(first, uint64_t{esize} * 32, &host));
  likely_(ok, vec, general);
  B.SetInsertPoint(vec);
  if (write) tag(B.CreateAlignedStore(get(in.v[0], esize * 8), host, al), false);
  else set(in.v[0], tag(B.CreateAlignedLoad(vty(esize * 8), host, al), false), act, sext);
  B.CreateBr(done);
  B.SetInsertPoint(general);
  if (write) return;
  // Loads of a full warp in groups of 8 lanes (rows of a 2D block 8 or
  // 16 wide): each group at consecutive addresses, or each at one
  // address; 4 short vector loads or 4 scalar ones instead of 32.
  std::vector<int> lead(32);
  std::vector<llvm::Constant*> step8;
  for (int l = 0; l < 32; ++l) {
    lead[static_cast<size_t>(l)] = l & ~7;
    step8.push_back(B.getInt64(static_cast<uint64_t>(l & 7) * esize));
  }
  Value* fv = B.CreateShuffleVector(av, av, lead);
  Value* isc = B.CreateICmpEQ(B.CreateBitCast(B.CreateICmpEQ(av, B.CreateAdd(fv, llvm::ConstantVector::get(step8))), i32),
                              B.getInt32(~0u));
  Value* isu = B.CreateICmpEQ(B.CreateBitCast(B.CreateICmpEQ(av, fv), i32), B.getInt32(~0u));
  Value* fullw = B.CreateICmpEQ(gm, B.getInt32(~0u));
  BasicBlock* segc = BasicBlock::Create(C, "msegc", F);
  BasicBlock* segu0 = BasicBlock::Create(C, "msegu_test", F);
  BasicBlock* segu = BasicBlock::Create(C, "msegu", F);
  BasicBlock* rest = BasicBlock::Create(C, "mrest", F);
  B.CreateCondBr(B.CreateAnd(fullw, isc), segc, segu0);
  B.SetInsertPoint(segu0);
  B.CreateCondBr(B.CreateAnd(fullw, isu), segu, rest);
  for (int uni = 0; uni < 2; ++uni) {
    B.SetInsertPoint(uni ? segu : segc);
    uint64_t len = uni ? esize : uint64_t{esize} * 8;
    Value* hosts[4];
    Value* ok = B.getTrue();
    for (int k = 0; k < 4; ++k) {
      Value* f = B.CreateExtractElement(av, uint64_t(8 * k));
      ok = B.CreateAnd(ok, B.CreateICmpEQ(B.CreateAnd(f, B.getInt64(esize - 1)), B.getInt64(0)));
      ok = B.CreateAnd(ok, range(f, len, &hosts[k]));
    }
    BasicBlock* go = BasicBlock::Create(C, uni ? "msegu_go" : "msegc_go", F);
    likely_(ok, go, rest);
    B.SetInsertPoint(go);
    set(in.v[0], group_loads(ety, hosts, uni != 0, al), act, sext);
    B.CreateBr(done);
  }
  B.SetInsertPoint(rest);
}

Gen::SharedShape Gen::shared_shape(uint32_t base, uint32_t esize) {
  SharedShape sh;
  Value* o = get(base, 32);
  std::vector<llvm::Constant*> steps, step8;
  std::vector<int> lead(32), zero(32, 0);
  for (int l = 0; l < 32; ++l) {
    steps.push_back(B.getInt32(static_cast<uint32_t>(l) * esize));
    step8.push_back(B.getInt32(static_cast<uint32_t>(l & 7) * esize));
    lead[static_cast<size_t>(l)] = l & ~7;
  }
  auto all = [&](Value* a, Value* b) {
    return B.CreateICmpEQ(B.CreateBitCast(B.CreateICmpEQ(a, b), i32), B.getInt32(~0u));
  };
  Value* first = B.CreateShuffleVector(o, o, zero);
  Value* fv = B.CreateShuffleVector(o, o, lead);
  sh.contig = all(o, B.CreateAdd(first, llvm::ConstantVector::get(steps)));
  sh.rows = all(o, B.CreateAdd(fv, llvm::ConstantVector::get(step8)));
  sh.bcast = all(o, fv);
  for (int k = 0; k < 4; ++k) sh.start[k] = B.CreateExtractElement(o, uint64_t(8 * k));
  return sh;
}

// A full warp's shared access in the shapes of `sh`: one vector access,
// or four of 8 lanes (loads only). Success ends in `done`; the rest goes
// on at the insert point (the general path, which checks again).
void Gen::emit_shared_quick(const Inst& in, const Native& n, Value* gm, const SharedShape& sh, BasicBlock* done) {
  const bool write = n.op == Op::kSt;
  const uint32_t esize = ty_size(n.t);
  const bool sext = is_signed_ty(n.t);
  const llvm::Align al(esize);
  llvm::Type* ety = B.getIntNTy(esize * 8);
  Value* imm = B.getInt32(static_cast<uint32_t>(in.imm));
  Value* full = B.CreateICmpEQ(gm, B.getInt32(~0u));
  Value* all = lanes(B.getInt32(~0u));
  // [start + imm, + len) inside shared memory and aligned; its host address.
  auto at = [&](Value* start, uint64_t len, Value** host) -> Value* {
    Value* off = B.CreateZExt(B.CreateAdd(start, imm), i64);
    *host = B.CreateGEP(i8, shared_, off);
    return B.CreateAnd(B.CreateICmpEQ(B.CreateAnd(off, B.getInt64(esize - 1)), B.getInt64(0)),
                       B.CreateICmpULE(B.CreateAdd(off, B.getInt64(len)), shared_size_));
  };
  BasicBlock* contig = BasicBlock::Create(C, "scontig", F);
  BasicBlock* cgo = BasicBlock::Create(C, "scontig_go", F);
  BasicBlock* other = BasicBlock::Create(C, "sother", F);
  BasicBlock* general = BasicBlock::Create(C, "sgeneral", F);
  likely_(B.CreateAnd(full, sh.contig), contig, other);
  B.SetInsertPoint(contig);
  Value* host = nullptr;
  likely_(at(sh.start[0], uint64_t{esize} * 32, &host), cgo, general);
  B.SetInsertPoint(cgo);
  if (write) tag(B.CreateAlignedStore(get(in.v[0], esize * 8), host, al), false);
  else set(in.v[0], tag(B.CreateAlignedLoad(vty(esize * 8), host, al), false), all, sext);
  B.CreateBr(done);
  B.SetInsertPoint(other);
  if (write) {
    B.CreateBr(general);
  } else {
    BasicBlock* rows = BasicBlock::Create(C, "srows", F);
    BasicBlock* bcast_test = BasicBlock::Create(C, "sbcast_test", F);
    BasicBlock* bcast = BasicBlock::Create(C, "sbcast", F);
    B.CreateCondBr(B.CreateAnd(full, sh.rows), rows, bcast_test);
    B.SetInsertPoint(bcast_test);
    B.CreateCondBr(B.CreateAnd(full, sh.bcast), bcast, general);
    for (int uni = 0; uni < 2; ++uni) {
      B.SetInsertPoint(uni ? bcast : rows);
      Value* hosts[4];
      Value* ok = B.getTrue();
      for (int k = 0; k < 4; ++k) ok = B.CreateAnd(ok, at(sh.start[k], uni ? esize : uint64_t{esize} * 8, &hosts[k]));
      BasicBlock* go = BasicBlock::Create(C, uni ? "sbcast_go" : "srows_go", F);
      likely_(ok, go, general);
      B.SetInsertPoint(go);
      set(in.v[0], group_loads(ety, hosts, uni != 0, al), all, sext);
      B.CreateBr(done);
    }
  }
  B.SetInsertPoint(general);
}

// A full warp's 32 values from four groups of 8 lanes: each group's 8
// consecutive values at hosts[k], or (uniform) one value each.
llvm::Value* Gen::group_loads(llvm::Type* ety, Value* const hosts[4], bool uniform, llvm::Align al) {
  auto* v8 = llvm::FixedVectorType::get(ety, 8);
  Value* part[4];
  for (int k = 0; k < 4; ++k) {
    if (uniform) part[k] = B.CreateVectorSplat(8, tag(B.CreateAlignedLoad(ety, hosts[k], al), false));
    else part[k] = tag(B.CreateAlignedLoad(v8, hosts[k], al), false);
  }
  std::vector<int> c16(16), c32(32);
  for (int l = 0; l < 16; ++l) c16[static_cast<size_t>(l)] = l;
  for (int l = 0; l < 32; ++l) c32[static_cast<size_t>(l)] = l;
  Value* lo = B.CreateShuffleVector(part[0], part[1], c16);
  Value* hi = B.CreateShuffleVector(part[2], part[3], c16);
  return B.CreateShuffleVector(lo, hi, c32);
}

// ld/st with the interpreter's checks; anything the fast path does not
// accept runs the handler, which reports the exact fault.
void Gen::emit_mem(const Inst& in, const Native& n, Value* gm) {
  bool write = n.op == Op::kSt;
  uint32_t esize = ty_size(n.t);
  uint32_t size = esize * n.vec;
  BasicBlock* check = BasicBlock::Create(C, "mcheck", F);
  BasicBlock* fast = BasicBlock::Create(C, "mfast", F);
  BasicBlock* slow = BasicBlock::Create(C, "mslow", F);
  BasicBlock* done = BasicBlock::Create(C, "mdone", F);
  // Shared accesses through a register: their shape, before the branch.
  const bool shared_quick =
      in.space == Mem::kShared && !an_.constant[in.a] && n.vec == 1 && (esize == 4 || esize == 8);
  SharedShape sh;
  if (shared_quick) sh = shared_shape(in.a, esize);
  likely_(B.CreateICmpNE(gm, B.getInt32(0)), check, done);
  B.SetInsertPoint(check);
  Value* act = lanes(gm);
  const bool global = in.space == Mem::kGlobal || in.space == Mem::kConst;
  const uint32_t win = global ? num_windows_++ : 0;
  if (shared_quick) emit_shared_quick(in, n, gm, sh, done);
  Value* av = B.CreateAdd(get(in.a, 64), splat(64, static_cast<uint64_t>(in.imm)));
  if (!shared_quick) emit_mem_quick(in, n, gm, act, av, done, slow, win);
  Value* anyb = reduce(llvm::Intrinsic::vector_reduce_or, B.CreateSelect(act, av, splat(64, 0)));
  Value* ok = B.CreateICmpEQ(B.CreateAnd(anyb, B.getInt64(size - 1)), B.getInt64(0));
  Value* base = nullptr;
  Value* offs = av;
  if (global) {
    Value* lo = reduce(llvm::Intrinsic::vector_reduce_umin, B.CreateSelect(act, av, splat(64, ~0ull)));
    Value* hi = reduce(llvm::Intrinsic::vector_reduce_umax, B.CreateSelect(act, av, splat(64, 0)));
    Value* span = B.CreateSub(hi, lo);
    ok = B.CreateAnd(ok, B.CreateICmpULT(span, B.getInt64(1ull << 40)));
    Value* len = B.CreateAdd(span, B.getInt64(size));
    ok = B.CreateAnd(ok, check_global(lo, len, write, win));
  } else if (in.space == Mem::kShared) {
    offs = B.CreateAnd(av, splat(64, 0xffffffffull));
    Value* mx = reduce(llvm::Intrinsic::vector_reduce_umax, B.CreateSelect(act, offs, splat(64, 0)));
    ok = B.CreateAnd(ok, B.CreateICmpULE(B.CreateAdd(mx, B.getInt64(size)), shared_size_));
    base = shared_;
  } else {  // kernel parameters, read only
    Value* mx = reduce(llvm::Intrinsic::vector_reduce_umax, B.CreateSelect(act, offs, splat(64, 0)));
    ok = B.CreateAnd(ok, B.CreateICmpULT(mx, B.getInt64(1ull << 32)));
    ok = B.CreateAnd(ok, B.CreateICmpULE(B.CreateAdd(mx, B.getInt64(size)), kparam_size_));
    base = kparams_;
  }
  likely_(ok, fast, slow);

  B.SetInsertPoint(slow);
  call_handler(in, gm);
  B.CreateBr(done);

  B.SetInsertPoint(fast);
  // Host addresses of the lanes (offsets into shared memory or the
  // parameter buffer, else the address itself).
  Value* host = base ? B.CreateAdd(B.CreateVectorSplat(32, B.CreatePtrToInt(base, i64)), offs) : offs;
  auto* evty = vty(esize * 8);
  llvm::Type* ety = B.getIntNTy(esize * 8);
  llvm::Align al(esize);
  bool sext = is_signed_ty(n.t);
  if (n.vec == 1) {
    // One address for every active lane: a scalar access.
    Value* olo = reduce(llvm::Intrinsic::vector_reduce_umin, B.CreateSelect(act, offs, splat(64, ~0ull)));
    Value* ohi = reduce(llvm::Intrinsic::vector_reduce_umax, B.CreateSelect(act, offs, splat(64, 0)));
    BasicBlock* uni = BasicBlock::Create(C, "muniform", F);
    BasicBlock* multi = BasicBlock::Create(C, "mmulti", F);
    B.CreateCondBr(B.CreateICmpEQ(olo, ohi), uni, multi);
    B.SetInsertPoint(uni);
    Value* p0 = base ? B.CreateGEP(i8, base, olo) : B.CreateIntToPtr(olo, ptr);
    if (write) {
      // The highest active lane's value is the one left in memory.
      Value* last = B.CreateSub(B.getInt32(31), B.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, gm, B.getTrue()));
      tag(B.CreateAlignedStore(B.CreateExtractElement(get(in.v[0], esize * 8), last), p0, al), false);
    } else {
      Value* v = tag(B.CreateAlignedLoad(ety, p0, al), false);
      set(in.v[0], B.CreateVectorSplat(32, v), act, sext);
    }
    B.CreateBr(done);
    B.SetInsertPoint(multi);
    if (esize == 4 || esize == 8) {
      // Consecutive lanes at consecutive addresses, all active: one vector access.
      Value* first = B.CreateExtractElement(offs, uint64_t{0});
      std::vector<llvm::Constant*> steps;
      for (uint64_t l = 0; l < 32; ++l) steps.push_back(B.getInt64(l * esize));
      Value* expect = B.CreateAdd(B.CreateVectorSplat(32, first), llvm::ConstantVector::get(steps));
      Value* same = B.CreateBitCast(B.CreateICmpEQ(offs, expect), i32);
      Value* contig = B.CreateAnd(B.CreateICmpEQ(gm, B.getInt32(~0u)), B.CreateICmpEQ(same, B.getInt32(~0u)));
      BasicBlock* vec = BasicBlock::Create(C, "mvec", F);
      BasicBlock* gat = BasicBlock::Create(C, "mlanes", F);
      B.CreateCondBr(contig, vec, gat);
      B.SetInsertPoint(vec);
      Value* pv = base ? B.CreateGEP(i8, base, first) : B.CreateIntToPtr(first, ptr);
      if (write) tag(B.CreateAlignedStore(get(in.v[0], esize * 8), pv, al), false);
      else set(in.v[0], tag(B.CreateAlignedLoad(evty, pv, al), false), act, sext);
      B.CreateBr(done);
      B.SetInsertPoint(gat);
    }
  }
  if (!write) {
    // Loads: inactive lanes read the lowest active lane's (checked)
    // address, so all 32 loads are safe and need no branches.
    Value* olo = reduce(llvm::Intrinsic::vector_reduce_umin, B.CreateSelect(act, host, splat(64, ~0ull)));
    Value* safe = B.CreateSelect(act, host, B.CreateVectorSplat(32, olo));
    Value* all = llvm::Constant::getAllOnesValue(llvm::FixedVectorType::get(i1, 32));
    auto* pvty = llvm::FixedVectorType::get(ptr, 32);
    for (uint32_t k = 0; k < n.vec; ++k) {
      Value* hk = k ? B.CreateAdd(safe, splat(64, k * esize)) : safe;
      Value* v = tag(B.CreateMaskedGather(evty, B.CreateIntToPtr(hk, pvty), al, all), false);
      set(in.v[k], v, act, sext);
    }
  } else {
    // Stores lane by lane in a helper, in lane order.
    llvm::Value* addrs = B.CreateAlloca(vty(64));
    llvm::Value* vals = B.CreateAlloca(vty(64));
    for (uint32_t k = 0; k < n.vec; ++k) {
      Value* hk = k ? B.CreateAdd(host, splat(64, k * esize)) : host;
      B.CreateStore(hk, addrs);
      B.CreateStore(get(in.v[k], 64), vals);
      B.CreateCall(helper_ty({ptr, ptr, i32, i32}, B.getVoidTy()), helper(reinterpret_cast<void*>(&rgpu_jit_scatter)),
                   {vals, addrs, gm, B.getInt32(esize)});
    }
  }
  B.CreateBr(done);
  B.SetInsertPoint(done);
}

}  // namespace rgpu::ptx::jit
