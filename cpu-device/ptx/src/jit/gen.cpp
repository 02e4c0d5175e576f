// The compiled path's code generator (gen.h): one LLVM function per kernel,
// built from the decoded instructions. This file holds the function's
// frame (Gen::build: entry, a fresh warp's registers, the exits, the
// scheduler's hub) and register access; control.cpp, memory.cpp and
// ops.cpp emit the instructions, engine.cpp optimizes the function and
// keeps it in the Program's LLJIT.
//
// Shape of the code. A warp's 32 lanes are one vector: an instruction is a
// few AVX operations over <32 x i32> or <32 x i64>, and the running group's
// lane mask (an i32) selects the lanes it writes. Registers are locals of
// the function (allocas that LLVM's mem2reg makes SSA values); registers
// that only ever hold 32-bit values are 32-bit vectors (half the vector
// work). What keeps that affordable is per-thread liveness over the PTX
// control flow: a write merges with the inactive lanes' old values only for
// registers live where lanes can wait (a leader), so most registers have no
// phi at joins; only registers live after a bar.sync go to the warp's
// register file when the warp leaves there and come back on re-entry, and
// only those live at some leader go there on the way into the scheduler's
// hub (dispatch) and come back on the way out, so that no register value
// is live across the hub; an instruction run by an interpreter's handler
// gets its registers spilled to the file and its results reloaded. A fresh
// warp zeroes only the registers a lane can read before writing, and the
// sources of shuffles (read in lanes outside the group).
//
// Control flow follows the interpreter exactly: basic blocks start at the
// pcs where lanes can wait (branch targets, after branches and barriers,
// warp-sync instructions); a uniform branch is a jump, a divergent one
// records each lane's pc and asks the scheduler helper for the lowest
// group, and waiting lanes join when the running group reaches their pc. So
// warp-level instructions see the same active masks as in the interpreter.
// A barrier returns to the block runner, which runs the block's other warps
// and re-enters (straight at the barrier's pc when every lane waits there).
// Warp-sync instructions follow the interpreter's waiting rule in a helper;
// a shuffle of a full warp with constant lane/clamp operands is one vector
// shuffle.
//
// Compiled natively: integer and f32/f64 arithmetic, comparisons, selects,
// conversions, predicate logic, cvta to global and shared, loads and stores
// in the global, shared, const and kernel parameter spaces. A warp's access
// is checked once for its common shapes (an address known when compiling,
// a full warp at consecutive addresses, loads by groups of 8 lanes each
// consecutive or uniform), else its span with one call to the memory
// checker, as the interpreter does; anything the fast paths do not accept
// (misaligned, refused, out of bounds) runs the interpreter's own handler,
// which checks lane by lane and reports the same fault. Every other
// instruction (atomics, votes, match, redux, transcendental functions, half
// precision, generic addresses, ...) calls the interpreter's handler on the
// warp's register file, so its semantics, member masks included, are the
// interpreter's by construction. Kernels with calls, printf/assert or
// bar.red run interpreted.
#include <string>
#include <vector>

#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "gen.h"

