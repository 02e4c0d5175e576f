// The PTX interpreter of the CPU device: parse a PTX module into an immutable
// Program, then launch its kernels on CPU threads (warps of 32 lanes).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rgpu/common/status.h"

namespace rgpu::ptx {

// State space of a module-scope variable.
enum class Space : uint8_t { kGlobal, kShared, kConst, kLocal };

// One parameter of a kernel, as declared by its .entry. Offsets follow the
// CUDA ABI: each parameter aligned to its alignment, in declaration order.
struct ParamInfo {
  std::string name;
  uint32_t offset = 0;
  uint32_t size = 0;
  uint32_t align = 1;
};

// A kernel (.entry) of a module.
struct KernelInfo {
  std::string name;
  std::vector<ParamInfo> params;
  uint32_t param_bytes = 0;          // size of the parameter buffer launch() expects
  uint32_t max_threads = 1024;       // .maxntid/.reqntid product, else 1024
  // Known once the kernel is decoded (Program::prepare), 0 before:
  uint32_t static_shared_bytes = 0;  // .shared variables the kernel can reach
  uint32_t local_bytes = 0;          // per-thread local memory (stack) reserved
  uint32_t num_regs = 0;             // registers per thread after decoding
};

// A module-scope variable. The caller places kGlobal and kConst variables in
// device memory (size bytes, aligned to align, filled with init and zeros up
// to size) and passes their addresses to launch() in the same order as
// Program::variables(). kShared variables are placed by the interpreter; their
// address entry is ignored. is_extern marks `.extern .shared` (dynamic shared
// memory, size 0) and `.extern .global` declarations that have no storage here.
struct VariableInfo {
  std::string name;
  Space space = Space::kGlobal;
  uint64_t size = 0;
  uint32_t align = 1;
  std::vector<uint8_t> init;  // may be shorter than size; rest is zero
  bool is_extern = false;
  bool visible = false;       // .visible: may be looked up by name (cuModuleGetGlobal)
};

// A grid or block shape.
struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t{x} * y * z; }
};

// How a launch ended.
enum class Fault : uint8_t {
  kNone = 0,
  kIllegalAddress,      // CUDA_ERROR_ILLEGAL_ADDRESS
  kMisalignedAddress,   // CUDA_ERROR_MISALIGNED_ADDRESS
  kUnsupported,         // an instruction the interpreter cannot run: CUDA_ERROR_NOT_SUPPORTED
  kIllegalInstruction,  // e.g. an indirect call to nowhere: CUDA_ERROR_ILLEGAL_INSTRUCTION
  kTimeout,             // deadline passed or cancelled: CUDA_ERROR_LAUNCH_TIMEOUT
  kTrap,                // trap or failed device assert: CUDA_ERROR_ASSERT
  kInvalidLaunch,       // bad shape, too much shared memory, bad parameter size: CUDA_ERROR_INVALID_VALUE
  kOutOfResources,      // host memory for blocks could not be had: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
};

// The CUresult value a driver should report for a fault (0 for kNone).
int cuda_error_code(Fault fault);
const char* fault_name(Fault fault);

// The outcome of a launch: fault kNone on success, else the first fault seen,
// with a message naming the kernel, instruction, PTX line and address.
struct LaunchResult {
  Fault fault = Fault::kNone;
  std::string message;
  uint64_t address = 0;            // faulting address, when there is one
  uint64_t thread_instructions = 0;  // instructions executed, counted per active lane
  bool compiled = false;           // ran as native code (the compiled path), not interpreted
  // CPU time the launching thread spent compiling the kernel for this launch
  // (0 unless this launch compiled it): a cost of the device, which compute
  // shares do not charge to the launch's slice.
  uint64_t compile_cpu_ns = 0;
  bool ok() const { return fault == Fault::kNone; }
  // The coarse rgpu status: ok, kInvalidArgument, kUnimplemented or kFailed.
  Status status() const;
};

// Runs n tasks, possibly in parallel, and returns when all have finished.
// Implementations must be safe to call from several threads at once.
class WorkerPool {
 public:
  virtual ~WorkerPool() = default;
  // How many tasks make sense to run at once.
  virtual unsigned concurrency() const = 0;
  // Calls task(i) for every i in [0, n); returns when all calls returned.
  virtual void run(unsigned n, const std::function<void(unsigned)>& task) = 0;
};

