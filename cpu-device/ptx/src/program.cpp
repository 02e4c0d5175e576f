// Program: parse + decode, module queries, and launch (checks the shape,
// then runs blocks on the caller's pool or on threads started here).
#include <cuda.h>

#include <time.h>

#include <algorithm>
#include <thread>

#include "decode.h"
#include "exec.h"
#include "rgpu/common/log.h"
#ifdef RGPU_PTX_JIT
#include "jit/jit.h"
#endif

namespace rgpu::ptx {

int cuda_error_code(Fault fault) {
  switch (fault) {
    case Fault::kNone: return CUDA_SUCCESS;
    case Fault::kIllegalAddress: return CUDA_ERROR_ILLEGAL_ADDRESS;
    case Fault::kMisalignedAddress: return CUDA_ERROR_MISALIGNED_ADDRESS;
    case Fault::kUnsupported: return CUDA_ERROR_NOT_SUPPORTED;
    case Fault::kIllegalInstruction: return CUDA_ERROR_ILLEGAL_INSTRUCTION;
    case Fault::kTimeout: return CUDA_ERROR_LAUNCH_TIMEOUT;
    case Fault::kTrap: return CUDA_ERROR_ASSERT;
    case Fault::kInvalidLaunch: return CUDA_ERROR_INVALID_VALUE;
    case Fault::kOutOfResources: return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  }
  return CUDA_ERROR_LAUNCH_FAILED;
}

const char* fault_name(Fault fault) {
  switch (fault) {
    case Fault::kNone: return "none";
    case Fault::kIllegalAddress: return "illegal_address";
    case Fault::kMisalignedAddress: return "misaligned_address";
    case Fault::kUnsupported: return "unsupported";
    case Fault::kIllegalInstruction: return "illegal_instruction";
    case Fault::kTimeout: return "timeout";
    case Fault::kTrap: return "trap";
    case Fault::kInvalidLaunch: return "invalid_launch";
    case Fault::kOutOfResources: return "out_of_resources";
  }
  return "unknown";
}

Status LaunchResult::status() const {
  switch (fault) {
    case Fault::kNone: return Status::ok();
    case Fault::kInvalidLaunch: return invalid_argument(message);
    case Fault::kUnsupported: return unimplemented(message);
    case Fault::kOutOfResources: return overloaded(message);
    default: return failed(std::string(fault_name(fault)) + ": " + message);
  }
}

Program::Program(std::unique_ptr<ProgramImpl> impl) : impl_(std::move(impl)) {}
Program::~Program() = default;

Result<std::unique_ptr<Program>> Program::parse(std::string_view ptx_text, Decode decode) {
  Result<std::unique_ptr<ProgramImpl>> impl = load_module(std::string(ptx_text));
  if (!impl.is_ok()) return impl.status();
  std::unique_ptr<Program> prog(new Program(std::move(impl.value())));
#ifdef RGPU_PTX_JIT
  prog->impl_->jit = std::make_shared<jit::ProgramJit>(prog->impl_->kernels.size());
#endif
  if (decode == Decode::kAll) {
    // Functions no kernel reaches are checked for syntax too.
    for (const auto& f : prog->impl_->ast.functions) {
      if (!f.has_body) continue;
      ast::Function copy = f;
      if (Status s = ast::parse_body(&copy); !s.is_ok()) return s;
    }
    for (size_t k = 0; k < prog->impl_->kernels.size(); ++k)
      if (Status s = prog->prepare(static_cast<int>(k)); !s.is_ok()) return s;
  }
  return prog;
}

Status Program::prepare(int kernel_index) const {
  ProgramImpl& p = *impl_;
  if (kernel_index < 0 || static_cast<size_t>(kernel_index) >= p.kernels.size())
    return invalid_argument("no kernel with index " + std::to_string(kernel_index));
  ProgramImpl::Lazy& lazy = p.lazy[static_cast<size_t>(kernel_index)];
  std::call_once(lazy.once, [&] {
    auto unit = decode_kernel(p, kernel_index, &p.kernels[static_cast<size_t>(kernel_index)]);
    if (unit.is_ok()) lazy.unit = std::move(unit.value());
    else lazy.status = unit.status();
  });
  return lazy.status;
}

const std::vector<KernelInfo>& Program::kernels() const { return impl_->kernels; }
const std::vector<VariableInfo>& Program::variables() const { return impl_->variables; }
const std::string& Program::target() const { return impl_->target; }
const std::string& Program::version() const { return impl_->version; }

int Program::find_kernel(std::string_view name) const {
  for (size_t i = 0; i < impl_->kernels.size(); ++i)
    if (impl_->kernels[i].name == name) return static_cast<int>(i);
  return -1;
}
int Program::find_variable(std::string_view name) const {
  for (size_t i = 0; i < impl_->variables.size(); ++i)
    if (impl_->variables[i].name == name) return static_cast<int>(i);
  return -1;
}

std::string Program::unsupported_reason(int kernel_index) const {
  if (kernel_index < 0 || static_cast<size_t>(kernel_index) >= impl_->kernels.size()) return "no such kernel";
  if (Status s = prepare(kernel_index); !s.is_ok()) return "invalid PTX: " + s.message();
  return impl_->lazy[static_cast<size_t>(kernel_index)].unit->unsupported;
}

namespace {
LaunchResult refuse(Fault f, std::string msg) {
  LaunchResult r;
  r.fault = f;
  r.message = std::move(msg);
  return r;
}
}  // namespace

LaunchResult Program::launch(int kernel_index, Dim3 grid, Dim3 block, uint32_t dynamic_shared_bytes,
                             const void* params, size_t params_size, const LaunchEnv& env) const {
  const ProgramImpl& p = *impl_;
  if (kernel_index < 0 || static_cast<size_t>(kernel_index) >= p.kernels.size())
    return refuse(Fault::kInvalidLaunch, "no kernel with index " + std::to_string(kernel_index));
  const KernelInfo& k = p.kernels[static_cast<size_t>(kernel_index)];
  if (Status s = prepare(kernel_index); !s.is_ok())
    return refuse(Fault::kInvalidLaunch, k.name + " cannot be decoded: " + s.message());
  const KernelUnit& unit = *p.lazy[static_cast<size_t>(kernel_index)].unit;
  if (!unit.unsupported.empty()) return refuse(Fault::kUnsupported, unit.unsupported);
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0)
    return refuse(Fault::kInvalidLaunch, "empty grid or block for " + k.name);
  if (block.count() > k.max_threads || block.x > 1024 || block.y > 1024 || block.z > 64)
    return refuse(Fault::kInvalidLaunch, "block of " + std::to_string(block.count()) + " threads too large for " + k.name);
  if (grid.y > 65535 || grid.z > 65535)
    return refuse(Fault::kInvalidLaunch, "grid too large for " + k.name);
  if (params_size < k.param_bytes || (k.param_bytes && !params))
    return refuse(Fault::kInvalidLaunch, "parameter buffer of " + std::to_string(params_size) + " bytes, " + k.name +
                                             " needs " + std::to_string(k.param_bytes));
  uint64_t shared = k.static_shared_bytes;
  if (dynamic_shared_bytes) shared = std::max<uint64_t>(shared, uint64_t{unit.dyn_shared_base} + dynamic_shared_bytes);
  if (shared > 228 * 1024)
    return refuse(Fault::kInvalidLaunch, "shared memory of " + std::to_string(shared) + " bytes too large for " + k.name);

