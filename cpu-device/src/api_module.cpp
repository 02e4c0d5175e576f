// Entry points: modules, functions and their attributes.
#include <algorithm>
#include <cstring>
#include <string>

#include "api_common.h"
#include "errors.h"
#include "rgpu/common/log.h"
#include "spec.h"

using namespace rgpu::cpudev;

namespace {

CUresult load(CUmodule* module, const void* image) {
  return guarded([&] {
    Driver* d;
    std::shared_ptr<Context> ctx;
    RGPU_CU_TRY(enter(&d, &ctx));
    if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
    std::shared_ptr<Module> m;
    RGPU_CU_TRY(d->load_module(ctx, image, &m));
    *module = to_handle<CUmodule>(m->handle());
    return CUDA_SUCCESS;
  });
}

// CU_FUNC_ATTRIBUTE_PTX_VERSION is the virtual architecture the PTX was
// compiled for (compute_90 -> 90), not the ISA's .version (8.4): CUB's host
// code picks its tuning policy from it (cub::PtxVersion), and its device code
// was compiled with the policy of that architecture, so the two must agree or
// a kernel runs with another block size and tile size than it was built for.
// `target` is the module's .target: "sm_90", "sm_90a", "sm_100f", ...
int ptx_arch(const std::string& target) {
  if (target.compare(0, 3, "sm_") != 0) return 0;
  int v = 0;
  for (size_t i = 3; i < target.size() && i < 7 && target[i] >= '0' && target[i] <= '9'; ++i) v = v * 10 + (target[i] - '0');
  return v;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) { return load(module, image); }

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                                    CUjit_option* options, void** optionValues) {
  // JIT options tune a compiler the CPU device does not have; they are accepted and ignored.
  if (numOptions > 0 && (!options || !optionValues)) return CUDA_ERROR_INVALID_VALUE;
  return load(module, image);
}

CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) { return load(module, fatCubin); }

CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    return d->unload_module(reinterpret_cast<uint64_t>(hmod));
  });
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (!hfunc || !name) return CUDA_ERROR_INVALID_VALUE;
    auto m = d->module(reinterpret_cast<uint64_t>(hmod));
    if (!m) return CUDA_ERROR_INVALID_HANDLE;
    int index = m->program().find_kernel(name);
    if (index < 0) return CUDA_ERROR_NOT_FOUND;
    // Kernels are decoded on first use: this is where a malformed body shows.
    if (rgpu::Status s = m->program().prepare(index); !s.is_ok()) {
      RGPU_WARN("cpudev kernel rejected kernel=%s reason=\"%s\"", name, s.message().c_str());
      note_reason(CUDA_ERROR_INVALID_PTX, std::string("kernel ") + name + " cannot be loaded: " + s.message());
      return CUDA_ERROR_INVALID_PTX;
    }
    auto f = d->function_of(m, index);
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    *hfunc = to_handle<CUfunction>(f->handle());
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    auto m = d->module(reinterpret_cast<uint64_t>(hmod));
    if (!m) return CUDA_ERROR_INVALID_HANDLE;
    int index = m->program().find_variable(name);
    if (index < 0 || m->addresses()[static_cast<size_t>(index)] == 0) return CUDA_ERROR_NOT_FOUND;
    if (dptr) *dptr = m->addresses()[static_cast<size_t>(index)];
    if (bytes) *bytes = m->program().variables()[static_cast<size_t>(index)].size;
    return CUDA_SUCCESS;
  });
}

// The name stays valid while the function's module is loaded, as CUDA says.
CUresult CUDAAPI cuFuncGetName(const char** name, CUfunction hfunc) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    auto f = d->function(reinterpret_cast<uint64_t>(hfunc));
    auto m = f ? f->module() : nullptr;
    if (!m) return CUDA_ERROR_INVALID_HANDLE;
    *name = m->program().kernels()[static_cast<size_t>(f->index())].name.c_str();
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (!pi) return CUDA_ERROR_INVALID_VALUE;
    auto f = d->function(reinterpret_cast<uint64_t>(hfunc));
    auto m = f ? f->module() : nullptr;
    if (!m) return CUDA_ERROR_INVALID_HANDLE;
    const rgpu::ptx::KernelInfo& k = m->program().kernels()[static_cast<size_t>(f->index())];
    switch (attrib) {
      case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = static_cast<int>(std::min<uint32_t>(k.max_threads, kSpec.max_threads_per_block)); break;
      case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = static_cast<int>(k.static_shared_bytes); break;
      case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *pi = static_cast<int>(m->const_bytes()); break;
      case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = static_cast<int>(k.local_bytes); break;
      // The interpreter's register slots have no hardware limit (PTX declares
      // thousands of virtual registers); occupancy calculators divide the
      // register file by this, so report at most the registers per
      // multiprocessor over its threads (65536 / 2048 = 32),
      // which never limits occupancy (0 made CUB launch empty grids).
      case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = static_cast<int>(std::min<uint32_t>(
          k.num_regs, kSpec.registers_per_multiprocessor / kSpec.max_threads_per_multiprocessor)); break;
      case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = ptx_arch(m->program().target()); break;
      case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = static_cast<int>(kSpec.sm()); break;
      case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *pi = 0; break;
      case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = f->max_dynamic_shared(); break;
      case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = -1; break;
      case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
      case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
      case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
      case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
      case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
      case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: *pi = 0; break;
      default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    auto f = d->function(reinterpret_cast<uint64_t>(hfunc));
    auto m = f ? f->module() : nullptr;
    if (!m) return CUDA_ERROR_INVALID_HANDLE;
    const rgpu::ptx::KernelInfo& k = m->program().kernels()[static_cast<size_t>(f->index())];
    switch (attrib) {
      case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: {
        if (value < 0 || static_cast<int64_t>(value) + k.static_shared_bytes > kSpec.shared_per_block_optin) return CUDA_ERROR_INVALID_VALUE;
        f->set_max_dynamic_shared(value);
        return CUDA_SUCCESS;
      }
      case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        return value >= -1 && value <= 100 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
  });
}

}  // extern "C"

extern "C" __attribute__((visibility("default"))) CUresult rgpuModuleGetMemoryBytes(CUmodule hmod,
                                                                                   unsigned long long* bytes) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    auto m = d->module(reinterpret_cast<uint64_t>(hmod));
    if (!m) return CUDA_ERROR_INVALID_HANDLE;
    *bytes = m->memory_bytes();
    return CUDA_SUCCESS;
  });
}

extern "C" __attribute__((visibility("default"))) CUresult rgpuFuncGetLaunchRefusal(CUfunction hfunc, CUresult* refusal,
                                                                                   char* text, size_t size,
                                                                                   size_t* length) {
  return guarded([&] {
    Driver* d;
    RGPU_CU_TRY(enter(&d));
    if (!refusal || !text || size == 0 || !length) return CUDA_ERROR_INVALID_VALUE;
    auto f = d->function(reinterpret_cast<uint64_t>(hfunc));
    auto m = f ? f->module() : nullptr;
    if (!m) return CUDA_ERROR_INVALID_HANDLE;
    const std::string why = f->launch_refusal(*m);
    *refusal = why.empty() ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
    *length = std::min(why.size(), size - 1);
    std::memcpy(text, why.data(), *length);
    text[*length] = '\0';
    return CUDA_SUCCESS;
  });
}
