// Gen's control flow (gen.h): the runs of instructions between leaders,
// with the join of waiting lanes and the watchdog at their head; branches
// (uniform, divergent, the side group), exits, barriers, traps, warp-sync
// instructions, and calls of the interpreter's handlers with their
// registers spilled and reloaded.
#include <algorithm>
#include <vector>

#include "gen.h"

namespace rgpu::ptx::jit {

// The side group's lanes, if any, wait in the pc array from here on.
void Gen::flush_side() {
  Value* sm = B.CreateLoad(i32, side_m_a);
  BasicBlock* flush = BasicBlock::Create(C, "side_flush", F);
  BasicBlock* after = BasicBlock::Create(C, "side_flushed", F);
  B.CreateCondBr(B.CreateICmpNE(sm, B.getInt32(0)), flush, after);
  B.SetInsertPoint(flush);
  Value* spc = B.CreateLoad(i32, side_pc_a);
  B.CreateCall(helper_ty({ptr, i32, i32}, B.getVoidTy()), helper(reinterpret_cast<void*>(&rgpu_jit_wait)),
               {W, sm, spc});
  B.CreateStore(B.getInt32(0), side_m_a);
  B.CreateStore(B.CreateBinaryIntrinsic(llvm::Intrinsic::umin, B.CreateLoad(i32, arr_a), spc), arr_a);
  B.CreateBr(after);
  B.SetInsertPoint(after);
}

// Adds popcount(mask) to the thread-instruction count.
void Gen::count(Value* mask) {
  Value* pc = B.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, mask);
  B.CreateStore(B.CreateAdd(B.CreateLoad(i64, exec_a), B.CreateZExt(pc, i64)), exec_a);
}

// Calls the interpreter's handler for in with mask gm; the slots it names
// go through the warp's register file.
void Gen::call_handler(const Inst& in, Value* gm) {
  // The registers it names go to the 64-bit file first (destinations
  // too: it writes only the active lanes); it writes no narrow register,
  // by construction, so only wide destinations come back.
  spill(in);
  Value* r = B.CreateCall(helper_ty({ptr, ptr, i32}, i32), helper(reinterpret_cast<void*>(&rgpu_jit_op)),
                          {W, inst_ptr(in), gm});
  BasicBlock* fault = BasicBlock::Create(C, "fault", F);
  BasicBlock* ok = BasicBlock::Create(C, "ok", F);
  unlikely_(B.CreateICmpNE(r, B.getInt32(0)), fault, ok);
  B.SetInsertPoint(fault);
  leave_with(kRunFault);
  B.SetInsertPoint(ok);
  reload(in);
}

void Gen::spill(const Inst& in) {
  auto named = [&](uint32_t s) {
    for (uint32_t o : {in.a, in.b, in.c, in.e, in.v[0], in.v[1], in.v[2], in.v[3]})
      if (o == s) return true;
    return false;
  };
  for (uint32_t s : {in.a, in.b, in.c, in.e, in.v[0], in.v[1], in.v[2], in.v[3], in.d, in.d2}) {
    if (s == kNoSlot || (!slot_a_[s] && !an_.constant[s])) continue;
    // A destination's inactive lanes matter only where lanes wait with
    // it live or a shuffle may read them; elsewhere they are dead and
    // need not be read.
    if ((s == in.d || s == in.d2) && !named(s) && !an_.constant[s] && !an_.waits[s] && !an_.zero[s]) continue;
    tag(B.CreateAlignedStore(get(s, 64), reg_addr(s), llvm::Align(8)), true);
  }
}

void Gen::reload(const Inst& in) {
  for (uint32_t s : {in.v[0], in.v[1], in.v[2], in.v[3], in.d, in.d2})
    if (s != kNoSlot && slot_a_[s] && !an_.narrow[s])
      B.CreateStore(tag(B.CreateAlignedLoad(vty(64), reg_addr(s), llvm::Align(8)), true), slot_a_[s]);
}