namespace rgpu::ptx::jit {

std::string Gen::build(const std::string& name) {
  size_t n = fn_.code.size();
  an_ = analyze(fn_, opcodes_);
  auto* fty = llvm::FunctionType::get(i32, {ptr}, false);
  F = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, M);
  F->addFnAttr(llvm::Attribute::NoUnwind);
  W = F->getArg(0);
  {
    llvm::MDBuilder md(C);
    llvm::MDNode* domain = md.createAnonymousAliasScopeDomain("rgpu");
    regs_scope_ = llvm::MDNode::get(C, {md.createAnonymousAliasScope(domain, "regs")});
    mem_scope_ = llvm::MDNode::get(C, {md.createAnonymousAliasScope(domain, "memory")});
    hot_ = md.createBranchWeights(1 << 12, 1);
    cold_ = md.createBranchWeights(1, 1 << 12);
  }
  BasicBlock* entry = BasicBlock::Create(C, "entry", F);
  B.SetInsertPoint(entry);
  mask_a = B.CreateAlloca(i32, nullptr, "mask");
  wait_a = B.CreateAlloca(i32, nullptr, "wait");
  arr_a = B.CreateAlloca(i32, nullptr, "wait_lanes");
  side_m_a = B.CreateAlloca(i32, nullptr, "side_mask");
  side_pc_a = B.CreateAlloca(i32, nullptr, "side_pc");
  B.CreateStore(B.getInt32(0), side_m_a);
  B.CreateStore(B.getInt32(kNoPc), side_pc_a);
  budget_a = B.CreateAlloca(i64, nullptr, "budget");
  exec_a = B.CreateAlloca(i64, nullptr, "exec");
  regs_ = B.CreateLoad(ptr, field(kOffRegs), "regs");
  nregs_ = B.CreateLoad(ptr, field(kOffNregs), "nregs");
  shared_ = B.CreateLoad(ptr, field(kOffShared), "shared");
  kparams_ = B.CreateLoad(ptr, field(kOffKparams), "kparams");
  windows_ = B.CreateLoad(ptr, field(kOffWindows), "windows");
  shared_size_ = B.CreateLoad(i64, field(kOffSharedSize));
  kparam_size_ = B.CreateLoad(i64, field(kOffKparamSize));
  B.CreateStore(B.CreateLoad(i64, field(kOffBudget)), budget_a);
  B.CreateStore(B.getInt64(0), exec_a);
  // Registers are locals of the function (allocas that LLVM turns into SSA
  // values); only those live across a barrier go to the warp's register
  // file when the warp leaves there, and come back when it re-enters.
  slot_a_.assign(fn_.num_slots, nullptr);
  for (uint32_t s = 0; s < fn_.num_slots; ++s)
    if (an_.used[s] && !an_.constant[s]) slot_a_[s] = B.CreateAlloca(slot_ty(s), nullptr, "r" + std::to_string(s));
  dispatch_ = BasicBlock::Create(C, "dispatch", F);
  hub_spill_ = BasicBlock::Create(C, "dispatch_spill", F);
  BasicBlock* reentry = BasicBlock::Create(C, "reentry", F);
  {
    // A fresh warp: every lane at pc 0, nothing waiting; no need to ask
    // the scheduler.
    BasicBlock* fresh = BasicBlock::Create(C, "fresh", F);
    B.CreateCondBr(B.CreateICmpNE(B.CreateLoad(i32, field(kOffFresh)), B.getInt32(0)), fresh, reentry);
    B.SetInsertPoint(fresh);
    B.CreateStore(B.getInt32(0), field(kOffFresh));
    // Registers start at zero, but for those the runner initialized in the
    // 64-bit file.
    std::vector<bool> inited(fn_.num_slots, false);
    Value* specials = B.CreateLoad(ptr, field(kOffSpecials));
    for (const SlotInit& si : fn_.inits) {
      if (!slot_a_[si.slot]) continue;
      Value* v;
      if (si.kind == SlotInit::Kind::kImm) {
        v = splat(64, si.value);
      } else if (si.kind == SlotInit::Kind::kSpecial && (si.index == kCtaidX || si.index == kCtaidY ||
                                                          si.index == kCtaidZ)) {
        Value* c = B.CreateLoad(i32, field(kOffCtaid + 4 * (si.index - kCtaidX)));
        v = B.CreateVectorSplat(32, B.CreateZExt(c, i64));
      } else if (si.kind == SlotInit::Kind::kSpecial) {
        if (si.index < kLaneSpecials) specials_used_ |= 1u << si.index;
        Value* p = B.CreateConstInBoundsGEP1_64(i32, specials, uint64_t{si.index} * 32);
        v = B.CreateZExt(tag(B.CreateAlignedLoad(vty(32), p, llvm::Align(4)), true), vty(64));
      } else {
        v = tag(B.CreateAlignedLoad(vty(64), reg_addr(si.slot), llvm::Align(8)), true);
      }
      B.CreateStore(an_.narrow[si.slot] ? B.CreateTrunc(v, vty(32)) : v, slot_a_[si.slot]);
      inited[si.slot] = true;
    }
    for (uint32_t s = 0; s < fn_.num_slots; ++s)
      if (slot_a_[s] && !inited[s] && an_.zero[s]) B.CreateStore(llvm::Constant::getNullValue(slot_ty(s)), slot_a_[s]);
    B.CreateStore(B.CreateLoad(i32, field(kOffCurMask)), mask_a);
    B.CreateStore(B.getInt32(kNoPc), wait_a);
    B.CreateStore(B.getInt32(kNoPc), arr_a);
    fresh_ = B.GetInsertBlock();
  }

