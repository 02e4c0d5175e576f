// Modules, functions and launches: images are parsed on the client for their
// kernels' parameter layouts, uploaded once per content hash, and launches
// are async calls carrying the marshalled parameter buffer.
#include <cstring>

#include "api_common.h"
#include "reasons.h"
#include "rgpu/common/log.h"

using rgpu::shim::Client;
using rgpu::shim::FunctionInfo;
using rgpu::shim::function_handle;
using rgpu::shim::handle_of;
using rgpu::shim::HandleKind;
using rgpu::shim::module_handle;
using rgpu::shim::Shim;
using rgpu::shim::SyncResult;
namespace fatbin = rgpu::fatbin;
namespace wire = rgpu::wire;

namespace {

// The compute capability of the current context's device, as 80 for 8.0,
// and whether it runs PTX only (rgpu's CPU device).
uint32_t current_sm(Shim* shim, uint64_t ctx, bool* ptx_only = nullptr) {
  rgpu::shim::ContextInfo info;
  if (!shim->context_info(ctx, &info)) return 0;
  const auto* d = shim->device(info.device);
  if (!d) return 0;
  if (ptx_only) *ptx_only = d->ptx_only;
  auto attr = [&](CUdevice_attribute a) { return a < static_cast<int>(d->attributes.size()) ? d->attributes[a] : 0; };
  return attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 + attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
}

int device_attribute(Shim* shim, uint64_t ctx, CUdevice_attribute a) {
  rgpu::shim::ContextInfo info;
  if (!shim->context_info(ctx, &info)) return 0;
  const auto* d = shim->device(info.device);
  return d && a < static_cast<int>(d->attributes.size()) ? d->attributes[a] : 0;
}

// Loads a module; `as` is the kind of handle the program gets back (a
// module, or a library, which names the same module by its serial).
CUresult load_module(void** out, const void* image, HandleKind as = HandleKind::kModule) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (!out || !image) return CUDA_ERROR_INVALID_VALUE;
  auto detected = fatbin::image_from_pointer(image);
  if (!detected.is_ok()) {
    RGPU_WARN("module image rejected: %s", detected.status().message().c_str());
    return CUDA_ERROR_INVALID_IMAGE;
  }
  fatbin::Bytes bytes = detected.value().bytes;
  bool ptx_only = false;
  const uint32_t sm = current_sm(shim, ctx, &ptx_only);
  const auto policy = ptx_only ? fatbin::SelectPolicy::kPtxOnly : fatbin::SelectPolicy::kCubinOrPtx;
  // A fatbin carries code for many architectures (PyTorch's: seven cubins
  // and a PTX); the device runs one entry, so only that one is sent, as a
  // fatbin of one entry. Its hash names it in the server's cache.
  fatbin::DeviceImage reduced;
  uint32_t arch = sm;
  if (detected.value().kind == fatbin::ImageKind::kFatbin) {
    auto picked = fatbin::image_for_device(bytes, sm, policy);
    if (!picked.is_ok()) {
      RGPU_WARN("module has no code for the device sm=%u ptx_only=%d reason=\"%s\"", sm, ptx_only,
                picked.status().message().c_str());
      return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    reduced = std::move(picked.value());
    bytes = fatbin::Bytes(reduced.image);
    arch = reduced.arch;
  }
  auto kernels = fatbin::kernels_from_image(bytes, arch, policy);
  if (!kernels.is_ok()) {
    RGPU_WARN("module has no usable code: %s", kernels.status().message().c_str());
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  fatbin::ContentHash hash = fatbin::content_hash(bytes);
  uint64_t handle = shim->mint_handle(HandleKind::kModule);
  Client& client = shim->client();
  auto load = [&](bool with_image) {
    rgpu::transport::Bytes payload;
    bool as_payload = with_image && bytes.size() > Client::kInlineLimit;
    if (as_payload) payload = rgpu::transport::Bytes(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
    return client.call_sync(
        ctx,
        [&](wire::Call::Builder c) {
          auto m = c.initModuleLoad();
          m.setHandle(handle);
          m.setHash(kj::arrayPtr(hash.bytes.data(), hash.bytes.size()));
          if (with_image) {
            m.setImageBytes(bytes.size());
            if (!as_payload) m.setImage(kj::arrayPtr(bytes.data(), bytes.size()));
          }
        },
        payload);
  };
  // The server usually has the image already (another process, an earlier
  // run): ask by hash first, send the bytes only when it lacks them.
  SyncResult r = load(false);
  const bool sent = r.result != CUDA_SUCCESS && r.need_image;
  if (sent) r = load(true);
  if (r.result != CUDA_SUCCESS) return r.result;
  auto& stats = client.stats();
  if (sent) {
    stats.modules_sent.fetch_add(1, std::memory_order_relaxed);
    stats.module_bytes_sent.fetch_add(bytes.size(), std::memory_order_relaxed);
  } else {
    stats.modules_cached.fetch_add(1, std::memory_order_relaxed);
  }
  shim->modules().add_module(handle, std::move(kernels.value()));
  *out = reinterpret_cast<void*>(rgpu::protocol::make_handle(as, rgpu::protocol::serial_of(handle)));
  return CUDA_SUCCESS;
  API_END
}

CUresult unload_module(uint64_t handle) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  handle = module_handle(handle);
  if (!shim->modules().remove_module(handle)) return CUDA_ERROR_INVALID_HANDLE;
  const rgpu::shim::Route route = shim->route_handle(handle, rgpu::shim::current_context());
  route.client->call_async(route.ctx, [&](wire::Call::Builder c) { c.initModuleUnload().setHandle(handle); });
  return CUDA_SUCCESS;
  API_END
}

}  // namespace

namespace rgpu::shim {

CUresult kernel_params(const fatbin::KernelInfo& k, void** params, void** extra, std::vector<unsigned char>* packed,
                       const void** buffer, size_t* size) {
  *buffer = nullptr;
  *size = 0;
  if (params) {
    packed->assign(k.param_size, 0);
    for (const auto& p : k.params) {
      if (!params[p.ordinal] || p.offset + p.size > packed->size()) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(packed->data() + p.offset, params[p.ordinal], p.size);
    }
    *buffer = packed->data();
    *size = packed->size();
  } else if (extra) {
    const size_t* size_ptr = nullptr;
    for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        *buffer = extra[i + 1];
      } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        size_ptr = static_cast<const size_t*>(extra[i + 1]);
      } else {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
    if (!*buffer || !size_ptr) return CUDA_ERROR_INVALID_VALUE;
    *size = *size_ptr;
  } else if (!k.params.empty()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult function_params(CUfunction f, void** params, void** extra, std::vector<unsigned char>* packed,
                         std::vector<size_t>* offsets) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  FunctionInfo info;
  if (!shim->modules().function(function_handle(handle_of(f)), &info)) return CUDA_ERROR_INVALID_HANDLE;
  const void* buffer = nullptr;
  size_t size = 0;
  std::vector<unsigned char> own;
  if (CUresult r = kernel_params(info.kernel, params, extra, &own, &buffer, &size); r != CUDA_SUCCESS) return r;
  packed->assign(static_cast<const unsigned char*>(buffer), static_cast<const unsigned char*>(buffer) + size);
  offsets->clear();
  if (params) {
    offsets->assign(info.kernel.params.size(), 0);
    for (const auto& p : info.kernel.params) {
      if (p.ordinal < offsets->size()) (*offsets)[p.ordinal] = p.offset;
    }
  }
  return CUDA_SUCCESS;
  API_END
}

}  // namespace rgpu::shim

namespace {

// Gets a function; `as` is the kind of handle the program gets back (a
// function, or a kernel, which names the same function by its serial).
CUresult get_function(void** out, uint64_t module, const char* name, HandleKind as = HandleKind::kFunction) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  module = module_handle(module);
  if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
  if (!shim->modules().has_module(module)) return CUDA_ERROR_INVALID_HANDLE;
  auto kernel = shim->modules().kernel(module, name);
  if (!kernel) return CUDA_ERROR_NOT_FOUND;
  // The function lives where its module does.
  const rgpu::shim::Route route = shim->route_handle(module, ctx);
  uint64_t handle = shim->mint_handle(HandleKind::kFunction, route.server);
  shim->modules().add_function(handle, FunctionInfo{module, std::move(*kernel), {}, CUDA_SUCCESS, {}});
  route.client->call_async(route.ctx, [&](wire::Call::Builder c) {
    auto g = c.initModuleGetFunction();
    g.setModule(module);
    g.setHandle(handle);
    g.setName(name);
  });
  *out = reinterpret_cast<void*>(rgpu::protocol::make_handle(as, rgpu::protocol::serial_of(handle)));
  return CUDA_SUCCESS;
  API_END
}

// The function's attributes, fetched in one round trip the first time.
CUresult function_attributes(Shim* shim, uint64_t ctx, uint64_t f, FunctionInfo* info) {
  f = function_handle(f);
  if (!shim->modules().function(f, info)) return CUDA_ERROR_INVALID_HANDLE;
  if (!info->attributes.empty()) return CUDA_SUCCESS;
  const rgpu::shim::Route route = shim->route_handle(f, ctx);
  SyncResult r =
      route.client->call_sync(route.ctx, [&](wire::Call::Builder c) { c.initFuncGetAttributes().setHandle(f); });
  if (r.result != CUDA_SUCCESS) return r.result;
  // Every attribute, then whether a launch is refused (one value).
  if (r.values.size() != CU_FUNC_ATTRIBUTE_MAX + 1) return CUDA_ERROR_UNKNOWN;
  std::vector<std::optional<int>> attrs;
  for (size_t a = 0; a < CU_FUNC_ATTRIBUTE_MAX; ++a) {
    const uint64_t v = r.values[a];
    attrs.push_back(v >> 63 ? std::nullopt : std::optional<int>(static_cast<int32_t>(static_cast<uint32_t>(v))));
  }
  const auto refusal = static_cast<CUresult>(r.values[CU_FUNC_ATTRIBUTE_MAX]);
  std::string why = refusal == CUDA_SUCCESS ? std::string() : std::move(r.reason);
  shim->modules().set_attributes(f, attrs, refusal, why);
  info->attributes = std::move(attrs);
  info->refusal = refusal;
  info->refusal_reason = std::move(why);
  return CUDA_SUCCESS;
}

// Launch configurations a GPU refuses at once are refused here too, before
// anything is queued, so the error comes from the launch call itself.
CUresult check_launch_shape(Shim* shim, uint64_t ctx, const unsigned grid[3], const unsigned block[3],
                            unsigned shared) {
  static const CUdevice_attribute kGrid[3] = {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                                              CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
  static const CUdevice_attribute kBlock[3] = {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
                                               CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
                                               CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z};
  uint64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0 || block[i] == 0) return CUDA_ERROR_INVALID_VALUE;
    int gmax = device_attribute(shim, ctx, kGrid[i]);
    int bmax = device_attribute(shim, ctx, kBlock[i]);
    if ((gmax > 0 && grid[i] > static_cast<unsigned>(gmax)) || (bmax > 0 && block[i] > static_cast<unsigned>(bmax))) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    threads *= block[i];
  }
  int tmax = device_attribute(shim, ctx, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  if (tmax > 0 && threads > static_cast<uint64_t>(tmax)) return CUDA_ERROR_INVALID_VALUE;
  int smax = device_attribute(shim, ctx, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  if (smax > 0 && shared > static_cast<unsigned>(smax)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// A kernel its server cannot run (the CPU device refuses some instructions)
// is refused by the launch call itself, as a GPU refuses a kernel it has no
// image for: the first launch of each function asks its server once, with
// the attributes. Sent on, the launch would fail only at a later call, one
// the program may not check: a result never computed, reported nowhere.
CUresult check_launchable(Shim* shim, uint64_t ctx, uint64_t f, FunctionInfo* info) {
  if (info->attributes.empty()) {
    if (CUresult r = function_attributes(shim, ctx, f, info); r != CUDA_SUCCESS) return r;
  }
  if (info->refusal == CUDA_SUCCESS) return CUDA_SUCCESS;
  const rgpu::shim::Route route = shim->route_handle(f, ctx);
  rgpu::shim::report_reason(route.client->options().server, wire::Api::DRIVER, info->refusal,
                            "cuLaunchKernel: " + info->refusal_reason);
  return info->refusal;
}

CUresult launch(uint64_t f, const unsigned grid[3], const unsigned block[3], unsigned shared, CUstream stream,
                void** params, void** extra) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  f = function_handle(f);
  FunctionInfo info;
  if (!shim->modules().function(f, &info)) return CUDA_ERROR_INVALID_HANDLE;
  STREAM_OR_RETURN(shim, stream, s);
  if (CUresult r = check_launch_shape(shim, ctx, grid, block, shared); r != CUDA_SUCCESS) return r;
  if (CUresult r = check_launchable(shim, ctx, f, &info); r != CUDA_SUCCESS) return r;
  const void* buffer = nullptr;
  size_t size = 0;
  std::vector<unsigned char> packed;
  if (CUresult r = rgpu::shim::kernel_params(info.kernel, params, extra, &packed, &buffer, &size); r != CUDA_SUCCESS) {
    return r;
  }
  // On the function's server (its module's context, as the driver requires).
  const rgpu::shim::Route route = shim->route_handle(f, ctx);
  route.client->call_async(route.ctx, [&](wire::Call::Builder c) {
    auto l = c.initLaunchKernel();
    l.setFunction(f);
    l.setGridX(grid[0]);
    l.setGridY(grid[1]);
    l.setGridZ(grid[2]);
    l.setBlockX(block[0]);
    l.setBlockY(block[1]);
    l.setBlockZ(block[2]);
    l.setSharedMem(shared);
    l.setStream(s);
    if (size > 0) l.setParams(kj::arrayPtr(static_cast<const capnp::byte*>(buffer), size));
  });
  return CUDA_SUCCESS;
  API_END
}

CUresult launch_ex(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  if (!config) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    // Placement hints that do not change results are accepted; the rest are not yet.
    switch (config->attrs[i].id) {
      case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      // Programmatic dependent launch only allows this kernel to start before
      // the previous one on its stream has finished (its griddepcontrol.wait
      // then waits); launched after it, as the server does, is one of the
      // orders it allows. CUB's merge sort (thrust::sort with a comparator)
      // asks for it.
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        break;
      default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  const unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
  const unsigned block[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
  return launch(handle_of(f), grid, block, config->sharedMemBytes, config->hStream, params, extra);
}

CUresult launch_host_func(CUstream stream, CUhostFn fn, void* data) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  STREAM_OR_RETURN(shim, stream, s);
  const rgpu::shim::Route route = shim->route_handle(s, ctx);
  bool recorded = false;
  CUresult e = rgpu::shim::capture_host_step(*route.client, route.ctx, s, rgpu::protocol::HostStepKind::kRun, fn,
                                             data, nullptr, 0, 0, &recorded);
  if (e != CUDA_SUCCESS || recorded) return e;
  route.client->host_func_async(route.ctx, s, fn, data);
  return CUDA_SUCCESS;
  API_END
}

// Resident blocks per multiprocessor, from the limits every NVIDIA GPU
// reports: threads, registers, shared memory and the block cap.
int occupancy(Shim* shim, uint64_t ctx, const FunctionInfo& info, int block_size, size_t dynamic_shared) {
  auto attr = [&](CUfunction_attribute a) {
    return static_cast<size_t>(a) < info.attributes.size() && info.attributes[a] ? *info.attributes[a] : 0;
  };
  int warp = std::max(1, device_attribute(shim, ctx, CU_DEVICE_ATTRIBUTE_WARP_SIZE));
  int max_threads_fn = attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  if (block_size <= 0 || (max_threads_fn > 0 && block_size > max_threads_fn)) return 0;
  int threads_sm = device_attribute(shim, ctx, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  int blocks_sm = device_attribute(shim, ctx, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  int regs_sm = device_attribute(shim, ctx, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  int shared_sm = device_attribute(shim, ctx, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  int rounded = (block_size + warp - 1) / warp * warp;
  int blocks = threads_sm > 0 ? threads_sm / rounded : 1;
  if (blocks_sm > 0) blocks = std::min(blocks, blocks_sm);
  int regs = attr(CU_FUNC_ATTRIBUTE_NUM_REGS);
  if (regs > 0 && regs_sm > 0) blocks = std::min(blocks, regs_sm / (regs * rounded));
  size_t shared = static_cast<size_t>(attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)) + dynamic_shared;
  if (shared > 0 && shared_sm > 0) blocks = std::min<int>(blocks, static_cast<int>(shared_sm / shared));
  return std::max(blocks, 0);
}

}  // namespace

// ---- modules -------------------------------------------------------------------

RGPU_EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  return load_module(reinterpret_cast<void**>(module), image);
}
RGPU_EXPORT CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int, CUjit_option*,
                                                void**) {
  // JIT options only tune or report a compilation rgpu does not do here.
  return load_module(reinterpret_cast<void**>(module), image);
}
RGPU_EXPORT CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule* module, const void* fatbin) {
  return load_module(reinterpret_cast<void**>(module), fatbin);
}
RGPU_EXPORT CUresult CUDAAPI cuModuleUnload(CUmodule module) { return unload_module(handle_of(module)); }

RGPU_EXPORT CUresult CUDAAPI cuModuleGetFunction(CUfunction* f, CUmodule module, const char* name) {
  return get_function(reinterpret_cast<void**>(f), handle_of(module), name);
}

RGPU_EXPORT CUresult CUDAAPI cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule module,
                                                  const char* name) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t m = module_handle(handle_of(module));
  if (!shim->modules().has_module(m)) return CUDA_ERROR_INVALID_HANDLE;
  const rgpu::shim::Route route = shim->route_handle(m, ctx);
  SyncResult r = route.client->call_sync(route.ctx, [&](wire::Call::Builder c) {
    auto g = c.initModuleGetGlobal();
    g.setModule(m);
    g.setName(name);
  });
  if (r.result != CUDA_SUCCESS || r.values.size() != 2) return r.result;
  // A module variable is routed by its address like an allocation.
  if (CUresult t = shim->track_allocation(route.server, r.values[0], r.values[1], route.ctx); t != CUDA_SUCCESS) {
    return t;
  }
  if (dptr) *dptr = r.values[0];
  if (bytes) *bytes = r.values[1];
  return CUDA_SUCCESS;
  API_END
}

// ---- libraries: a library is a module loaded into the current context ----------

RGPU_EXPORT CUresult CUDAAPI cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option*, void**,
                                               unsigned int, CUlibraryOption*, void**, unsigned int) {
  return load_module(reinterpret_cast<void**>(library), code, HandleKind::kLibrary);
}
RGPU_EXPORT CUresult CUDAAPI cuLibraryUnload(CUlibrary library) { return unload_module(handle_of(library)); }
RGPU_EXPORT CUresult CUDAAPI cuLibraryGetModule(CUmodule* module, CUlibrary library) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!module) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t h = handle_of(library);
  if (!rgpu::protocol::is_kind(h, HandleKind::kLibrary) || !shim->modules().has_module(module_handle(h))) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  *module = reinterpret_cast<CUmodule>(module_handle(h));
  return CUDA_SUCCESS;
  API_END
}
RGPU_EXPORT CUresult CUDAAPI cuLibraryGetKernel(CUkernel* kernel, CUlibrary library, const char* name) {
  if (!rgpu::protocol::is_kind(handle_of(library), HandleKind::kLibrary)) return CUDA_ERROR_INVALID_HANDLE;
  return get_function(reinterpret_cast<void**>(kernel), handle_of(library), name, HandleKind::kKernel);
}
RGPU_EXPORT CUresult CUDAAPI cuKernelGetFunction(CUfunction* f, CUkernel kernel) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  if (!f) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t h = handle_of(kernel);
  if (!rgpu::protocol::is_kind(h, HandleKind::kKernel) || !shim->modules().function(function_handle(h), nullptr)) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  *f = reinterpret_cast<CUfunction>(function_handle(h));  // a kernel is launched as its function
  return CUDA_SUCCESS;
  API_END
}

