// The code generator of the compiled path: Gen turns one kernel's decoded
// instructions into one LLVM function that runs a warp. Its members are
// defined by job: gen.cpp (the function's frame: entry, fresh warps, exits,
// the scheduler's hub; register access), control.cpp (runs of instructions,
// branches, exits, barriers, warp-sync instructions, handler calls),
// memory.cpp (loads and stores), ops.cpp (arithmetic, comparisons,
// conversions). What it emits, and why, is described at the top of
// gen.cpp. Private to the compiled path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "analysis.h"
#include "runtime.h"

namespace rgpu::ptx::jit {

constexpr size_t kOffRegs = offsetof(WarpHead, regs);
constexpr size_t kOffCurPc = offsetof(WarpHead, cur_pc);
constexpr size_t kOffCurMask = offsetof(WarpHead, cur_mask);
constexpr size_t kOffWaitMin = offsetof(WarpHead, wait_min);
constexpr size_t kOffFresh = offsetof(WarpHead, fresh);
constexpr size_t kOffNregs = offsetof(WarpHead, nregs);
constexpr size_t kOffExecuted = offsetof(WarpHead, executed);
constexpr size_t kOffBudget = offsetof(WarpHead, budget);
constexpr size_t kOffShared = offsetof(WarpHead, shared);
constexpr size_t kOffKparams = offsetof(WarpHead, kparams);
constexpr size_t kOffSharedSize = offsetof(WarpHead, shared_size);
constexpr size_t kOffKparamSize = offsetof(WarpHead, kparam_size);
constexpr size_t kOffSpecials = offsetof(WarpHead, specials);
constexpr size_t kOffCtaid = offsetof(WarpHead, ctaid);
constexpr size_t kOffParked = offsetof(WarpHead, parked);
constexpr size_t kOffResume = offsetof(WarpHead, resume);
constexpr size_t kOffExcused = offsetof(WarpHead, excused);
constexpr size_t kOffWindows = offsetof(WarpHead, windows);

// Builds the function of one kernel into module `m`. One use: construct,
// build(), then read the accessors. Not thread-safe (an LLVMContext is
// not); `fn` and `opcodes` must outlive it.
class Gen {
 public:
  using BasicBlock = llvm::BasicBlock;
  using Value = llvm::Value;

  Gen(llvm::LLVMContext& c, llvm::Module& m, const Function& fn, const std::vector<std::string>& opcodes)
      : C(c), M(m), B(c), fn_(fn), opcodes_(opcodes) {
    i1 = B.getInt1Ty();
    i8 = B.getInt8Ty();
    i32 = B.getInt32Ty();
    i64 = B.getInt64Ty();
    ptr = B.getPtrTy();
  }

  // Whether slot s is folded into the code as a constant (its SlotInit
  // need not be written). Valid after build().
  bool is_const(uint32_t s) const { return an_.constant[s] && !an_.handler_reads[s]; }
  // WarpHead::windows entries the code uses. Valid after build().
  uint32_t num_windows() const { return num_windows_; }
  // Bit i: the code reads special register i from WarpHead::specials.
  uint32_t specials_used() const { return specials_used_; }

  // Empty on success, else why the kernel is not compiled (gen.cpp).
  std::string build(const std::string& name);

 private:
  llvm::LLVMContext& C;
  llvm::Module& M;
  llvm::IRBuilder<> B;
  const Function& fn_;
  const std::vector<std::string>& opcodes_;
  Analysis an_;
  llvm::Type *i1, *i8, *i32, *i64, *ptr;
  llvm::Function* F = nullptr;
  Value* W = nullptr;
  Value* nregs_ = nullptr;
  uint32_t line_ = 0;
  Value *regs_ = nullptr, *shared_ = nullptr, *kparams_ = nullptr, *shared_size_ = nullptr, *kparam_size_ = nullptr;
  Value* windows_ = nullptr;
  uint32_t num_windows_ = 0;
  uint32_t specials_used_ = 0;
  llvm::MDNode *hot_ = nullptr, *cold_ = nullptr;  // branch weights
  // mask_a: the running group's lanes. wait_a: the lowest pc at which
  // lanes wait (kNoPc: none), never below the running pc. Waiting lanes are
  // in the warp's pc array (the lowest of them: arr_a) or, for one group,
  // in the side group (side_m_a at side_pc_a), which a divergent branch
  // leaves without a call and its join takes back without one; it goes to
  // the pc array before the scheduler runs (flush_side).
  llvm::AllocaInst *mask_a = nullptr, *wait_a = nullptr, *budget_a = nullptr, *exec_a = nullptr;
  llvm::AllocaInst *arr_a = nullptr, *side_m_a = nullptr, *side_pc_a = nullptr;
  llvm::MDNode *regs_scope_ = nullptr, *mem_scope_ = nullptr;
  std::vector<llvm::AllocaInst*> slot_a_;   // per used, non-constant slot
  std::vector<BasicBlock*> bb_;
  BasicBlock* fresh_ = nullptr;
  BasicBlock* resume_ = nullptr;
  BasicBlock *dispatch_ = nullptr, *hub_spill_ = nullptr, *leave_ = nullptr, *leave_store_ = nullptr;
  llvm::PHINode* leave_code_ = nullptr;
  std::string error_;
  // Current group mask while emitting a run.
  Value* m_ = nullptr;