  // Exits (registers live in the warp's register file all along).
  leave_ = BasicBlock::Create(C, "leave", F);
  leave_store_ = BasicBlock::Create(C, "leave_barrier", F);
  B.SetInsertPoint(leave_);
  leave_code_ = B.CreatePHI(i32, 4, "code");
  Value* ex = B.CreateLoad(i64, field(kOffExecuted));
  B.CreateStore(B.CreateAdd(ex, B.CreateLoad(i64, exec_a)), field(kOffExecuted));
  B.CreateStore(B.CreateLoad(i64, budget_a), field(kOffBudget));
  B.CreateRet(leave_code_);
  B.SetInsertPoint(reentry);
  resume_ = BasicBlock::Create(C, "resume", F);
  B.CreateCondBr(B.CreateICmpNE(B.CreateLoad(i32, field(kOffResume)), B.getInt32(0)), resume_, dispatch_);
  B.SetInsertPoint(leave_store_);
  for (uint32_t s = 0; s < fn_.num_slots; ++s)
    if (slot_a_[s] && an_.saved[s]) store_file(s, B.CreateLoad(slot_ty(s), slot_a_[s]));
  leave_code_->addIncoming(B.getInt32(kRunBarrier), B.GetInsertBlock());
  B.CreateBr(leave_);

  // One block per leader.
  bb_.assign(n, nullptr);
  for (size_t pc = 0; pc < n; ++pc)
    if (an_.leader[pc]) bb_[pc] = BasicBlock::Create(C, "pc" + std::to_string(pc), F);
  B.SetInsertPoint(fresh_);
  B.CreateBr(bb_[0]);

  // The scheduler's hub carries no register values: the way in stores
  // those live at some leader to the warp's register file, and the way
  // out loads them back (the others start over at zero, being dead in
  // every lane). Register live ranges then stop at the hub instead of
  // spanning the whole function, which keeps the straight paths' values
  // in vector registers. One way out for every pc, not one per pc: the
  // code grows with the registers, not with registers times leaders.
  B.SetInsertPoint(hub_spill_);
  for (uint32_t s = 0; s < fn_.num_slots; ++s)
    if (slot_a_[s] && an_.waits[s]) store_file(s, B.CreateLoad(slot_ty(s), slot_a_[s]));
  B.CreateBr(dispatch_);
  B.SetInsertPoint(dispatch_);
  flush_side();
  Value* next = B.CreateCall(helper_ty({ptr}, i32), helper(reinterpret_cast<void*>(&rgpu_jit_schedule)), {W});
  B.CreateStore(B.CreateLoad(i32, field(kOffCurMask)), mask_a);
  B.CreateStore(B.CreateLoad(i32, field(kOffWaitMin)), wait_a);
  B.CreateStore(B.CreateLoad(i32, field(kOffWaitMin)), arr_a);
  BasicBlock* bad = BasicBlock::Create(C, "bad_pc", F);
  BasicBlock* reload = BasicBlock::Create(C, "reload", F);
  auto* sw = B.CreateSwitch(next, reload, 2);
  {
    // Every live register is in the file already.
    BasicBlock* parked = BasicBlock::Create(C, "all_at_barrier", F);
    sw->addCase(B.getInt32(kPcBarrier), parked);
    B.SetInsertPoint(parked);
    leave_with(kRunBarrier);
  }
  BasicBlock* done = BasicBlock::Create(C, "done", F);
  sw->addCase(B.getInt32(kPcDone), done);
  B.SetInsertPoint(reload);
  for (uint32_t s = 0; s < fn_.num_slots; ++s)
    if (slot_a_[s])
      B.CreateStore(an_.waits[s] ? load_file(s) : llvm::Constant::getNullValue(slot_ty(s)), slot_a_[s]);
  auto* lsw = B.CreateSwitch(next, bad, 8);
  for (size_t pc = 0; pc < n; ++pc)
    if (an_.leader[pc]) lsw->addCase(B.getInt32(static_cast<uint32_t>(pc)), bb_[pc]);
  // After a barrier every live lane left at one pc: straight there.
  B.SetInsertPoint(resume_);
  for (uint32_t s = 0; s < fn_.num_slots; ++s)
    if (slot_a_[s] && an_.saved[s]) B.CreateStore(load_file(s), slot_a_[s]);
  B.CreateStore(B.getInt32(0), field(kOffResume));
  B.CreateStore(B.CreateLoad(i32, field(kOffCurMask)), mask_a);
  B.CreateStore(B.getInt32(kNoPc), wait_a);
  B.CreateStore(B.getInt32(kNoPc), arr_a);
  auto* rsw = B.CreateSwitch(B.CreateLoad(i32, field(kOffCurPc)), dispatch_, 4);
  for (size_t pc = 0; pc + 1 < n; ++pc)
    if (fn_.code[pc].kind == Kind::kBar && an_.leader[pc + 1])
      rsw->addCase(B.getInt32(static_cast<uint32_t>(pc + 1)), bb_[pc + 1]);
  B.SetInsertPoint(done);
  leave_code_->addIncoming(B.getInt32(kRunDone), done);
  B.CreateBr(leave_);
  B.SetInsertPoint(bad);
  leave_code_->addIncoming(B.getInt32(kRunFault), bad);
  B.CreateBr(leave_);