// Validates a global or generic access to device memory: true if
// [addr, addr+size) lies inside one live allocation (write: writable). Called
// from worker threads concurrently; must be thread-safe. After it says true the
// interpreter reads or writes host memory at addr directly.
using MemoryChecker = std::function<bool(uint64_t addr, size_t size, bool write)>;
// What a checked access may cache: every access of the same direction
// inside [lo, hi) gets the same answer as long as *epoch still reads
// `seen` (the memory's owner changes it on every release).
struct MemoryExtent {
  uint64_t lo = 0, hi = 0;
  const std::atomic<uint64_t>* epoch = nullptr;
  uint64_t seen = 0;
};
// The epoch of memory nothing is released from during a launch: it stays 0.
inline const std::atomic<uint64_t> kNeverReleased{0};
// A MemoryChecker that, on true, also says the extent its answer holds for
// (the allocation around the access). Same threading rules.
using ExtentChecker = std::function<bool(uint64_t addr, size_t size, bool write, MemoryExtent* out)>;
// Receives the text of device printf calls, one call per formatted printf.
// Called from worker threads concurrently; must be thread-safe.
using PrintfSink = std::function<void(std::string_view text)>;

// What a launch needs from its caller. Borrowed for the duration of launch().
struct LaunchEnv {
  // Address of each module variable, indexed like Program::variables().
  // Missing entries (or 0) make any access to that variable an illegal address.
  std::vector<uint64_t> variable_addresses;
  // Empty: every address is accepted (for tests on trusted host buffers only).
  MemoryChecker checker;
  // Optional, beside `checker` and answering as it does: lets compiled
  // kernels skip the call for accesses inside an extent already checked.
  ExtentChecker extent;
  // Empty: printf output is written to stdout.
  PrintfSink printf_sink;
  // Where a failed device assert's message goes, one line per failing
  // thread as a GPU prints it ("file:line: function: block: [x,y,z], thread:
  // [x,y,z] Assertion `expr` failed."). Empty: stderr.
  PrintfSink error_sink;
  // Blocks are spread over a pool: `pool` if set, else `workers` threads
  // started for this launch (0: one per hardware thread).
  WorkerPool* pool = nullptr;
  unsigned workers = 0;
  // Watchdog: the launch stops with kTimeout when the deadline passes or
  // *cancel becomes true (checked every few thousand instructions).
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  const std::atomic<bool>* cancel = nullptr;
  // The compiled path (docs/ptx-interpreter.md): -1 as RGPU_CPU_JIT says
  // ("0": never; "1": from a kernel's first launch; unset: once a kernel has
  // run about 2e9 thread-instructions interpreted, compiling on a thread of
  // its own while launches go on interpreted), 0 always interpret, 1
  // compile at the first launch (which waits for it), 2 start the compile
  // at the first launch in the background and interpret until it is done.
  // Kernels the compiler does not cover run interpreted either way.
  int8_t jit = -1;
};

struct ProgramImpl;

// How much of a module parse() decodes before it returns.
enum class Decode : uint8_t {
  kAll,    // every kernel and what it calls: malformed code anywhere fails parse()
  kOnUse,  // signatures only; each kernel is parsed and decoded on first use
};

// A parsed PTX module. Logically immutable after parse(): launch() may be
// called from several threads at once, on the same or different kernels;
// kernels decoded on first use are decoded once, under a lock of their own.
// The Program must outlive every launch running on it.
class Program {
 public:
  // Parses PTX text. Malformed input gives kInvalidArgument with
  // "line N: ..." (with Decode::kOnUse, malformed kernel bodies are reported
  // by prepare() instead); instructions the interpreter cannot run are
  // reported at launch time (kUnsupported) so that a module with one odd
  // kernel still loads.
  static Result<std::unique_ptr<Program>> parse(std::string_view ptx_text, Decode decode = Decode::kAll);

  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  const std::vector<KernelInfo>& kernels() const;
  const std::vector<VariableInfo>& variables() const;
  // Index into kernels() / variables(), or -1.
  int find_kernel(std::string_view name) const;
  int find_variable(std::string_view name) const;
  // The .target of the module (e.g. "sm_75") and its .version ("9.0").
  const std::string& target() const;
  const std::string& version() const;
  // Decodes kernel `index` and what it calls if that was not done yet, and
  // fills its KernelInfo resource fields. Thread-safe; every call returns
  // the first call's status. Launching or asking unsupported_reason()
  // prepares too.
  Status prepare(int kernel_index) const;
  // Empty when every instruction of kernel `index` (and what it calls) can
  // run; else a message naming the first one that cannot, with its line (or
  // why the kernel could not be decoded).
  std::string unsupported_reason(int kernel_index) const;

  // Runs kernel `kernel_index` over grid x block threads. `params` is the
  // parameter buffer laid out at KernelInfo::params offsets (size must be at
  // least param_bytes). Blocks run on env's workers; returns when all blocks
  // finished or on the first fault (other blocks then stop soon after).
  LaunchResult launch(int kernel_index, Dim3 grid, Dim3 block, uint32_t dynamic_shared_bytes,
                      const void* params, size_t params_size, const LaunchEnv& env) const;

 private:
  explicit Program(std::unique_ptr<ProgramImpl> impl);
  std::unique_ptr<ProgramImpl> impl_;
};

}  // namespace rgpu::ptx
