// Kernel launch checks and execution on the interpreter.
#include "launch.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "errors.h"
#include "rgpu/common/log.h"
#include "spec.h"

namespace rgpu::cpudev {

namespace {

// Faults after which a GPU context is unusable: they stick to the context.
bool sticky(ptx::Fault f) {
  switch (f) {
    case ptx::Fault::kIllegalAddress:
    case ptx::Fault::kMisalignedAddress:
    case ptx::Fault::kIllegalInstruction:
    case ptx::Fault::kTrap:
    case ptx::Fault::kTimeout:
      return true;
    default:
      return false;
  }
}

// A throttled launch looks again this often (nanoseconds) for its turn.
constexpr int64_t kShareWaitStep = 1'000'000;

// "kernel K: illegal address: illegal write of 4 bytes at 0x10 (...)", the
// text a server passes on.
std::string fault_reason(const std::string& kernel, const ptx::LaunchResult& r) {
  std::string fault = ptx::fault_name(r.fault);
  std::replace(fault.begin(), fault.end(), '_', ' ');
  std::string why = "kernel " + kernel + ": " + fault;
  if (!r.message.empty()) return why + ": " + r.message;  // it names the instruction and the address
  if (r.address != 0) {
    char address[32];
    std::snprintf(address, sizeof address, " at 0x%llx", static_cast<unsigned long long>(r.address));
    why += address;
  }
  return why;
}

}  // namespace

CUresult build_params(const ptx::KernelInfo& k, void** kernel_params, void** extra, std::vector<uint8_t>* out) {
  out->assign(k.param_bytes, 0);
  if (kernel_params && extra) return CUDA_ERROR_INVALID_VALUE;
  if (kernel_params) {
    for (size_t i = 0; i < k.params.size(); ++i) {
      const ptx::ParamInfo& p = k.params[i];
      if (!kernel_params[i]) return CUDA_ERROR_INVALID_VALUE;
      if (uint64_t{p.offset} + p.size > out->size()) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(out->data() + p.offset, kernel_params[i], p.size);
    }
    return CUDA_SUCCESS;
  }
  if (extra) {
    const void* buffer = nullptr;
    const size_t* size = nullptr;
    // Pairs of (tag, value) up to CU_LAUNCH_PARAM_END; bounded in case the
    // terminator is missing.
    for (int i = 0; i < 64; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_END) break;
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        buffer = extra[i + 1];
      } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        size = static_cast<const size_t*>(extra[i + 1]);
      } else {
        return CUDA_ERROR_INVALID_VALUE;
      }
      if (i + 2 >= 64) return CUDA_ERROR_INVALID_VALUE;
    }
    if (!buffer || !size || *size < k.param_bytes) return CUDA_ERROR_INVALID_VALUE;
    if (k.param_bytes) std::memcpy(out->data(), buffer, k.param_bytes);
    return CUDA_SUCCESS;
  }
  return k.params.empty() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult check_shape(const ptx::KernelInfo& k, Function& f, const LaunchShape& s) {
  const ptx::Dim3& g = s.grid;
  const ptx::Dim3& b = s.block;
  auto refuse = [&](const std::string& what) {
    char shape[96];
    std::snprintf(shape, sizeof shape, " (grid %ux%ux%u, block %ux%ux%u)", g.x, g.y, g.z, b.x, b.y, b.z);
    note_reason(CUDA_ERROR_INVALID_VALUE, "launch of kernel " + k.name + ": " + what + shape);
    return CUDA_ERROR_INVALID_VALUE;
  };
  if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z) return refuse("a grid or block dimension is 0");
  if (g.x > static_cast<uint32_t>(kSpec.max_grid_x) || g.y > static_cast<uint32_t>(kSpec.max_grid_y) ||
      g.z > static_cast<uint32_t>(kSpec.max_grid_z)) {
    return refuse("grid past the device's limits");
  }
  if (b.x > static_cast<uint32_t>(kSpec.max_block_x) || b.y > static_cast<uint32_t>(kSpec.max_block_y) ||
      b.z > static_cast<uint32_t>(kSpec.max_block_z) || b.count() > static_cast<uint64_t>(kSpec.max_threads_per_block)) {
    return refuse("block past the device's limits");
  }
  if (k.max_threads && b.count() > k.max_threads) {
    return refuse("block past the kernel's .maxntid of " + std::to_string(k.max_threads) + " threads");
  }
  if (s.shared_bytes > static_cast<unsigned>(f.max_dynamic_shared())) {
    return refuse(std::to_string(s.shared_bytes) + " bytes of dynamic shared memory, past the kernel's " +
                  std::to_string(f.max_dynamic_shared()));
  }
  return CUDA_SUCCESS;
}

