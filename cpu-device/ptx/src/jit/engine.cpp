// The compiled path's engine: the Program's LLVM ORC JIT (Engine,
// make_engine) and the compile of a kernel into it (kernel_code, now or on
// a thread of its own): what the compiled path refuses, Gen's function,
// LLVM's optimizer for the host CPU, and the symbol the block runner calls.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <llvm/ExecutionEngine/JITEventListener.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/SectionMemoryManager.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "analysis.h"
#include "gen.h"
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
    // The opcodes of the kernel's instructions, which the decoder does not
    // keep.
    std::vector<std::string> opcodes;
    if (why.empty()) why = kernel_opcodes(p, k, unit, &opcodes);
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