  LaunchState st;
  st.prog = &p;
  st.unit = &unit;
  st.kernel = &unit.functions[0];
  st.env = &env;
  st.grid = grid;
  st.block = block;
  st.warps_per_block = static_cast<uint32_t>((block.count() + 31) / 32);
  st.user_shared_bytes = static_cast<uint32_t>(shared);
  st.dynamic_shared_bytes = dynamic_shared_bytes;
  st.reserved_offset = static_cast<uint32_t>((shared + 15) / 16 * 16);
  // The reserved region exists only for kernels that ask where it is, so
  // that an access just past the user's shared memory still faults in others.
  st.shared_bytes = unit.reserved_smem ? st.reserved_offset + kReservedSmemBytes : st.user_shared_bytes;
  st.local_stride = (k.local_bytes + 15) / 16 * 16;
  st.params = static_cast<const uint8_t*>(params);
  st.params_size = static_cast<uint32_t>(std::min<size_t>(params_size, 1u << 20));
  st.var_addr = env.variable_addresses;
  st.var_addr.resize(p.variables.size(), 0);

  // The compiled path where it covers the kernel, else the interpreter.
  std::function<void()> work = [&st] { run_worker(st); };
  bool compiled = false;
  uint64_t compile_cpu_ns = 0;
#ifdef RGPU_PTX_JIT
  auto thread_cpu_ns = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  };
  jit::Policy policy = p.jit ? jit::policy(env) : jit::Policy::kOff;
  if (policy == jit::Policy::kAlways || policy == jit::Policy::kBackground ||
      (policy == jit::Policy::kHot && p.jit->interpreted[static_cast<size_t>(kernel_index)].load(
                                          std::memory_order_relaxed) >= jit::kHotInstructions)) {
    const uint64_t before = thread_cpu_ns();
    const jit::CompiledKernel* ck = policy == jit::Policy::kAlways
                                        ? jit::kernel_code(p, *p.jit, kernel_index, unit)
                                        : jit::kernel_code_background(p, *p.jit, kernel_index, unit);
    compile_cpu_ns = thread_cpu_ns() - before;  // near 0 once compiled (or refused)
    if (ck) {
      work = [&st, ck] { jit::run_worker(st, *ck); };
      compiled = true;
    }
  }
#endif

  uint64_t blocks = grid.count();
  unsigned workers = env.pool ? env.pool->concurrency() : env.workers;
  if (workers == 0) workers = std::max(1u, std::thread::hardware_concurrency());
  workers = static_cast<unsigned>(std::min<uint64_t>(workers, blocks));
  if (workers <= 1) {
    work();
  } else if (env.pool) {
    env.pool->run(workers, [&](unsigned) { work(); });
  } else {
    std::vector<std::thread> threads;
    threads.reserve(workers - 1);
    try {
      for (unsigned i = 1; i < workers; ++i) threads.emplace_back(work);
    } catch (const std::system_error&) {
      // Fewer threads than asked for: the ones we have share the blocks.
    }
    work();
    for (auto& t : threads) t.join();
  }
  LaunchResult r;
  {
    std::lock_guard<std::mutex> lock(st.fault_mu);
    r = st.first_fault;
  }
  r.thread_instructions = st.instructions.load();
  r.compiled = compiled;
  r.compile_cpu_ns = compile_cpu_ns;
#ifdef RGPU_PTX_JIT
  if (!compiled && p.jit)
    p.jit->interpreted[static_cast<size_t>(kernel_index)].fetch_add(r.thread_instructions, std::memory_order_relaxed);
#endif
  if (!r.ok()) RGPU_DEBUG("ptx launch fault kernel=%s fault=%s msg=\"%s\"", k.name.c_str(), fault_name(r.fault), r.message.c_str());
  return r;
}

}  // namespace rgpu::ptx
