// The compiled path of the PTX interpreter: a kernel's decoded instructions
// (rgpu's own Inst form) translated once into native code for the host CPU
// with LLVM, and a block runner that drives that code with the interpreter's
// scheduling rules. See docs/ptx-interpreter.md, "The compiled path".
// Private to rgpu_ptx.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../exec.h"
#include "../ir.h"

namespace rgpu::ptx::jit {

// When a launch uses compiled code.
enum class Policy : uint8_t {
  kOff,     // never (RGPU_CPU_JIT=0, LaunchEnv::jit = 0)
  kAlways,  // from a kernel's first launch (RGPU_CPU_JIT=1, LaunchEnv::jit = 1)
  kHot,     // once the kernel has run kHotInstructions interpreted (unset), in the background
  kBackground,  // from the first launch, in the background (LaunchEnv::jit = 2)
};
// Compiling a kernel costs about as much CPU time as interpreting this many
// of its thread-instructions; past it, compiling pays for itself.
constexpr uint64_t kHotInstructions = uint64_t{2} << 30;
Policy policy(const LaunchEnv& env);

// A kernel translated to native code. Immutable; owned by the Program's
// engine, so it lives as long as the Program.
struct CompiledKernel;

// The compiler of one Program: an LLVM JIT holding the code of every kernel
// of that Program compiled so far. Thread-safe.
class Engine;

// Per Program state that the compiled path keeps next to ProgramImpl.
// Destroyed first of ProgramImpl's members (declared last), so background
// compiles, which read the program, are joined while it is whole.
struct ProgramJit {
  explicit ProgramJit(size_t kernels)
      : once(std::make_unique<std::once_flag[]>(kernels)),
        code(std::make_unique<std::atomic<const CompiledKernel*>[]>(kernels)),
        started(std::make_unique<std::atomic<bool>[]>(kernels)),
        interpreted(std::make_unique<std::atomic<uint64_t>[]>(kernels)) {}
  ~ProgramJit() {
    std::lock_guard<std::mutex> lock(threads_mu);
    for (auto& t : threads) t.join();
  }
  ProgramJit(const ProgramJit&) = delete;
  ProgramJit& operator=(const ProgramJit&) = delete;
  std::mutex mu;                                  // guards engine creation and compiles
  std::shared_ptr<Engine> engine;                 // created on the first compile
  std::unique_ptr<std::once_flag[]> once;         // per kernel: compiled (or refused) once
  // Per kernel: nullptr runs interpreted (set once, by the compile).
  std::unique_ptr<std::atomic<const CompiledKernel*>[]> code;
  std::unique_ptr<std::atomic<bool>[]> started;   // per kernel: a background compile was started
  std::mutex threads_mu;
  std::vector<std::thread> threads;               // background compiles
  // Per kernel: thread-instructions run interpreted so far (Policy::kHot).
  std::unique_ptr<std::atomic<uint64_t>[]> interpreted;
};

// The compiled form of kernel `k` of `p` (whose unit is decoded), compiling
// it on the first call; nullptr when the kernel runs interpreted (the reason
// is logged once per kernel). Thread-safe.
const CompiledKernel* kernel_code(const ProgramImpl& p, ProgramJit& pj, int k, const KernelUnit& unit);

// Policy::kHot: the compiled form of kernel `k` when it is ready, else
// nullptr (the launch runs interpreted) after starting its compile on a
// thread of its own if none was started; the compile's CPU time is nobody's
// launch's. Thread-safe.
const CompiledKernel* kernel_code_background(const ProgramImpl& p, ProgramJit& pj, int k, const KernelUnit& unit);

// Runs blocks from st.next_block with compiled code, like run_worker().
void run_worker(LaunchState& st, const CompiledKernel& ck);

}  // namespace rgpu::ptx::jit
