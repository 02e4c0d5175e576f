// The decoded form of a PTX module that the interpreter runs: instructions
// with handler pointers and register slot indices, and the per-warp execution
// context handlers work on. Private to rgpu_ptx.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ast.h"

#include "rgpu/ptx/ptx.h"

namespace rgpu::ptx {

constexpr uint32_t kNoSlot = 0xffffffffu;
constexpr uint32_t kFullMask = 0xffffffffu;

struct ExecCtx;
struct Inst;
using Handler = void (*)(ExecCtx&, const Inst&, uint32_t mask);

// What the scheduler must do around an instruction; kOp just calls fn.
// kWarpSync: an instruction with a membermask (bar.warp.sync, and shfl/vote/
// match/redux/elect .sync, whose fn then runs once the mask's lanes are
// there; `target` is the membermask's slot).
enum class Kind : uint8_t { kOp, kBra, kCall, kRet, kExit, kBar, kTrap, kUnsupported, kExtern, kNop, kWarpSync };

// Memory state space of an access, resolved at decode time.
enum class Mem : uint8_t { kGlobal, kShared, kLocal, kConst, kParamKernel, kParamLocal, kGeneric };

struct Inst {
  Handler fn = nullptr;
  Kind kind = Kind::kOp;
  bool guard_neg = false;
  uint8_t vec = 1;     // ld/st vector count
  uint8_t mode = 0;    // op-specific: comparison, shuffle mode, rounding, ...
  uint8_t aux = 0;     // op-specific
  Mem space = Mem::kGlobal;
  uint16_t size = 0;   // access size in bytes for memory ops
  uint32_t guard = kNoSlot;
  uint32_t d = kNoSlot, d2 = kNoSlot;
  uint32_t a = kNoSlot, b = kNoSlot, c = kNoSlot, e = kNoSlot;
  uint32_t v[4] = {kNoSlot, kNoSlot, kNoSlot, kNoSlot};
  int64_t imm = 0;     // address offset or immediate
  uint32_t target = 0; // branch target pc, or call site index
  uint32_t line = 0;
};

// How a slot of a new frame is filled before the function runs.
struct SlotInit {
  enum class Kind : uint8_t {
    kImm,            // value
    kVarAddr,        // address of module variable `index` (+ value)
    kSharedGeneric,  // generic address of shared offset value
    kLocalAddr,      // frame local base + value
    kSpecial,        // special register `index`
  };
  Kind kind = Kind::kImm;
  uint32_t slot = 0;
  uint32_t index = 0;
  uint64_t value = 0;
};

// Special registers filled at frame creation.
enum Special : uint32_t {
  kTidX, kTidY, kTidZ, kNtidX, kNtidY, kNtidZ, kCtaidX, kCtaidY, kCtaidZ,
  kNctaidX, kNctaidY, kNctaidZ, kLaneId, kWarpId, kNWarpId, kLanemaskEq, kLanemaskLe,
  kLanemaskLt, kLanemaskGe, kLanemaskGt, kSmId, kNSmId, kGridId,
  // Shared memory sizes and the reserved region (after the user's shared
  // memory, kReservedSmemBytes long; _0 and _1 split it in two halves).
  kDynamicSmem, kTotalSmem, kAggrSmem, kReservedBegin, kReservedEnd, kReservedCap, kReserved0, kReserved1,
  kZero, kOne,  // registers whose value is fixed on this device (envregs, pm counters, clusters of one)
  kSpecialCount
};

// Shared memory the device reserves per block for system software
// (cooperative groups' scratch for tiles wider than a warp).
inline constexpr uint32_t kReservedSmemBytes = 1024;

// A call from one function to another (or to a known extern: vprintf).
struct CallSite {
  int32_t callee = -1;          // function index; -1 for an extern builtin
  uint8_t builtin = 0;          // 1: vprintf, 2: __assertfail, 3: malloc, 4: free
  // (offset in caller's per-lane param area, offset in callee's, size)
  struct Copy { uint32_t from, to, size; };
  std::vector<Copy> args;
  std::vector<Copy> rets;      // from callee to caller
};

struct Function {
  std::string name;
  bool entry = false;
  bool is_extern = false;
  bool has_body = false;
  std::vector<Inst> code;
  uint32_t num_slots = 0;
  std::vector<SlotInit> inits;
  uint32_t lparam_bytes = 0;    // per-lane .param area (params, returns, call arguments)
  std::vector<uint32_t> param_offsets, param_sizes;  // .func params in that area
  std::vector<uint32_t> ret_offsets, ret_sizes;
  uint32_t local_bytes = 0;     // .local frame (stack depot) bytes
  std::vector<CallSite> calls;
  std::vector<uint32_t> shared_vars;  // module variables referenced
  std::string unsupported;      // first instruction that cannot run, with its line
  uint32_t max_threads = 0;
  // Operand lists of instructions with more registers than Inst holds
  // (mma.sync and wmma: their `imm` points at one).
  std::vector<std::vector<uint32_t>> operand_lists;
  // Why the compiled path leaves this function to the interpreter (a
  // warp-wide matrix instruction), or empty.
  std::string interpreted_because;
};

// A kernel and every function it can reach, decoded: what a launch runs.
// Immutable once built.
struct KernelUnit {
  std::vector<Function> functions;      // [0] is the kernel; CallSite::callee indexes this
  std::vector<uint32_t> shared_offset;  // per module variable, for the kShared ones it reaches
  uint32_t dyn_shared_base = 0;         // offset of .extern .shared in a block's shared memory
  std::string unsupported;              // first instruction reachable that cannot run
  bool reserved_smem = false;           // reads %reserved_smem_* or %aggr_smem_size
};

namespace jit {
struct ProgramJit;
}

struct ProgramImpl {
  std::string text;  // the module's PTX; `ast` views it
  ast::Module ast;   // signatures and located bodies
  std::string version, target;
  // Resource fields (static shared, local bytes, registers) of kernels[k]
  // are written once, by the decode of kernel k, before lazy[k] is set.
  std::vector<KernelInfo> kernels;
  std::vector<int> kernel_function;   // kernels[i] -> ast.functions index
  std::vector<VariableInfo> variables;
  std::unordered_map<std::string, uint32_t> var_index;   // variables by name
  std::unordered_map<std::string, uint32_t> func_index;  // ast.functions by name (the definition)
  // Per kernel: decoded on first use, once.
  struct Lazy {
    std::once_flag once;
    std::unique_ptr<KernelUnit> unit;
    Status status;
  };
  std::unique_ptr<Lazy[]> lazy;
  // The compiled path's code for this program's kernels (src/jit), when built with it.
  std::shared_ptr<jit::ProgramJit> jit;
};

struct LaunchState;
struct Warp;

// Everything a handler touches. One per worker thread; repointed per warp/frame.
struct ExecCtx {
  uint64_t* regs = nullptr;       // slot * 32 + lane
  uint8_t* lparams = nullptr;     // per-lane .param area of the current frame
  uint32_t lparam_stride = 0;
  uint8_t* shared = nullptr;
  uint32_t shared_size = 0;
  uint8_t* local = nullptr;       // the block's local memory, local_stride per thread
  uint32_t local_stride = 0;
  uint64_t local_total = 0;
  uint32_t thread_base = 0;       // index in block of lane 0 of this warp
  const uint8_t* kparams = nullptr;
  uint32_t kparam_size = 0;
  const LaunchState* launch = nullptr;
  Warp* warp = nullptr;
  uint32_t warp_full = 0;         // lanes that exist in this warp
  // Carry flags for add.cc/addc, one bit per lane.
  uint32_t carry = 0;
  Fault fault = Fault::kNone;
  std::string message;
  uint64_t fault_addr = 0;