// ---- functions -----------------------------------------------------------------

RGPU_EXPORT CUresult CUDAAPI cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction f) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  FunctionInfo info;
  if (CUresult r = function_attributes(shim, ctx, handle_of(f), &info); r != CUDA_SUCCESS) return r;
  size_t a = static_cast<size_t>(attribute);
  if (a >= info.attributes.size() || !info.attributes[a]) return CUDA_ERROR_INVALID_VALUE;
  *value = *info.attributes[a];
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuFuncSetAttribute(CUfunction f, CUfunction_attribute attribute, int value) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  const uint64_t h = function_handle(handle_of(f));
  if (!shim->modules().function(h, nullptr)) return CUDA_ERROR_INVALID_HANDLE;
  shim->modules().set_attribute(h, attribute, value);
  const rgpu::shim::Route route = shim->route_handle(h, ctx);
  route.client->call_async(route.ctx, [&](wire::Call::Builder c) {
    auto a = c.initFuncSetAttribute();
    a.setFunction(h);
    a.setAttribute(attribute);
    a.setValue(value);
  });
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuFuncGetParamInfo(CUfunction f, size_t index, size_t* offset, size_t* size) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  FunctionInfo info;
  if (!shim->modules().function(function_handle(handle_of(f)), &info)) return CUDA_ERROR_INVALID_HANDLE;
  if (index >= info.kernel.params.size()) return CUDA_ERROR_INVALID_VALUE;
  if (offset) *offset = info.kernel.params[index].offset;
  if (size) *size = info.kernel.params[index].size;
  return CUDA_SUCCESS;
  API_END
}