  llvm::VectorType* vty(unsigned bits) { return llvm::FixedVectorType::get(B.getIntNTy(bits), 32); }
  llvm::VectorType* fvty(bool dbl) { return llvm::FixedVectorType::get(dbl ? B.getDoubleTy() : B.getFloatTy(), 32); }
  Value* field(size_t off) { return B.CreateConstInBoundsGEP1_64(i8, W, off); }
  llvm::FunctionType* helper_ty(llvm::ArrayRef<llvm::Type*> args, llvm::Type* ret) {
    return llvm::FunctionType::get(ret, args, false);
  }
  Value* helper(void* fnp) { return B.CreateIntToPtr(B.getInt64(reinterpret_cast<uint64_t>(fnp)), ptr); }
  Value* inst_ptr(const Inst& in) { return B.CreateIntToPtr(B.getInt64(reinterpret_cast<uint64_t>(&in)), ptr); }
  Value* splat(unsigned bits, uint64_t v) { return llvm::ConstantInt::get(vty(bits), v); }

  // Registers (gen.cpp).
  Value* reg_addr(uint32_t s) { return B.CreateConstInBoundsGEP1_64(i64, regs_, static_cast<uint64_t>(s) * 32); }
  // Register accesses and device memory accesses never alias: scoped
  // metadata lets LLVM keep register values in vector registers across
  // loads and stores of device memory.
  template <class I>
  I* tag(I* inst, bool reg) {
    inst->setMetadata(llvm::LLVMContext::MD_alias_scope, reg ? regs_scope_ : mem_scope_);
    inst->setMetadata(llvm::LLVMContext::MD_noalias, reg ? mem_scope_ : regs_scope_);
    return inst;
  }
  Value* nreg_addr(uint32_t s) { return B.CreateConstInBoundsGEP1_64(i32, nregs_, static_cast<uint64_t>(s) * 32); }
  // Slot s read as <32 x i{bits}>.
  Value* get(uint32_t s, unsigned bits);
  Value* getf(uint32_t s, bool dbl) { return B.CreateBitCast(get(s, dbl ? 64 : 32), fvty(dbl)); }
  // Writes v (<32 x iN>) to the active lanes of slot s, zero- or sign-extended.
  void set(uint32_t s, Value* v, Value* active, bool sext = false);
  llvm::Type* slot_ty(uint32_t s) { return vty(an_.narrow[s] ? 32 : 64); }
  // Slot s in the warp's register file (the 32-bit one for narrow slots).
  Value* load_file(uint32_t s);
  void store_file(uint32_t s, Value* v);
  void setf(uint32_t s, Value* v, Value* active) {
    bool dbl = v->getType()->getScalarType()->isDoubleTy();
    set(s, B.CreateBitCast(v, vty(dbl ? 64 : 32)), active);
  }
  Value* lanes(Value* mask) { return B.CreateBitCast(mask, llvm::FixedVectorType::get(i1, 32)); }
  Value* bool_vec(uint32_t s, bool neg) {
    Value* v = B.CreateTrunc(get(s, 32), llvm::FixedVectorType::get(i1, 32));
    return neg ? B.CreateNot(v) : v;
  }

  // Branches whose first target is the common case, or the rare one: LLVM
  // lays the rare side out of line and keeps the hot path's values in
  // registers.
  void likely_(Value* c, BasicBlock* t, BasicBlock* f) { B.CreateCondBr(c, t, f, hot_); }
  void unlikely_(Value* c, BasicBlock* t, BasicBlock* f) { B.CreateCondBr(c, t, f, cold_); }

  // Control (control.cpp).
  // The side group's lanes, if any, wait in the pc array from here on.
  void flush_side();
  // Adds popcount(mask) to the thread-instruction count.
  void count(Value* mask);
  void leave_with(uint32_t code) {
    leave_code_->addIncoming(B.getInt32(code), B.GetInsertBlock());
    B.CreateBr(leave_);
  }
  void jump(size_t target) {
    B.CreateStore(m_, mask_a);
    B.CreateBr(bb_[target]);
  }
  void to_dispatch() { B.CreateBr(hub_spill_); }
  void store_field32(size_t off, Value* v) { B.CreateStore(v, field(off)); }
  // Calls the interpreter's handler for in with mask gm; the slots it names
  // go through the warp's register file.
  void call_handler(const Inst& in, Value* gm);
  void spill(const Inst& in);
  void reload(const Inst& in);
  // Emits instructions [begin, end): begin is a leader.
  void emit_run(size_t begin, size_t end);

  // Operations (ops.cpp).
  void emit_op(const Inst& in, const Native& n, Value* gm);
  void emit_cvt(const Inst& in, const Native& n, Value* act);

  // Memory (memory.cpp).
  // Where a shared access's base register puts a full warp's lanes, before
  // the immediate is added: computed from the register alone, ahead of the
  // access's branches, so that the accesses of a run with one base (a
  // tile's row at +0, +4, +64, ...) share one computation.
  struct SharedShape {
    Value* contig = nullptr;  // i1: lane l at lane 0's offset + l * esize
    Value* rows = nullptr;    // i1: each 8 lanes at consecutive offsets
    Value* bcast = nullptr;   // i1: each 8 lanes at one offset
    Value* start[4] = {};     // i32: the offsets of lanes 0, 8, 16 and 24
  };
  Value* reduce(llvm::Intrinsic::ID id, Value* v) { return B.CreateUnaryIntrinsic(id, v); }
  Value* check_global(Value* lo, Value* len, bool write, uint32_t win);
  void emit_mem_quick(const Inst& in, const Native& n, Value* gm, Value* act, Value* av, BasicBlock* done,
                      BasicBlock* slow, uint32_t win);
  SharedShape shared_shape(uint32_t base, uint32_t esize);
  void emit_shared_quick(const Inst& in, const Native& n, Value* gm, const SharedShape& sh, BasicBlock* done);
  Value* group_loads(llvm::Type* ety, Value* const hosts[4], bool uniform, llvm::Align al);
  void emit_mem(const Inst& in, const Native& n, Value* gm);
};

}  // namespace rgpu::ptx::jit