  uint64_t* reg(uint32_t s) { return regs + static_cast<size_t>(s) * 32; }
  void set_fault(Fault f, std::string m, uint64_t addr = 0) {
    if (fault != Fault::kNone) return;
    fault = f;
    message = std::move(m);
    fault_addr = addr;
  }
};

template <class F>
[[gnu::always_inline]] inline void for_lanes(uint32_t m, F&& f) {
  if (m == kFullMask) {
    for (int l = 0; l < 32; ++l) f(l);
  } else {
    while (m) {
      int l = __builtin_ctz(m);
      m &= m - 1;
      f(l);
    }
  }
}

// Number of set bits, without relying on the popcnt instruction (x86-64
// baseline lacks it and the library call is slow in the dispatch loop).
inline uint32_t lane_count(uint32_t m) {
  m = m - ((m >> 1) & 0x55555555u);
  m = (m & 0x33333333u) + ((m >> 2) & 0x33333333u);
  m = (m + (m >> 4)) & 0x0f0f0f0fu;
  return (m * 0x01010101u) >> 24;
}

// Register slot <-> typed value. 32-bit and narrower values are stored
// zero-extended; readers truncate, so upper bits never matter.
template <class T>
inline T rd(uint64_t v) {
  if constexpr (sizeof(T) == 8) {
    T r;
    memcpy(&r, &v, 8);
    return r;
  } else if constexpr (sizeof(T) == 4) {
    uint32_t u = static_cast<uint32_t>(v);
    T r;
    memcpy(&r, &u, 4);
    return r;
  } else if constexpr (sizeof(T) == 2) {
    uint16_t u = static_cast<uint16_t>(v);
    T r;
    memcpy(&r, &u, 2);
    return r;
  } else {
    uint8_t u = static_cast<uint8_t>(v);
    T r;
    memcpy(&r, &u, 1);
    return r;
  }
}
template <class T>
inline uint64_t wr(T v) {
  if constexpr (sizeof(T) == 8) {
    uint64_t r;
    memcpy(&r, &v, 8);
    return r;
  } else if constexpr (sizeof(T) == 4) {
    uint32_t r;
    memcpy(&r, &v, 4);
    return r;
  } else if constexpr (sizeof(T) == 2) {
    uint16_t r;
    memcpy(&r, &v, 2);
    return r;
  } else {
    uint8_t r;
    memcpy(&r, &v, 1);
    return r;
  }
}

// Decoded opcode: base name, modifiers and types in order of appearance.
struct OpText {
  std::string base;
  std::vector<std::string> mods;   // everything that is not a type
  std::vector<std::string> types;  // "f32", "s32", ...
  bool has(const char* m) const {
    for (const auto& x : mods)
      if (x == m) return true;
    return false;
  }
};

// Splits opcode text ("add.rn.f32") into base, modifiers and types, as the
// decoder reads it; the compiled path's analysis reads it the same way.
OpText split_opcode(const std::string& s);

// Operand scalar type classes used by the handler tables.
enum class Ty : uint8_t { kNone, kB8, kB16, kB32, kB64, kU8, kU16, kU32, kU64, kS8, kS16, kS32, kS64,
                          kF16, kF16x2, kBF16, kBF16x2, kF32, kF64, kPred, kB128 };
Ty parse_ty(const std::string& t);
uint32_t ty_size(Ty t);

// Handler selection, one function per family (ops_*.cpp). Each returns false
// when the combination is not supported; inst.fn and fields are set on success.
bool select_int(const OpText& op, Inst& in);
bool select_float(const OpText& op, Inst& in);
bool select_cvt(const OpText& op, Inst& in);
bool select_mem(const OpText& op, Inst& in);
// cp.async's handler: a, imm the shared destination; b plus the value of c
// the global source; size the bytes; mode 1: e the bytes read (the rest
// zero), mode 2: e a predicate (aux 1: negated) that, true, reads nothing.
Handler cp_async_handler();
// ldmatrix, stmatrix, movmatrix and mma.sync (ops_tensor.cpp): see there
// for their fields.
Handler ldmatrix_handler();
Handler stmatrix_handler();
Handler movmatrix_handler();
Handler mma_handler();
bool mma_counts(uint8_t shape, uint8_t type, bool d_f16, bool c_f16, uint32_t counts[4]);
// wmma.load, wmma.store and wmma.mma (ops_tensor.cpp, which documents the
// fragment layout and the fields each uses).
enum WmmaShape : uint8_t { kWmmaM16N16K16, kWmmaM32N8K16, kWmmaM8N32K16, kWmmaM16N16K8 };
enum WmmaMatrix : uint8_t { kWmmaA, kWmmaB, kWmmaC };  // C also names D
enum WmmaType : uint8_t { kWmmaF16, kWmmaBF16, kWmmaTF32, kWmmaS8, kWmmaU8, kWmmaF32, kWmmaS32 };
// The registers of a fragment of `matrix` in `type` for `shape`, as the PTX
// ISA fixes them; false when rgpu does not run the combination.
bool wmma_regs(uint8_t shape, uint8_t matrix, uint8_t type, uint32_t* regs);
Handler wmma_load_handler();
Handler wmma_store_handler();
Handler wmma_mma_handler();
bool select_warp(const OpText& op, Inst& in);

// Scalar video instructions (ops_video.cpp). is_video: vadd vsub vabsdiff
// vmin vmax vshl vshr vmad. take_selector strips a trailing .b0-.b3/.h0/.h1
// from an operand name and returns its code (1..6), 0 when there is none.
// select_video takes the codes as asel | bsel << 3 | dsel << 6 and the
// operand count; it returns "" on success, otherwise why the form is refused.
bool is_video(const std::string& base);
uint8_t take_selector(std::string* name);
std::string select_video(const OpText& op, uint32_t sels, size_t nops, Inst& in);

// Control flow and builtins, implemented by the scheduler (exec.cpp).
void run_builtin(ExecCtx& x, const Inst& in, const CallSite& cs, uint32_t mask);

}  // namespace rgpu::ptx
