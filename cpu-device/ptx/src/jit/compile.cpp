// The compiler of the compiled path: one LLVM function per kernel, built from
// the decoded instructions, optimized for the host CPU and kept in the
// Program's LLJIT.
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
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wredundant-move"
#pragma GCC diagnostic ignored "-Wpessimizing-move"
#endif
#include <llvm/ExecutionEngine/JITEventListener.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/SectionMemoryManager.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include "../ast.h"
#include "jit.h"
#include "rgpu/common/log.h"
#include "runtime.h"

namespace rgpu::ptx::jit {

class Engine {
 public:
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;  // for the optimizer's cost model
  std::vector<std::unique_ptr<CompiledKernel>> kernels;
  unsigned next_id = 0;
};

namespace {

using llvm::BasicBlock;
using llvm::Value;

std::string take_error(llvm::Error e) {
  std::string s;
  llvm::handleAllErrors(std::move(e), [&](const llvm::ErrorInfoBase& info) { s = info.message(); });
  return s;
}

std::shared_ptr<Engine> make_engine(std::string* err) {
  static std::once_flag init;
  std::call_once(init, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) {
    *err = take_error(jtmb.takeError());
    return nullptr;
  }
  jtmb->setCodeGenOptLevel(llvm::CodeGenOpt::Less);
  auto tm = jtmb->createTargetMachine();
  if (!tm) {
    *err = take_error(tm.takeError());
    return nullptr;
  }
  llvm::orc::LLJITBuilder builder;
  builder.setJITTargetMachineBuilder(*jtmb);
  // RGPU_CPU_JIT_PERF=1: compiled kernels are visible to `perf record -k 1`
  // after `perf inject --jit` (a developer's profiling aid).
  if (const char* pv = getenv("RGPU_CPU_JIT_PERF"); pv && !strcmp(pv, "1")) {
    builder.setObjectLinkingLayerCreator([](llvm::orc::ExecutionSession& es, const llvm::Triple&) {
      auto layer = std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
          es, [] { return std::make_unique<llvm::SectionMemoryManager>(); });
      if (llvm::JITEventListener* l = llvm::JITEventListener::createPerfJITEventListener())
        layer->registerJITEventListener(*l);
      return layer;
    });
  }
  auto jit = builder.create();
  if (!jit) {
    *err = take_error(jit.takeError());
    return nullptr;
  }
  auto e = std::make_shared<Engine>();
  e->jit = std::move(*jit);
  e->tm = std::move(*tm);
  return e;
}

// Opcode text split like the decoder does: base, modifiers, types.
OpText split(const std::string& s) {
  OpText t;
  size_t p = s.find('.');
  t.base = s.substr(0, p);
  while (p != std::string::npos) {
    size_t q = s.find('.', p + 1);
    std::string part = s.substr(p + 1, q == std::string::npos ? std::string::npos : q - p - 1);
    if (parse_ty(part) != Ty::kNone) t.types.push_back(part);
    else t.mods.push_back(part);
    p = q;
  }
  return t;
}

bool is_int_ty(Ty t) {
  switch (t) {
    case Ty::kB16: case Ty::kB32: case Ty::kB64: case Ty::kU16: case Ty::kU32: case Ty::kU64:
    case Ty::kS16: case Ty::kS32: case Ty::kS64: return true;
    default: return false;
  }
}
bool is_signed_ty(Ty t) { return t == Ty::kS8 || t == Ty::kS16 || t == Ty::kS32 || t == Ty::kS64; }
bool is_float_ty(Ty t) { return t == Ty::kF32 || t == Ty::kF64; }

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

bool only_mods(const OpText& o, std::initializer_list<const char*> allowed) {
  for (const auto& m : o.mods) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || m == a;
    if (!ok) return false;
  }
  return true;
}