// Emits instructions [begin, end): begin is a leader.
void Gen::emit_run(size_t begin, size_t end) {
  const auto& code = fn_.code;
  B.SetInsertPoint(bb_[begin]);
  {
    Value* m = B.CreateLoad(i32, mask_a);
    Value* w = B.CreateLoad(i32, wait_a);
    BasicBlock* merge = BasicBlock::Create(C, "merge", F);
    BasicBlock* body = BasicBlock::Create(C, "body", F);
    unlikely_(B.CreateICmpEQ(w, B.getInt32(static_cast<uint32_t>(begin))), merge, body);
    B.SetInsertPoint(merge);
    // Lanes wait here: the side group alone joins without a call.
    BasicBlock* lanes_here = BasicBlock::Create(C, "merge_lanes", F);
    BasicBlock* side_here = BasicBlock::Create(C, "merge_side", F);
    Value* arr = B.CreateLoad(i32, arr_a);
    B.CreateCondBr(B.CreateICmpEQ(arr, B.getInt32(static_cast<uint32_t>(begin))), lanes_here, side_here);
    B.SetInsertPoint(side_here);
    B.CreateStore(B.CreateOr(m, B.CreateLoad(i32, side_m_a)), mask_a);
    B.CreateStore(B.getInt32(0), side_m_a);
    B.CreateStore(arr, wait_a);
    B.CreateBr(body);
    B.SetInsertPoint(lanes_here);
    flush_side();
    store_field32(kOffCurPc, B.getInt32(static_cast<uint32_t>(begin)));
    store_field32(kOffCurMask, m);
    B.CreateCall(helper_ty({ptr}, B.getVoidTy()), helper(reinterpret_cast<void*>(&rgpu_jit_merge)), {W});
    B.CreateStore(B.CreateLoad(i32, field(kOffCurMask)), mask_a);
    B.CreateStore(B.CreateLoad(i32, field(kOffWaitMin)), wait_a);
    B.CreateStore(B.CreateLoad(i32, field(kOffWaitMin)), arr_a);
    B.CreateBr(body);
    B.SetInsertPoint(body);
    // Watchdog: every kWatchdogPeriod warp instructions, as the interpreter.
    Value* bud = B.CreateSub(B.CreateLoad(i64, budget_a), B.getInt64(static_cast<int64_t>(end - begin)));
    B.CreateStore(bud, budget_a);
    BasicBlock* wd = BasicBlock::Create(C, "watchdog", F);
    BasicBlock* go = BasicBlock::Create(C, "go", F);
    unlikely_(B.CreateICmpSLE(bud, B.getInt64(0)), wd, go);
    B.SetInsertPoint(wd);
    Value* r = B.CreateCall(helper_ty({ptr}, i32), helper(reinterpret_cast<void*>(&rgpu_jit_watchdog)), {W});
    B.CreateStore(B.getInt64(kWatchdogPeriod), budget_a);
    BasicBlock* wdf = BasicBlock::Create(C, "watchdog_fault", F);
    unlikely_(B.CreateICmpNE(r, B.getInt32(0)), wdf, go);
    B.SetInsertPoint(wdf);
    leave_with(kRunFault);
    B.SetInsertPoint(go);
    m_ = B.CreateLoad(i32, mask_a);
  }
  for (size_t pc = begin; pc < end; ++pc) {
    const Inst& in = code[pc];
    line_ = in.line;
    Value* gm = m_;
    if (in.guard != kNoSlot) {
      Value* g = B.CreateTrunc(get(in.guard, 32), llvm::FixedVectorType::get(i1, 32));
      Value* bits = B.CreateBitCast(g, i32);
      if (in.guard_neg) bits = B.CreateNot(bits);
      gm = B.CreateAnd(m_, bits);
    }
    count(gm);
    switch (in.kind) {
      case Kind::kNop: break;
      case Kind::kOp:
        emit_op(in, an_.natives[pc], gm);
        if (!error_.empty()) return;
        break;
      case Kind::kBra: {
        size_t t = in.target;
        BasicBlock* all = BasicBlock::Create(C, "taken", F);
        BasicBlock* notall = BasicBlock::Create(C, "nottaken", F);
        likely_(B.CreateICmpEQ(gm, m_), all, notall);
        // Every lane jumps: past waiting lanes, the lowest group runs first.
        B.SetInsertPoint(all);
        {
          BasicBlock* past = BasicBlock::Create(C, "past", F);
          BasicBlock* direct = BasicBlock::Create(C, "direct", F);
          Value* w = B.CreateLoad(i32, wait_a);
          unlikely_(B.CreateICmpUGT(B.getInt32(static_cast<uint32_t>(t)), w), past, direct);
          B.SetInsertPoint(past);
          store_field32(kOffCurPc, B.getInt32(static_cast<uint32_t>(t)));
          store_field32(kOffCurMask, m_);
          to_dispatch();
          B.SetInsertPoint(direct);
          jump(t);
        }
        B.SetInsertPoint(notall);
        {
          BasicBlock* none = BasicBlock::Create(C, "none", F);
          BasicBlock* split = BasicBlock::Create(C, "split", F);
          B.CreateCondBr(B.CreateICmpEQ(gm, B.getInt32(0)), none, split);
          B.SetInsertPoint(none);
          jump(pc + 1);
          B.SetInsertPoint(split);
          if (t != pc + 1) {
            // The lower of the two pcs runs next when no waiting lane is
            // lower still (what the scheduler would pick): the other
            // group waits, and no lane loop is needed for the running one.
            uint32_t lo = static_cast<uint32_t>(std::min<size_t>(t, pc + 1));
            uint32_t hi = static_cast<uint32_t>(std::max<size_t>(t, pc + 1));
            Value* grp = t < pc + 1 ? gm : B.CreateAnd(m_, B.CreateNot(gm));
            Value* oth = B.CreateXor(m_, grp);
            Value* w = B.CreateLoad(i32, wait_a);
            BasicBlock* quick = BasicBlock::Create(C, "split_quick", F);
            BasicBlock* sched = BasicBlock::Create(C, "split_sched", F);
            likely_(B.CreateICmpULT(B.getInt32(lo), w), quick, sched);
            B.SetInsertPoint(quick);
            {
              // The other group waits: in the side group when that is free.
              BasicBlock* side = BasicBlock::Create(C, "split_side", F);
              BasicBlock* lanes = BasicBlock::Create(C, "split_lanes", F);
              BasicBlock* waited = BasicBlock::Create(C, "split_waited", F);
              likely_(B.CreateICmpEQ(B.CreateLoad(i32, side_m_a), B.getInt32(0)), side, lanes);
              B.SetInsertPoint(side);
              B.CreateStore(oth, side_m_a);
              B.CreateStore(B.getInt32(hi), side_pc_a);
              B.CreateBr(waited);
              B.SetInsertPoint(lanes);
              B.CreateCall(helper_ty({ptr, i32, i32}, B.getVoidTy()), helper(reinterpret_cast<void*>(&rgpu_jit_wait)),
                           {W, oth, B.getInt32(hi)});
              B.CreateStore(B.CreateBinaryIntrinsic(llvm::Intrinsic::umin, B.CreateLoad(i32, arr_a), B.getInt32(hi)),
                            arr_a);
              B.CreateBr(waited);
              B.SetInsertPoint(waited);
            }
            B.CreateStore(B.CreateBinaryIntrinsic(llvm::Intrinsic::umin, w, B.getInt32(hi)), wait_a);
            m_ = grp;
            jump(lo);
            B.SetInsertPoint(sched);
          }
          store_field32(kOffCurMask, m_);
          B.CreateCall(helper_ty({ptr, i32, i32, i32}, B.getVoidTy()),
                       helper(reinterpret_cast<void*>(&rgpu_jit_diverge)),
                       {W, gm, B.getInt32(static_cast<uint32_t>(t)), B.getInt32(static_cast<uint32_t>(pc + 1))});
          to_dispatch();
        }
        return;  // pc + 1 is a leader
      }
      case Kind::kExit:
      case Kind::kRet: {
        BasicBlock* before = B.GetInsertBlock();
        BasicBlock* some = BasicBlock::Create(C, "exit", F);
        BasicBlock* cont = BasicBlock::Create(C, "cont", F);
        BasicBlock* empty = BasicBlock::Create(C, "empty", F);
        B.CreateCondBr(B.CreateICmpNE(gm, B.getInt32(0)), some, cont);
        B.SetInsertPoint(some);
        Value* over = B.CreateCall(helper_ty({ptr, i32}, i32), helper(reinterpret_cast<void*>(&rgpu_jit_exit)), {W, gm});
        Value* rest = B.CreateAnd(m_, B.CreateNot(gm));
        likely_(B.CreateICmpEQ(rest, B.getInt32(0)), empty, cont);
        B.SetInsertPoint(empty);
        store_field32(kOffCurMask, B.getInt32(0));
        {
          // The warp's last lanes: done, without asking the scheduler.
          BasicBlock* fin = BasicBlock::Create(C, "finished", F);
          BasicBlock* more = BasicBlock::Create(C, "others", F);
          likely_(B.CreateICmpNE(over, B.getInt32(0)), fin, more);
          B.SetInsertPoint(fin);
          leave_with(kRunDone);
          B.SetInsertPoint(more);
        }
        to_dispatch();
        B.SetInsertPoint(cont);
        llvm::PHINode* nm = B.CreatePHI(i32, 2);
        nm->addIncoming(m_, before);
        nm->addIncoming(rest, some);
        m_ = nm;
        if (pc + 1 >= code.size()) {
          B.CreateUnreachable();
          return;
        }
        break;
      }
      case Kind::kBar: {
        BasicBlock* some = BasicBlock::Create(C, "bar", F);
        BasicBlock* cont = BasicBlock::Create(C, "cont", F);
        B.CreateCondBr(B.CreateICmpNE(gm, B.getInt32(0)), some, cont);
        B.SetInsertPoint(some);
        store_field32(kOffCurMask, m_);
        Value* gone = B.CreateCall(helper_ty({ptr, i32, i32}, i32), helper(reinterpret_cast<void*>(&rgpu_jit_barrier)),
                                   {W, gm, B.getInt32(static_cast<uint32_t>(pc + 1))});
        B.CreateCondBr(B.CreateICmpNE(gone, B.getInt32(0)), leave_store_, hub_spill_);
        B.SetInsertPoint(cont);
        break;
      }
      case Kind::kTrap:
      case Kind::kUnsupported: {
        BasicBlock* some = BasicBlock::Create(C, "trap", F);
        BasicBlock* cont = BasicBlock::Create(C, "cont", F);
        B.CreateCondBr(B.CreateICmpNE(gm, B.getInt32(0)), some, cont);
        B.SetInsertPoint(some);
        B.CreateCall(helper_ty({ptr, ptr}, i32), helper(reinterpret_cast<void*>(&rgpu_jit_trap)), {W, inst_ptr(in)});
        leave_with(kRunFault);
        B.SetInsertPoint(cont);
        break;
      }
      case Kind::kCall:
      case Kind::kExtern:
        error_ = "internal: call";
        return;
      case Kind::kWarpSync: {
        // A full warp with nobody parked or excused runs a shuffle whose
        // lane and clamp operands are constants as one vector shuffle.
        BasicBlock* joined = nullptr;
        BasicBlock* fast_end = nullptr;
        if (opcodes_[pc].compare(0, 5, "shfl.") == 0 && in.a != kNoSlot && in.b != kNoSlot && in.c != kNoSlot &&
            in.d != kNoSlot && an_.fixed(in.b) && an_.fixed(in.c) && in.mode <= 3) {
          Value* full = B.CreateAnd(B.CreateICmpEQ(gm, B.getInt32(~0u)), B.CreateICmpEQ(m_, B.getInt32(~0u)));
          Value* calm = B.CreateICmpEQ(B.CreateOr(B.CreateLoad(i32, field(kOffParked)),
                                                  B.CreateLoad(i32, field(kOffExcused))),
                                       B.getInt32(0));
          BasicBlock* fast = BasicBlock::Create(C, "shfl_fast", F);
          BasicBlock* slow = BasicBlock::Create(C, "shfl_slow", F);
          joined = BasicBlock::Create(C, "shfl_done", F);
          likely_(B.CreateAnd(full, calm), fast, slow);
          B.SetInsertPoint(fast);
          // h_shfl's lane choice, lane by lane, when compiling.
          uint32_t bval = static_cast<uint32_t>(an_.fixed_val(in.b)) & 0x1f;
          uint32_t cval = static_cast<uint32_t>(an_.fixed_val(in.c));
          int seg = static_cast<int>((cval >> 8) & 0x1f);
          std::vector<int> sel(32);
          std::vector<llvm::Constant*> pv(32);
          for (int lane = 0; lane < 32; ++lane) {
            int max_lane = (lane & seg) | (static_cast<int>(cval & 0x1f) & ~seg);
            int min_lane = lane & seg;
            int j;
            bool pval;
            switch (in.mode) {
              case 0: j = lane - static_cast<int>(bval); pval = j >= max_lane; break;
              case 1: j = lane + static_cast<int>(bval); pval = j <= max_lane; break;
              case 2: j = lane ^ static_cast<int>(bval); pval = j <= max_lane; break;
              default: j = min_lane | (static_cast<int>(bval) & ~seg); pval = j <= max_lane; break;
            }
            if (!pval || j < 0 || j > 31) j = lane;
            sel[static_cast<size_t>(lane)] = j;
            pv[static_cast<size_t>(lane)] = B.getInt64(pval ? 1 : 0);
          }
          Value* a = get(in.a, 32);
          Value* all = lanes(B.getInt32(~0u));
          set(in.d, B.CreateShuffleVector(a, a, sel), all);
          if (in.d2 != kNoSlot) set(in.d2, llvm::ConstantVector::get(pv), all);
          fast_end = B.GetInsertBlock();
          B.CreateBr(joined);
          B.SetInsertPoint(slow);
        }
        // The interpreter's rule, in a helper on the warp's state: the
        // group waits until its member mask's lanes are here, or runs
        // the instruction with the lanes parked here joined.
        spill(in);
        for (uint32_t s : {in.guard, in.target})
          if (s != kNoSlot && (slot_a_[s] || an_.constant[s]))
            tag(B.CreateAlignedStore(get(s, 64), reg_addr(s), llvm::Align(8)), true);
        store_field32(kOffCurPc, B.getInt32(static_cast<uint32_t>(pc)));
        store_field32(kOffCurMask, m_);
        Value* r = B.CreateCall(helper_ty({ptr, ptr}, i32), helper(reinterpret_cast<void*>(&rgpu_jit_warpsync)),
                                {W, inst_ptr(in)});
        BasicBlock* parked = BasicBlock::Create(C, "parked", F);
        BasicBlock* fault = BasicBlock::Create(C, "fault", F);
        BasicBlock* go = BasicBlock::Create(C, "synced", F);
        auto* sw = B.CreateSwitch(r, fault, 2);
        sw->addCase(B.getInt32(0), go);
        sw->addCase(B.getInt32(1), parked);
        B.SetInsertPoint(parked);
        to_dispatch();
        B.SetInsertPoint(fault);
        leave_with(kRunFault);
        B.SetInsertPoint(go);
        reload(in);
        m_ = B.CreateLoad(i32, field(kOffCurMask));
        if (joined) {
          BasicBlock* slow_end = B.GetInsertBlock();
          B.CreateBr(joined);
          B.SetInsertPoint(joined);
          llvm::PHINode* mm = B.CreatePHI(i32, 2);
          mm->addIncoming(B.getInt32(~0u), fast_end);
          mm->addIncoming(m_, slow_end);
          m_ = mm;
        }
        break;
      }
    }
  }
  if (end < code.size()) jump(end);
  else B.CreateUnreachable();
}

}  // namespace rgpu::ptx::jit