  for (size_t pc = 0; pc < n; ++pc) {
    if (!an_.leader[pc]) continue;
    size_t end = pc + 1;
    while (end < n && !an_.leader[end]) ++end;
    emit_run(pc, end);
    if (!error_.empty()) return error_;
  }
  if (llvm::verifyFunction(*F, &llvm::errs())) return "internal: invalid code generated";
  return error_;
}

llvm::Value* Gen::get(uint32_t s, unsigned bits) {
  Value* v;
  unsigned w = 64;
  if (an_.constant[s]) {
    v = splat(64, an_.const_val[s]);
  } else {
    v = B.CreateLoad(slot_ty(s), slot_a_[s]);
    if (an_.narrow[s]) w = 32;
  }
  if (bits < w) return B.CreateTrunc(v, vty(bits));
  if (bits > w) return B.CreateZExt(v, vty(bits));
  return v;
}

// Writes v (<32 x iN>) to the active lanes of slot s, zero- or sign-extended.
void Gen::set(uint32_t s, Value* v, Value* active, bool sext) {
  if (an_.constant[s]) {
    error_ = "internal: write to a constant slot";
    return;
  }
  unsigned n = llvm::cast<llvm::VectorType>(v->getType())->getElementType()->getIntegerBitWidth();
  if (an_.narrow[s]) {
    if (n > 32 || sext) {
      error_ = "internal: wide value for a narrow register at line " + std::to_string(line_);
      return;
    }
    if (n < 32) v = B.CreateZExt(v, vty(32));
  } else if (n < 64) {
    v = sext ? B.CreateSExt(v, vty(64)) : B.CreateZExt(v, vty(64));
  }
  if (!an_.waits[s]) {
    B.CreateStore(v, slot_a_[s]);
    return;
  }
  Value* old = B.CreateLoad(slot_ty(s), slot_a_[s]);
  B.CreateStore(B.CreateSelect(active, v, old), slot_a_[s]);
}

// Slot s in the warp's register file (the 32-bit one for narrow slots).
llvm::Value* Gen::load_file(uint32_t s) {
  if (an_.narrow[s]) return tag(B.CreateAlignedLoad(vty(32), nreg_addr(s), llvm::Align(4)), true);
  return tag(B.CreateAlignedLoad(vty(64), reg_addr(s), llvm::Align(8)), true);
}

void Gen::store_file(uint32_t s, Value* v) {
  if (an_.narrow[s]) tag(B.CreateAlignedStore(v, nreg_addr(s), llvm::Align(4)), true);
  else tag(B.CreateAlignedStore(v, reg_addr(s), llvm::Align(8)), true);
}

}  // namespace rgpu::ptx::jit