CUresult enqueue_launch(Driver* d, const std::shared_ptr<Context>& ctx, const std::shared_ptr<Stream>& stream,
                        std::shared_ptr<Module> module, int kernel, const LaunchShape& shape,
                        std::vector<uint8_t> params) {
  KernelPool* pool = d->pool(ctx->device());
  ActivityClock* busy = &d->device(ctx->device())->kernels;
  std::shared_ptr<ContextState> state = ctx->state();
  uint64_t seq = ctx->enqueue(stream, {}, [d, pool, busy, state, module = std::move(module), kernel, shape,
                                           params = std::move(params)]() -> CUresult {
    // Kernels of a context that already faulted do not run, as on a GPU.
    if (state->sticky.load() != CUDA_SUCCESS) return static_cast<CUresult>(state->sticky.load());
    // Nor do kernels of a context being destroyed.
    if (state->cancel.load()) return CUDA_ERROR_LAUNCH_TIMEOUT;
    // While pinned, memory freed during the launch stays mapped, so an access
    // the checker allowed never faults on the host.
    std::vector<DeviceMemory::Pin> pins;
    for (int i = 0; i < d->device_count(); ++i) pins.push_back(d->device(i)->memory->pin());
    ptx::LaunchEnv env;
    env.variable_addresses = module->addresses();
    // Only memory of the context's own isolation group: another group's
    // allocation is as unmapped to this kernel as a freed one.
    env.checker = [d, group = state->group.load()](uint64_t addr, size_t size, bool) {
      // Warps mostly touch the allocation they touched last: answer those
      // without the memory's lock (the cache is exact, see CheckCache).
      thread_local DeviceMemory::CheckCache cache;
      Device* dev = d->device_of(addr);
      return dev && dev->memory->check(addr, size, group, &cache);
    };
    // The same check for compiled kernels, which keep the allocation it
    // found per instruction until the memory next releases anything.
    env.extent = [d, group = state->group.load()](uint64_t addr, size_t size, bool, ptx::MemoryExtent* out) {
      Device* dev = d->device_of(addr);
      if (!dev || !dev->memory->check_extent(addr, size, group, &out->lo, &out->hi, &out->seen)) return false;
      out->epoch = &dev->memory->releases();
      return true;
    };
    // A context with a compute share runs on that share of the workers, and
    // only when its turn comes (FairShare), so that shares hold even when
    // the host's cores are busy with other work.
    SharedPool shared(pool, share_of_workers(state->compute_share.load(), pool->concurrency()));
    env.pool = &shared;
    std::shared_ptr<FairShare> fair;
    uint64_t fair_id = 0;
    {
      std::lock_guard<std::mutex> lock(state->share_mu);
      fair = state->fair;
      fair_id = state->fair_id;
    }
    if (fair) {
      for (int64_t wait = fair->delay(fair_id); wait > 0; wait = fair->delay(fair_id)) {
        if (state->cancel.load()) return CUDA_ERROR_LAUNCH_TIMEOUT;
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(wait, kShareWaitStep)));
      }
    }
    if (fair) fair->start(fair_id);
    const int64_t cpu_before = fair ? thread_cpu_ns() : 0;
    env.cancel = &state->cancel;
    if (uint64_t ms = d->config().kernel_timeout_ms) {
      env.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    }
    {
      std::lock_guard<std::mutex> lock(state->printf_mu);
      if (auto* cb = state->printf_callback) {
        void* user = state->printf_user;
        env.printf_sink = [cb, user](std::string_view text) { cb(user, text.data(), text.size()); };
      }
      if (auto* cb = state->error_callback) {
        void* user = state->error_user;
        env.error_sink = [cb, user](std::string_view text) { cb(user, text.data(), text.size()); };
      }
    }
    const ptx::KernelInfo& k = module->program().kernels()[static_cast<size_t>(kernel)];
    RGPU_TRACE("cpudev launch kernel=%s grid=%ux%ux%u block=%ux%ux%u", k.name.c_str(), shape.grid.x, shape.grid.y,
               shape.grid.z, shape.block.x, shape.block.y, shape.block.z);
    ptx::LaunchResult r;
    {
      ActivityClock::Span running(busy);
      r = module->program().launch(kernel, shape.grid, shape.block, shape.shared_bytes, params.data(), params.size(),
                                   env);
    }
    // Compiling the kernel (once per program, shared by every slice) is
    // the device's cost, not this slice's.
    if (fair) {
      const int64_t used = thread_cpu_ns() - cpu_before - static_cast<int64_t>(r.compile_cpu_ns);
      fair->charge(fair_id, std::max<int64_t>(0, used) + shared.helper_cpu_ns());
    }
    if (r.ok()) return CUDA_SUCCESS;
    auto code = static_cast<CUresult>(ptx::cuda_error_code(r.fault));
    RGPU_ERROR("cpudev kernel fault kernel=%s fault=%s address=0x%llx detail=\"%s\"", k.name.c_str(),
               ptx::fault_name(r.fault), static_cast<unsigned long long>(r.address), r.message.c_str());
    {
      std::lock_guard<std::mutex> lock(state->printf_mu);
      if (auto* cb = state->reason_callback) {
        const std::string why = fault_reason(k.name, r);
        cb(state->reason_user, code, why.data(), why.size());
      }
    }
    if (sticky(r.fault)) {
      int expected = CUDA_SUCCESS;
      state->sticky.compare_exchange_strong(expected, code);
    }
    return code;
  });
  return seq ? CUDA_SUCCESS : capture_refusal();
}

}  // namespace rgpu::cpudev