// ---- launches ------------------------------------------------------------------

RGPU_EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                            unsigned by, unsigned bz, unsigned shared, CUstream s, void** params,
                                            void** extra) {
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  return launch(handle_of(f), grid, block, shared, s, params, extra);
}
RGPU_EXPORT CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                                              void** extra) {
  return launch_ex(config, f, params, extra);
}
RGPU_EXPORT CUresult CUDAAPI cuLaunchHostFunc(CUstream s, CUhostFn fn, void* data) {
  return launch_host_func(s, fn, data);
}

// ---- occupancy: computed locally from attributes -------------------------------

RGPU_EXPORT CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction f, int block_size,
                                                                         size_t dynamic_shared) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (!blocks) return CUDA_ERROR_INVALID_VALUE;
  FunctionInfo info;
  if (CUresult r = function_attributes(shim, ctx, handle_of(f), &info); r != CUDA_SUCCESS) return r;
  *blocks = occupancy(shim, ctx, info, block_size, dynamic_shared);
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int* min_grid, int* block_size, CUfunction f,
                                                              CUoccupancyB2DSize b2d, size_t dynamic_shared,
                                                              int limit) {
  API_BEGIN
  SHIM_OR_RETURN(shim);
  CONTEXT_OR_RETURN(shim, ctx);
  if (!min_grid || !block_size) return CUDA_ERROR_INVALID_VALUE;
  FunctionInfo info;
  if (CUresult r = function_attributes(shim, ctx, handle_of(f), &info); r != CUDA_SUCCESS) return r;
  int warp = std::max(1, device_attribute(shim, ctx, CU_DEVICE_ATTRIBUTE_WARP_SIZE));
  int max_block = device_attribute(shim, ctx, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  if (info.attributes.size() > CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK &&
      info.attributes[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK]) {
    max_block = std::min(max_block, *info.attributes[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK]);
  }
  if (limit > 0) max_block = std::min(max_block, limit);
  int best_size = 0, best_threads = -1, best_blocks = 0;
  for (int size = max_block / warp * warp; size >= warp; size -= warp) {
    size_t shared = b2d ? b2d(size) : dynamic_shared;
    int blocks = occupancy(shim, ctx, info, size, shared);
    if (blocks * size > best_threads) {
      best_threads = blocks * size;
      best_size = size;
      best_blocks = blocks;
    }
  }
  *block_size = best_size;
  *min_grid = best_blocks * device_attribute(shim, ctx, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  return CUDA_SUCCESS;
  API_END
}