// Chooses a native form for an ordinary instruction, or kNone.
Native classify(const OpText& o, const Inst& in) {
  Native n;
  const std::string& b = o.base;
  Ty t = o.types.empty() ? Ty::kNone : parse_ty(o.types.back());
  n.t = t;
  bool plain = in.v[0] == kNoSlot && in.d2 == kNoSlot && (in.aux & 0xf0) == 0;
  auto bin = [&](Op op) {
    if (plain && in.d != kNoSlot && in.a != kNoSlot && in.b != kNoSlot) n.op = op;
    return n;
  };
  if (b == "ld" || b == "st" || b == "ldu") {
    bool st = b == "st";
    uint32_t sz = ty_size(t);
    if (o.types.size() != 1 || sz == 0 || sz > 8 || t == Ty::kPred) return n;
    if (!only_mods(o, {"global", "shared", "shared::cta", "param", "const", "nc", "ca", "cg", "cs", "lu", "cv",
                       "v2", "v4", "weak"}))
      return n;
    uint8_t vec = 0;
    for (int k = 0; k < 4; ++k) vec += in.v[k] != kNoSlot;
    if (vec == 0 || vec == 3 || in.guard == in.a) return n;
    if (in.space == Mem::kGlobal || in.space == Mem::kConst) {
      if (vec != 1 || (st && in.space == Mem::kConst)) return n;
    } else if (in.space == Mem::kShared) {
    } else if (in.space == Mem::kParamKernel) {
      if (st) return n;
    } else {
      return n;
    }
    if (in.a == kNoSlot) return n;
    n.vec = vec;
    n.op = st ? Op::kSt : Op::kLd;
    return n;
  }
  if (b == "cvta") {
    if (plain && in.d != kNoSlot && in.a != kNoSlot && (in.space == Mem::kGlobal || in.space == Mem::kShared) &&
        (in.size == 4 || in.size == 8))
      n.op = Op::kCvta;
    return n;
  }
  if (b == "mov") {
    if (in.mode == 0 && plain && in.a != kNoSlot && in.d != kNoSlot && t != Ty::kNone) n.op = Op::kMov;
    return n;
  }
  if (b == "selp") {
    if (plain && in.c != kNoSlot) return bin(Op::kSelp);
    return n;
  }
  if (t == Ty::kPred && (b == "and" || b == "or" || b == "xor" || b == "not")) {
    if (in.v[0] != kNoSlot || in.d2 != kNoSlot || in.d == kNoSlot || in.a == kNoSlot) return n;
    if (b != "not" && in.b == kNoSlot) return n;
    n.op = b == "and" ? Op::kPAnd : b == "or" ? Op::kPOr : b == "xor" ? Op::kPXor : Op::kPNot;
    return n;
  }
  if (b == "setp") {
    static const char* kNames[] = {"eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
    int cmp = -1;
    bool ualias = false;
    for (const auto& m : o.mods) {
      bool known = false;
      for (int i = 0; i < 14; ++i)
        if (m == kNames[i]) cmp = i, known = true;
      if (m == "lo") cmp = 2, ualias = true, known = true;
      if (m == "ls") cmp = 3, ualias = true, known = true;
      if (m == "hi") cmp = 4, ualias = true, known = true;
      if (m == "hs") cmp = 5, ualias = true, known = true;
      if (m == "and") n.bop = 1, known = true;
      if (m == "or") n.bop = 2, known = true;
      if (m == "xor") n.bop = 3, known = true;
      if (m == "ftz") known = true;
      if (!known) return n;
    }
    if (cmp < 0 || o.types.size() != 1 || in.v[0] != kNoSlot || (in.aux & 0x30)) return n;
    if (in.d == kNoSlot || in.a == kNoSlot || in.b == kNoSlot) return n;
    n.fcmp = is_float_ty(t);
    if (!n.fcmp && (!is_int_ty(t) || cmp > 5)) return n;
    if (!n.fcmp && ualias) n.t = ty_size(t) == 2 ? Ty::kU16 : ty_size(t) == 4 ? Ty::kU32 : Ty::kU64;
    n.cmp = static_cast<uint8_t>(cmp);
    n.op = Op::kSetp;
    return n;
  }
  if (b == "cvt") {
    if (o.types.size() != 2 || !plain || in.d == kNoSlot || in.a == kNoSlot) return n;
    Ty dt = parse_ty(o.types[0]), st = parse_ty(o.types[1]);
    n.t = dt;
    n.t2 = st;
    bool irnd = false;
    for (const auto& m : o.mods) {
      if (m == "rni") n.rnd = 0, irnd = true;
      else if (m == "rzi") n.rnd = 1, irnd = true;
      else if (m == "rmi") n.rnd = 2, irnd = true;
      else if (m == "rpi") n.rnd = 3, irnd = true;
      else if (m != "rn" && m != "ftz") return n;
    }
    bool df = is_float_ty(dt), sf = is_float_ty(st);
    bool di = is_int_ty(dt) || dt == Ty::kU8 || dt == Ty::kS8 || dt == Ty::kB8;
    bool si = is_int_ty(st) || st == Ty::kU8 || st == Ty::kS8 || st == Ty::kB8;
    if (di && si && !irnd) n.op = Op::kCvt;
    else if (df && si && !irnd) n.op = Op::kCvt;
    else if (df && sf && !irnd && dt != st) n.op = Op::kCvt;
    else if (sf && di && ty_size(dt) >= 4) {
      if (!irnd) n.rnd = 1;
      n.op = Op::kCvt;
    }
    return n;
  }
  if (is_float_ty(t) && o.types.size() == 1) {
    if (!only_mods(o, {"rn", "ftz", "approx", "full"})) return n;
    if (b == "add") return bin(Op::kFAdd);
    if (b == "sub") return bin(Op::kFSub);
    if (b == "mul") return bin(Op::kFMul);
    if (b == "div") return bin(Op::kFDiv);
    if ((b == "fma" || b == "mad") && in.c != kNoSlot) return bin(Op::kFFma);
    if ((b == "neg" || b == "abs") && plain && in.d != kNoSlot && in.a != kNoSlot)
      n.op = b == "neg" ? Op::kFNeg : Op::kFAbs;
    return n;
  }
  if (!is_int_ty(t) || o.types.size() != 1) return n;
  if (b == "add" || b == "sub") {
    if (!o.mods.empty()) return n;
    return bin(b == "add" ? Op::kAdd : Op::kSub);
  }
  if (b == "mul" || b == "mad") {
    bool mad = b == "mad";
    if (mad && in.c == kNoSlot) return n;
    if (only_mods(o, {"lo"})) return bin(mad ? Op::kMad : Op::kMul);
    if (only_mods(o, {"wide"}) && (t == Ty::kS32 || t == Ty::kU32 || t == Ty::kS16 || t == Ty::kU16))
      return bin(mad ? Op::kMadWide : Op::kMulWide);
    return n;
  }
  if (!o.mods.empty()) return n;
  if (b == "and") return bin(Op::kAnd);
  if (b == "or") return bin(Op::kOr);
  if (b == "xor") return bin(Op::kXor);
  if (b == "shl") return bin(Op::kShl);
  if (b == "shr") return bin(Op::kShr);
  if (b == "min") return bin(Op::kMin);
  if (b == "max") return bin(Op::kMax);
  if ((b == "not" || b == "neg") && plain && in.d != kNoSlot && in.a != kNoSlot) n.op = b == "not" ? Op::kNot : Op::kNeg;
  return n;
}

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

class Gen {
 public:
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
  bool is_const(uint32_t s) const { return const_[s] && !handler_reads_[s]; }
  // WarpHead::windows entries the code uses. Valid after build().
  uint32_t num_windows() const { return num_windows_; }
  // Bit i: the code reads special register i from WarpHead::specials.
  uint32_t specials_used() const { return specials_used_; }

  // Empty on success, else why the kernel is not compiled.
  std::string build(const std::string& name) {
    const auto& code = fn_.code;
    size_t n = code.size();
    natives_.resize(n);
    for (size_t pc = 0; pc + 1 < n; ++pc)
      if (code[pc].kind == Kind::kOp) natives_[pc] = classify(split(opcodes_[pc]), code[pc]);
    analyze();
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
      if (used_[s] && !const_[s]) slot_a_[s] = B.CreateAlloca(slot_ty(s), nullptr, "r" + std::to_string(s));
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
        B.CreateStore(narrow_[si.slot] ? B.CreateTrunc(v, vty(32)) : v, slot_a_[si.slot]);
        inited[si.slot] = true;
      }
      for (uint32_t s = 0; s < fn_.num_slots; ++s)
        if (slot_a_[s] && !inited[s] && zero_[s]) B.CreateStore(llvm::Constant::getNullValue(slot_ty(s)), slot_a_[s]);
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
      if (slot_a_[s] && saved_[s]) store_file(s, B.CreateLoad(slot_ty(s), slot_a_[s]));
    leave_code_->addIncoming(B.getInt32(kRunBarrier), B.GetInsertBlock());
    B.CreateBr(leave_);

    // One block per leader.
    bb_.assign(n, nullptr);
    for (size_t pc = 0; pc < n; ++pc)
      if (leader_[pc]) bb_[pc] = BasicBlock::Create(C, "pc" + std::to_string(pc), F);
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
      if (slot_a_[s] && waits_[s]) store_file(s, B.CreateLoad(slot_ty(s), slot_a_[s]));
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
        B.CreateStore(waits_[s] ? load_file(s) : llvm::Constant::getNullValue(slot_ty(s)), slot_a_[s]);
    auto* lsw = B.CreateSwitch(next, bad, 8);
    for (size_t pc = 0; pc < n; ++pc)
      if (leader_[pc]) lsw->addCase(B.getInt32(static_cast<uint32_t>(pc)), bb_[pc]);
    // After a barrier every live lane left at one pc: straight there.
    B.SetInsertPoint(resume_);
    for (uint32_t s = 0; s < fn_.num_slots; ++s)
      if (slot_a_[s] && saved_[s]) B.CreateStore(load_file(s), slot_a_[s]);
    B.CreateStore(B.getInt32(0), field(kOffResume));
    B.CreateStore(B.CreateLoad(i32, field(kOffCurMask)), mask_a);
    B.CreateStore(B.getInt32(kNoPc), wait_a);
    B.CreateStore(B.getInt32(kNoPc), arr_a);
    auto* rsw = B.CreateSwitch(B.CreateLoad(i32, field(kOffCurPc)), dispatch_, 4);
    for (size_t pc = 0; pc + 1 < n; ++pc)
      if (fn_.code[pc].kind == Kind::kBar && leader_[pc + 1])
        rsw->addCase(B.getInt32(static_cast<uint32_t>(pc + 1)), bb_[pc + 1]);
    B.SetInsertPoint(done);
    leave_code_->addIncoming(B.getInt32(kRunDone), done);
    B.CreateBr(leave_);
    B.SetInsertPoint(bad);
    leave_code_->addIncoming(B.getInt32(kRunFault), bad);
    B.CreateBr(leave_);

    for (size_t pc = 0; pc < n; ++pc) {
      if (!leader_[pc]) continue;
      size_t end = pc + 1;
      while (end < n && !leader_[end]) ++end;
      emit_run(pc, end);
      if (!error_.empty()) return error_;
    }
    if (llvm::verifyFunction(*F, &llvm::errs())) return "internal: invalid code generated";
    return error_;
  }

 private:
  llvm::LLVMContext& C;
  llvm::Module& M;
  llvm::IRBuilder<> B;
  const Function& fn_;
  const std::vector<std::string>& opcodes_;
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
  std::vector<bool> used_, const_, leader_, narrow_;
  std::vector<bool> saved_;                 // live across a barrier
  std::vector<uint8_t> known_;              // 1: every write moves known_val_ in
  std::vector<uint64_t> known_val_;
  // Live where lanes can wait (at some leader): a write by one group must
  // keep the other lanes' values. Slots that are not need no merge.
  std::vector<bool> waits_;
  std::vector<bool> zero_;  // start at zero in a fresh warp (see liveness())
  std::vector<llvm::AllocaInst*> slot_a_;   // per used, non-constant slot
  std::vector<bool> handler_reads_;  // operands of instructions run by the interpreter's handlers
  std::vector<uint64_t> const_val_;
  std::vector<Native> natives_;
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

  // Slot s read as <32 x i{bits}>.
  Value* nreg_addr(uint32_t s) { return B.CreateConstInBoundsGEP1_64(i32, nregs_, static_cast<uint64_t>(s) * 32); }
  Value* get(uint32_t s, unsigned bits) {
    Value* v;
    unsigned w = 64;
    if (const_[s]) {
      v = splat(64, const_val_[s]);
    } else {
      v = B.CreateLoad(slot_ty(s), slot_a_[s]);
      if (narrow_[s]) w = 32;
    }
    if (bits < w) return B.CreateTrunc(v, vty(bits));
    if (bits > w) return B.CreateZExt(v, vty(bits));
    return v;
  }
  Value* getf(uint32_t s, bool dbl) { return B.CreateBitCast(get(s, dbl ? 64 : 32), fvty(dbl)); }
  // Writes v (<32 x iN>) to the active lanes of slot s, zero- or sign-extended.
  void set(uint32_t s, Value* v, Value* active, bool sext = false) {
    if (const_[s]) {
      error_ = "internal: write to a constant slot";
      return;
    }
    unsigned n = llvm::cast<llvm::VectorType>(v->getType())->getElementType()->getIntegerBitWidth();
    if (narrow_[s]) {
      if (n > 32 || sext) {
        error_ = "internal: wide value for a narrow register at line " + std::to_string(line_);
        return;
      }
      if (n < 32) v = B.CreateZExt(v, vty(32));
    } else if (n < 64) {
      v = sext ? B.CreateSExt(v, vty(64)) : B.CreateZExt(v, vty(64));
    }
    if (!waits_[s]) {
      B.CreateStore(v, slot_a_[s]);
      return;
    }
    Value* old = B.CreateLoad(slot_ty(s), slot_a_[s]);
    B.CreateStore(B.CreateSelect(active, v, old), slot_a_[s]);
  }
  llvm::Type* slot_ty(uint32_t s) { return vty(narrow_[s] ? 32 : 64); }
  // Slot s in the warp's register file (the 32-bit one for narrow slots).
  Value* load_file(uint32_t s) {
    if (narrow_[s]) return tag(B.CreateAlignedLoad(vty(32), nreg_addr(s), llvm::Align(4)), true);
    return tag(B.CreateAlignedLoad(vty(64), reg_addr(s), llvm::Align(8)), true);
  }
  void store_file(uint32_t s, Value* v) {
    if (narrow_[s]) tag(B.CreateAlignedStore(v, nreg_addr(s), llvm::Align(4)), true);
    else tag(B.CreateAlignedStore(v, reg_addr(s), llvm::Align(8)), true);
  }
  void setf(uint32_t s, Value* v, Value* active) {
    bool dbl = v->getType()->getScalarType()->isDoubleTy();
    set(s, B.CreateBitCast(v, vty(dbl ? 64 : 32)), active);
  }
  Value* lanes(Value* mask) { return B.CreateBitCast(mask, llvm::FixedVectorType::get(i1, 32)); }

  // Leaders, slot use, and slots that are constants (immediates never written).
  void analyze() {
    const auto& code = fn_.code;
    size_t n = code.size();
    leader_.assign(n, false);
    leader_[0] = true;
    for (size_t pc = 0; pc < n; ++pc) {
      const Inst& in = code[pc];
      if (in.kind == Kind::kBra) {
        if (in.target < n) leader_[in.target] = true;
        if (pc + 1 < n) leader_[pc + 1] = true;
      }
      if (in.kind == Kind::kBar && pc + 1 < n) leader_[pc + 1] = true;
      // Lanes park at a warp-sync instruction, and those of the group the
      // guard leaves out go on after it.
      if (in.kind == Kind::kWarpSync) {
        leader_[pc] = true;
        if (pc + 1 < n) leader_[pc + 1] = true;
      }
    }
    uint32_t ns = fn_.num_slots;
    used_.assign(ns, false);
    const_.assign(ns, false);
    const_val_.assign(ns, 0);
    std::vector<bool> written(ns, false);
    handler_reads_.assign(ns, false);
    auto fields = [](const Inst& in, auto&& f) {
      for (uint32_t s : {in.guard, in.d, in.d2, in.a, in.b, in.c, in.e, in.v[0], in.v[1], in.v[2], in.v[3]})
        if (s != kNoSlot) f(s);
    };
    for (size_t pc = 0; pc < n; ++pc) {
      const Inst& in = code[pc];
      fields(in, [&](uint32_t s) { used_[s] = true; });
      if (in.kind == Kind::kWarpSync) {
        used_[in.target] = true;
        handler_reads_[in.target] = true;
        fields(in, [&](uint32_t s) { handler_reads_[s] = true; });
        for (uint32_t s : {in.d, in.d2, in.v[0], in.v[1], in.v[2], in.v[3]})
          if (s != kNoSlot) written[s] = true;
      }
      if (in.kind != Kind::kOp) continue;
      const Native& nt = natives_[pc];
      if (nt.op == Op::kNone) {
        fields(in, [&](uint32_t s) { handler_reads_[s] = true; });
        for (uint32_t s : {in.d, in.d2, in.v[0], in.v[1], in.v[2], in.v[3]})
          if (s != kNoSlot) written[s] = true;
      } else if (nt.op == Op::kSt) {
      } else if (nt.op == Op::kLd) {
        for (int k = 0; k < nt.vec; ++k) written[in.v[k]] = true;
      } else {
        written[in.d] = true;
        if (in.d2 != kNoSlot) written[in.d2] = true;
      }
    }
    for (const SlotInit& si : fn_.inits) {
      used_[si.slot] = true;
      if (si.kind == SlotInit::Kind::kImm && !written[si.slot]) {
        const_[si.slot] = true;
        const_val_[si.slot] = si.value;
      }
    }
    // Narrow slots: every value written to them fits 32 bits (zero-extended)
    // and no handler writes them. They live in the 32-bit register file,
    // which halves the vector work of 32-bit code.
    narrow_.assign(ns, true);
    for (size_t pc = 0; pc < n; ++pc) {
      const Inst& in = code[pc];
      if (in.kind == Kind::kOp && natives_[pc].op == Op::kNone)
        for (uint32_t s : {in.d, in.d2, in.v[0], in.v[1], in.v[2], in.v[3]})
          if (s != kNoSlot) narrow_[s] = false;
      if (in.kind == Kind::kBar && in.d != kNoSlot) narrow_[in.d] = false;
      if (in.kind == Kind::kWarpSync)
        for (uint32_t s : {in.d, in.d2, in.v[0], in.v[1], in.v[2], in.v[3]})
          if (s != kNoSlot) narrow_[s] = false;
    }
    for (const SlotInit& si : fn_.inits) {
      bool small = (si.kind == SlotInit::Kind::kImm && si.value <= 0xffffffffull) ||
                   si.kind == SlotInit::Kind::kSpecial || si.kind == SlotInit::Kind::kLocalAddr;
      if (!small) narrow_[si.slot] = false;
    }
    auto fits = [&](uint32_t s) { return const_[s] ? const_val_[s] <= 0xffffffffull : bool(narrow_[s]); };
    for (bool changed = true; changed;) {
      changed = false;
      auto widen = [&](uint32_t s) {
        if (narrow_[s]) narrow_[s] = false, changed = true;
      };
      for (size_t pc = 0; pc < n; ++pc) {
        const Inst& in = code[pc];
        const Native& nt = natives_[pc];
        if (in.kind != Kind::kOp || nt.op == Op::kNone || nt.op == Op::kSt) continue;
        switch (nt.op) {
          case Op::kMov: if (!fits(in.a)) widen(in.d); break;
          case Op::kSelp: if (!fits(in.a) || !fits(in.b)) widen(in.d); break;
          case Op::kLd:
            if (is_signed_ty(nt.t) || ty_size(nt.t) > 4)
              for (int k = 0; k < nt.vec; ++k) widen(in.v[k]);
            break;
          case Op::kSetp: case Op::kPAnd: case Op::kPOr: case Op::kPXor: case Op::kPNot: break;
          case Op::kMulWide: case Op::kMadWide: if (ty_size(nt.t) > 2) widen(in.d); break;
          case Op::kCvta: if (in.size > 4) widen(in.d); break;
          default: if (ty_size(nt.t) > 4) widen(in.d); break;
        }
      }
    }
    for (uint32_t s = 0; s < ns; ++s)
      if (const_[s]) narrow_[s] = false;
    // Slots every write of which moves the same immediate into them: a
    // lane that reads one (having written it first, as PTX requires) reads
    // that value. Shuffles use it for their lane and clamp operands.
    known_.assign(ns, 0);
    known_val_.assign(ns, 0);
    for (size_t pc = 0; pc < n; ++pc) {
      const Inst& in = code[pc];
      auto wr = [&](uint32_t s, bool ok, uint64_t v) {
        if (s == kNoSlot) return;
        if (!ok) known_[s] = 2;
        else if (known_[s] == 0) known_[s] = 1, known_val_[s] = v;
        else if (known_[s] == 1 && known_val_[s] != v) known_[s] = 2;
      };
      bool mov = in.kind == Kind::kOp && natives_[pc].op == Op::kMov && const_[in.a];
      uint64_t v = mov ? const_val_[in.a] : 0;
      if (mov) v &= ty_size(natives_[pc].t) >= 8 ? ~0ull : (1ull << (8 * ty_size(natives_[pc].t))) - 1;
      if (mov) {
        wr(in.d, true, v);
      } else {
        for (uint32_t s : {in.d, in.d2, in.v[0], in.v[1], in.v[2], in.v[3]}) wr(s, false, 0);
      }
    }
    for (const SlotInit& si : fn_.inits) known_[si.slot] = 2;
    liveness();
  }

  // Whether the interpreter's handler for the instruction at pc writes its
  // d (and d2) in every active lane without reading them: the families
  // known to, by opcode; others count as reading them.
  bool fixed(uint32_t s) const { return const_[s] || known_[s] == 1; }
  uint64_t fixed_val(uint32_t s) const { return const_[s] ? const_val_[s] : known_val_[s]; }

  bool handler_defines(size_t pc) const {
    static const char* kFull[] = {"sin", "cos", "ex2", "lg2", "sqrt", "rsqrt", "rcp", "tanh", "div", "rem", "abs",
                                  "neg", "min", "max", "fma", "mad", "mul", "add", "sub", "cvt", "cvta", "selp",
                                  "set", "setp", "popc", "clz", "brev", "bfe", "bfi", "bfind", "testp", "copysign",
                                  "and", "or", "xor", "not", "shl", "shr", "cnot", "mul24", "mad24", "sad", "prmt",
                                  "shf", "ld", "ldu", "atom", "shfl", "vote", "activemask", "mov"};
    const Inst& in = fn_.code[pc];
    if (pc >= opcodes_.size()) return false;
    if (in.d == kNoSlot || (in.aux & 0xf0) || in.d == in.a || in.d == in.b || in.d == in.c || in.d == in.e) return false;
    for (uint32_t v : in.v)
      if (v != kNoSlot && (v == in.d || v == in.d2)) return false;
    std::string base = opcodes_[pc].substr(0, opcodes_[pc].find('.'));
    for (const char* k : kFull)
      if (base == k) return true;
    return false;
  }

  // saved_: the slots live where warps resume after a barrier (every live
  // lane of a warp that leaves waits right after a bar.sync). Per-thread
  // liveness over the PTX control flow, run by run; conservative where it
  // does not know an instruction (every named slot read, no write kills).
  void liveness() {
    const auto& code = fn_.code;
    size_t n = code.size();
    uint32_t ns = fn_.num_slots;
    size_t words = (ns + 63) / 64;
    std::vector<size_t> start;                 // run index -> first pc
    std::vector<uint32_t> run_of(n, 0);
    for (size_t pc = 0; pc < n; ++pc) {
      if (leader_[pc]) start.push_back(pc);
      run_of[pc] = static_cast<uint32_t>(start.size() - 1);
    }
    size_t nr = start.size();
    std::vector<uint64_t> use(nr * words, 0), def(nr * words, 0), in(nr * words, 0);
    std::vector<std::vector<uint32_t>> succ(nr);
    auto bit = [&](std::vector<uint64_t>& v, size_t r, uint32_t s) -> uint64_t& { return v[r * words + s / 64]; };
    for (size_t r = 0; r < nr; ++r) {
      size_t end = r + 1 < nr ? start[r + 1] : n;
      // Backwards through the run: use = read before any killing write.
      for (size_t pc = end; pc-- > start[r];) {
        const Inst& ins = code[pc];
        auto read = [&](uint32_t s) {
          if (s != kNoSlot) bit(use, r, s) |= 1ull << (s % 64);
        };
        auto kill = [&](uint32_t s) {
          if (s == kNoSlot || ins.guard != kNoSlot) return;
          bit(use, r, s) &= ~(1ull << (s % 64));
          bit(def, r, s) |= 1ull << (s % 64);
        };
        const Native& nt = ins.kind == Kind::kOp ? natives_[pc] : Native{};
        const bool native = ins.kind == Kind::kOp && nt.op != Op::kNone;
        // Run by a handler that writes d (and d2) in every active lane.
        const bool defines = !native && (ins.kind == Kind::kOp || ins.kind == Kind::kWarpSync) && handler_defines(pc);
        if (native && nt.op == Op::kLd) {
          for (int k = 0; k < nt.vec; ++k) kill(ins.v[k]);
        } else if ((native && nt.op != Op::kSt) || defines) {
          kill(ins.d);
          kill(ins.d2);
        }
        if (native && nt.op == Op::kLd) {
          read(ins.a);
        } else if (native && nt.op != Op::kSt) {
          for (uint32_t s : {ins.a, ins.b, ins.c, ins.e, ins.v[0], ins.v[1], ins.v[2], ins.v[3]}) read(s);
        } else if (defines) {
          for (uint32_t s : {ins.a, ins.b, ins.c, ins.e, ins.v[0], ins.v[1], ins.v[2], ins.v[3]}) read(s);
        } else {
          for (uint32_t s : {ins.d, ins.d2, ins.a, ins.b, ins.c, ins.e, ins.v[0], ins.v[1], ins.v[2], ins.v[3]}) read(s);
        }
        read(ins.guard);
        if (ins.kind == Kind::kWarpSync) read(ins.target);
      }
      const Inst& last = code[end - 1];
      if (last.kind == Kind::kBra && last.target < n) succ[r].push_back(run_of[last.target]);
      bool stops = (last.kind == Kind::kBra || last.kind == Kind::kExit || last.kind == Kind::kRet) && last.guard == kNoSlot;
      if (!stops && end < n) succ[r].push_back(run_of[end]);
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = nr; r-- > 0;)
        for (size_t w = 0; w < words; ++w) {
          uint64_t out = 0;
          for (uint32_t q : succ[r]) out |= in[q * words + w];
          uint64_t v = use[r * words + w] | (out & ~def[r * words + w]);
          if (v != in[r * words + w]) in[r * words + w] = v, changed = true;
        }
    }
    waits_.assign(ns, false);
    for (size_t r = 0; r < nr; ++r)
      for (uint32_t s = 0; s < ns; ++s)
        if (in[r * words + s / 64] >> (s % 64) & 1) waits_[s] = true;
    // Registers a fresh warp must start at zero, as the interpreter's do:
    // those a lane can read before writing (live at pc 0) and the sources
    // of shuffles, which read lanes outside the group (the interpreter's
    // handler copies all 32; such a lane may never have written it).
    // Every other register is written by each lane before that lane
    // reads it.
    zero_.assign(ns, false);
    for (uint32_t s = 0; s < ns; ++s)
      if (in[s / 64] >> (s % 64) & 1) zero_[s] = true;
    for (size_t pc = 0; pc < n; ++pc)
      if (pc < opcodes_.size() && opcodes_[pc].compare(0, 5, "shfl.") == 0 && code[pc].a != kNoSlot)
        zero_[code[pc].a] = true;
    saved_.assign(ns, false);
    for (size_t pc = 0; pc + 1 < n; ++pc)
      if (code[pc].kind == Kind::kBar) {
        size_t r = run_of[pc + 1];
        for (uint32_t s = 0; s < ns; ++s)
          if (in[r * words + s / 64] >> (s % 64) & 1) saved_[s] = true;
      }
  }

  // Branches whose first target is the common case, or the rare one: LLVM
  // lays the rare side out of line and keeps the hot path's values in
  // registers.
  void likely_(Value* c, BasicBlock* t, BasicBlock* f) { B.CreateCondBr(c, t, f, hot_); }
  void unlikely_(Value* c, BasicBlock* t, BasicBlock* f) { B.CreateCondBr(c, t, f, cold_); }

  // The side group's lanes, if any, wait in the pc array from here on.
  void flush_side() {
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

  // Whether the global access [lo, lo + len) is allowed. Inside the extent
  // the instruction's window holds, with the memory's release counter as it
  // was, it is, without a call; else the checker answers (rgpu_jit_check)
  // and refills the window. The insert point ends at the join.
  Value* check_global(Value* lo, Value* len, bool write, uint32_t win) {
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

  // Adds popcount(mask) to the thread-instruction count.
  void count(Value* mask) {
    Value* pc = B.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, mask);
    B.CreateStore(B.CreateAdd(B.CreateLoad(i64, exec_a), B.CreateZExt(pc, i64)), exec_a);
  }
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
  void call_handler(const Inst& in, Value* gm) {
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
  void spill(const Inst& in) {
    auto named = [&](uint32_t s) {
      for (uint32_t o : {in.a, in.b, in.c, in.e, in.v[0], in.v[1], in.v[2], in.v[3]})
        if (o == s) return true;
      return false;
    };
    for (uint32_t s : {in.a, in.b, in.c, in.e, in.v[0], in.v[1], in.v[2], in.v[3], in.d, in.d2}) {
      if (s == kNoSlot || (!slot_a_[s] && !const_[s])) continue;
      // A destination's inactive lanes matter only where lanes wait with
      // it live or a shuffle may read them; elsewhere they are dead and
      // need not be read.
      if ((s == in.d || s == in.d2) && !named(s) && !const_[s] && !waits_[s] && !zero_[s]) continue;
      tag(B.CreateAlignedStore(get(s, 64), reg_addr(s), llvm::Align(8)), true);
    }
  }
  void reload(const Inst& in) {
    for (uint32_t s : {in.v[0], in.v[1], in.v[2], in.v[3], in.d, in.d2})
      if (s != kNoSlot && slot_a_[s] && !narrow_[s])
        B.CreateStore(tag(B.CreateAlignedLoad(vty(64), reg_addr(s), llvm::Align(8)), true), slot_a_[s]);
  }

  // Emits instructions [begin, end): begin is a leader.
  void emit_run(size_t begin, size_t end) {
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
          emit_op(in, natives_[pc], gm);
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
              in.d != kNoSlot && fixed(in.b) && fixed(in.c) && in.mode <= 3) {
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
            uint32_t bval = static_cast<uint32_t>(fixed_val(in.b)) & 0x1f;
            uint32_t cval = static_cast<uint32_t>(fixed_val(in.c));
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
            if (s != kNoSlot && (slot_a_[s] || const_[s]))
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

  Value* bool_vec(uint32_t s, bool neg) {
    Value* v = B.CreateTrunc(get(s, 32), llvm::FixedVectorType::get(i1, 32));
    return neg ? B.CreateNot(v) : v;
  }

  void emit_op(const Inst& in, const Native& n, Value* gm) {
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
      case Op::kMov: set(in.d, get(in.a, narrow_[in.d] ? 32 : 64), act); break;
      case Op::kSelp: {
        unsigned w = narrow_[in.d] ? 32 : 64;
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

  void emit_cvt(const Inst& in, const Native& n, Value* act) {
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

  Value* reduce(llvm::Intrinsic::ID id, Value* v) { return B.CreateUnaryIntrinsic(id, v); }

  // The common shapes of a warp's access, checked once for the warp: an
  // address the same in every lane known when compiling (kernel parameters,
  // shared variables), and a full warp at consecutive addresses. On success
  // they end in `done`; what they do not accept goes on in the general
  // path, emitted after them at the insert point (it checks again).
  void emit_mem_quick(const Inst& in, const Native& n, Value* gm, Value* act, Value* av, BasicBlock* done,
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
    if (const_[in.a] && !(write && n.vec > 1)) {
      uint64_t lo = const_val_[in.a] + static_cast<uint64_t>(in.imm);
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
  SharedShape shared_shape(uint32_t base, uint32_t esize) {
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
  void emit_shared_quick(const Inst& in, const Native& n, Value* gm, const SharedShape& sh, BasicBlock* done) {
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
  Value* group_loads(llvm::Type* ety, Value* const hosts[4], bool uniform, llvm::Align al) {
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
  void emit_mem(const Inst& in, const Native& n, Value* gm) {
    bool write = n.op == Op::kSt;
    uint32_t esize = ty_size(n.t);
    uint32_t size = esize * n.vec;
    BasicBlock* check = BasicBlock::Create(C, "mcheck", F);
    BasicBlock* fast = BasicBlock::Create(C, "mfast", F);
    BasicBlock* slow = BasicBlock::Create(C, "mslow", F);
    BasicBlock* done = BasicBlock::Create(C, "mdone", F);
    // Shared accesses through a register: their shape, before the branch.
    const bool shared_quick =
        in.space == Mem::kShared && !const_[in.a] && n.vec == 1 && (esize == 4 || esize == 8);
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
};

std::string reason_not_compiled(const ProgramImpl& p, const KernelUnit& unit) {
  (void)p;
  if (unit.functions.size() > 1) return "calls device functions";
  const Function& fn = unit.functions[0];
  if (!fn.interpreted_because.empty()) return fn.interpreted_because;
  for (const Inst& in : fn.code) {
    if (in.kind == Kind::kCall) return "calls device functions";
    if (in.kind == Kind::kExtern) return "calls printf or assert";
    if (in.kind == Kind::kBar && in.mode != 0) return "uses bar.red";
  }
  for (const SlotInit& si : fn.inits) {
    switch (si.kind) {
      case SlotInit::Kind::kImm: case SlotInit::Kind::kVarAddr: case SlotInit::Kind::kSharedGeneric:
      case SlotInit::Kind::kLocalAddr: break;
      case SlotInit::Kind::kSpecial:
        if (si.index > kGridId) return "reads special register " + std::to_string(si.index);
        break;
      default: return "initializes a register in an unknown way";
    }
  }
  if (fn.code.size() > 20000) return "too large (" + std::to_string(fn.code.size()) + " instructions)";
  if (fn.num_slots > 16384) return "too many registers (" + std::to_string(fn.num_slots) + ")";
  return "";
}

}  // namespace

const CompiledKernel* kernel_code(const ProgramImpl& p, ProgramJit& pj, int k, const KernelUnit& unit) {
  std::call_once(pj.once[static_cast<size_t>(k)], [&] {
    const std::string& kname = p.kernels[static_cast<size_t>(k)].name;
    std::string why = reason_not_compiled(p, unit);
    // The opcodes of the kernel's instructions: its body parsed again (the
    // decoder keeps handler pointers, not names), statement i -> code[i].
    std::vector<std::string> opcodes;
    if (why.empty()) {
      ast::Function copy = p.ast.functions[static_cast<size_t>(p.kernel_function[static_cast<size_t>(k)])];
      if (Status s = ast::parse_body(&copy); !s.is_ok()) why = "body: " + s.message();
      for (const auto& st : copy.body)
        if (st.kind == ast::Statement::Kind::kInstruction) opcodes.push_back(st.inst.opcode);
      if (why.empty() && opcodes.size() + 1 != unit.functions[0].code.size()) why = "internal: instruction count";
    }
    auto t0 = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(pj.mu);
    if (why.empty() && !pj.engine) {
      std::string err;
      pj.engine = make_engine(&err);
      if (!pj.engine) why = "no JIT: " + err;
    }
    if (!why.empty()) {
      RGPU_INFO("ptx jit kernel=%s compiled=no reason=\"%s\"", kname.c_str(), why.c_str());
      return;
    }
    Engine& e = *pj.engine;
    auto ctx = std::make_unique<llvm::LLVMContext>();
    auto mod = std::make_unique<llvm::Module>("rgpu_kernel", *ctx);
    mod->setDataLayout(e.tm->createDataLayout());
    mod->setTargetTriple(e.tm->getTargetTriple().str());
    std::string fname = "k" + std::to_string(e.next_id++);
    Gen gen(*ctx, *mod, unit.functions[0], opcodes);
    std::string err = gen.build(fname);
    if (!err.empty()) {
      RGPU_INFO("ptx jit kernel=%s compiled=no reason=\"%s\"", kname.c_str(), err.c_str());
      return;
    }
    // Target features on every function, so the vectorizer and the code
    // generator use the host's vector width.
    for (auto& f : *mod) {
      f.addFnAttr("target-cpu", e.tm->getTargetCPU());
      f.addFnAttr("target-features", e.tm->getTargetFeatureString());
    }
    auto t1 = std::chrono::steady_clock::now();
    {
      llvm::LoopAnalysisManager lam;
      llvm::FunctionAnalysisManager fam;
      llvm::CGSCCAnalysisManager cgam;
      llvm::ModuleAnalysisManager mam;
      llvm::PassBuilder pb(e.tm.get());
      pb.registerModuleAnalyses(mam);
      pb.registerCGSCCAnalyses(cgam);
      pb.registerFunctionAnalyses(fam);
      pb.registerLoopAnalyses(lam);
      pb.crossRegisterProxies(lam, fam, cgam, mam);
      llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
      mpm.run(*mod, mam);
    }
    auto t2 = std::chrono::steady_clock::now();
    // A developer's view of the optimized code: RGPU_CPU_JIT_DUMP=DIR writes
    // each compiled kernel's IR there.
    if (const char* dir = getenv("RGPU_CPU_JIT_DUMP")) {
      std::error_code ec;
      llvm::raw_fd_ostream os(std::string(dir) + "/" + kname + ".ll", ec);
      if (!ec) mod->print(os, nullptr);
    }
    if (auto er = e.jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(mod), std::move(ctx)))) {
      RGPU_INFO("ptx jit kernel=%s compiled=no reason=\"%s\"", kname.c_str(), take_error(std::move(er)).c_str());
      return;
    }
    auto sym = e.jit->lookup(fname);
    if (!sym) {
      RGPU_INFO("ptx jit kernel=%s compiled=no reason=\"%s\"", kname.c_str(), take_error(sym.takeError()).c_str());
      return;
    }
    auto t3 = std::chrono::steady_clock::now();
    auto ck = std::make_unique<CompiledKernel>();
    ck->fn = sym->toPtr<KernelFn>();
    ck->num_slots = unit.functions[0].num_slots;
    ck->num_windows = gen.num_windows();
    ck->specials = gen.specials_used();
    for (const SlotInit& si : unit.functions[0].inits)
      if (!gen.is_const(si.slot) && si.kind != SlotInit::Kind::kImm && si.kind != SlotInit::Kind::kSpecial)
        ck->inits.push_back(si);
    ck->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    RGPU_DEBUG("ptx jit kernel=%s compiled=yes instructions=%zu ms=%.1f build_ms=%.1f opt_ms=%.1f codegen_ms=%.1f",
               kname.c_str(), unit.functions[0].code.size(), ck->compile_ms, ms(t0, t1), ms(t1, t2), ms(t2, t3));
    pj.code[static_cast<size_t>(k)].store(ck.get(), std::memory_order_release);
    e.kernels.push_back(std::move(ck));
  });
  return pj.code[static_cast<size_t>(k)].load(std::memory_order_acquire);
}

const CompiledKernel* kernel_code_background(const ProgramImpl& p, ProgramJit& pj, int k, const KernelUnit& unit) {
  const size_t i = static_cast<size_t>(k);
  if (const CompiledKernel* ck = pj.code[i].load(std::memory_order_acquire)) return ck;
  if (pj.started[i].exchange(true)) return nullptr;  // compiling, or refused
  std::lock_guard<std::mutex> lock(pj.threads_mu);
  try {
    pj.threads.emplace_back([&p, &pj, k, &unit] { kernel_code(p, pj, k, unit); });
  } catch (const std::system_error&) {
    return kernel_code(p, pj, k, unit);  // no thread to be had: compile here
  }
  return nullptr;
}

}  // namespace rgpu::ptx::jit
