// The runtime's process state, error recording and the calling thread's
// device and context.
#include <algorithm>

#include "../unimplemented.h"
#include "mempool.h"
#include "rgpu/common/log.h"
#include "runtime.h"

namespace rgpu::runtime {
namespace {

thread_local cudaError_t t_last_error = cudaSuccess;
thread_local int t_device = 0;
thread_local bool t_device_chosen = false;
thread_local CUcontext t_bound = nullptr;

// Faults after which a context is unusable until reset, as on a GPU.
bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
      return true;
    default:
      return false;
  }
}

template <class T>
void grow(std::vector<T>& v, int device, T fill) {
  if (device >= 0 && static_cast<size_t>(device) >= v.size()) v.resize(device + 1, fill);
}

}  // namespace

Runtime& state() {
  // Never destroyed: the program's exit handlers (__cudaUnregisterFatBinary)
  // may run after this library's destructors would.
  static Runtime* const runtime = new Runtime();
  return *runtime;
}

// ---- registration -------------------------------------------------------------

FatBinary* Runtime::add_binary(const void* wrapper) {
  auto b = std::make_unique<FatBinary>();
  b->wrapper = wrapper;
  std::lock_guard<std::mutex> lock(mu_);
  binaries_.push_back(std::move(b));
  return binaries_.back().get();
}

bool Runtime::is_binary(const FatBinary* binary) {
  std::lock_guard<std::mutex> lock(mu_);
  return std::any_of(binaries_.begin(), binaries_.end(), [&](const auto& b) { return b.get() == binary; });
}

void Runtime::remove_binary(FatBinary* binary) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(binaries_.begin(), binaries_.end(), [&](const auto& b) { return b.get() == binary; });
  if (it == binaries_.end()) return;
  for (const auto& k : binary->kernels) {
    kernels_.erase(k.get());
    auto h = by_host_.find(k->host_function);
    if (h != by_host_.end() && h->second == k.get()) by_host_.erase(h);
  }
  for (const auto& [host, var] : binary->variables) {
    auto v = variable_owner_.find(host);
    if (v != variable_owner_.end() && v->second == binary) variable_owner_.erase(v);
  }
  // The modules go with the session; unloading them here would talk to a
  // server that may already be gone at exit.
  binaries_.erase(it);
}

void Runtime::add_kernel(FatBinary* binary, const void* host_function, const char* name) {
  auto k = std::make_unique<Kernel>();
  k->binary = binary;
  k->host_function = host_function;
  k->name = name;
  std::lock_guard<std::mutex> lock(mu_);
  by_host_[host_function] = k.get();
  kernels_.insert(k.get());
  binary->kernels.push_back(std::move(k));
}

void Runtime::add_variable(FatBinary* binary, const void* host_var, const char* name, size_t size, bool constant) {
  std::lock_guard<std::mutex> lock(mu_);
  binary->variables[host_var] = Variable{name, size, constant};
  variable_owner_[host_var] = binary;
}

Kernel* Runtime::kernel_by_host(const void* host_function) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_host_.find(host_function);
  return it == by_host_.end() ? nullptr : it->second;
}

bool Runtime::is_kernel(const Kernel* k) {
  if (!k) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return kernels_.count(k) > 0;
}

namespace {

// Loads `binary`'s module on `device` (the device's context is current).
cudaError_t module_locked(FatBinary* binary, int device, CUmodule* out) {
  grow(binary->modules, device, static_cast<CUmodule>(nullptr));
  if (!binary->modules[device]) {
    CUmodule m = nullptr;
    CUresult r = cuModuleLoadData(&m, binary->wrapper);
    if (r != CUDA_SUCCESS) {
      // Not a warning of its own: the result may be an earlier async call's
      // (a refused launch reports at the next sync call, which may be this
      // load), and the server's reason, printed as it arrives, says which.
      RGPU_DEBUG("runtime module load answered device=%d result=%d", device, static_cast<int>(r));
      return r == CUDA_ERROR_NO_BINARY_FOR_GPU ? cudaErrorNoKernelImageForDevice : to_cuda_error(r);
    }
    binary->modules[device] = m;
  }
  *out = binary->modules[device];
  return cudaSuccess;
}

}  // namespace

cudaError_t Runtime::function(Kernel* k, int device, CUfunction* out) {
  std::lock_guard<std::mutex> lock(mu_);
  grow(k->functions, device, static_cast<CUfunction>(nullptr));
  if (!k->functions[device]) {
    CUmodule m = nullptr;
    if (cudaError_t e = module_locked(k->binary, device, &m); e != cudaSuccess) return e;
    CUfunction f = nullptr;
    CUresult r = cuModuleGetFunction(&f, m, k->name.c_str());
    if (r != CUDA_SUCCESS) return r == CUDA_ERROR_NOT_FOUND ? cudaErrorInvalidDeviceFunction : to_cuda_error(r);
    k->functions[device] = f;
  }
  *out = k->functions[device];
  return cudaSuccess;
}

cudaError_t Runtime::variable(const void* host_var, int device, CUdeviceptr* ptr, size_t* size) {
  std::lock_guard<std::mutex> lock(mu_);
  auto owner = variable_owner_.find(host_var);
  if (owner == variable_owner_.end()) return cudaErrorInvalidSymbol;
  FatBinary* binary = owner->second;
  CUmodule m = nullptr;
  if (cudaError_t e = module_locked(binary, device, &m); e != cudaSuccess) return e;
  const Variable& v = binary->variables[host_var];
  CUdeviceptr p = 0;
  size_t bytes = 0;
  CUresult r = cuModuleGetGlobal(&p, &bytes, m, v.name.c_str());
  if (r != CUDA_SUCCESS) return r == CUDA_ERROR_NOT_FOUND ? cudaErrorInvalidSymbol : to_cuda_error(r);
  *ptr = p;
  *size = bytes;
  device_ranges_[p] = DeviceRange{bytes, device};
  return cudaSuccess;
}

void Runtime::forget_device(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& b : binaries_) {
    if (static_cast<size_t>(device) < b->modules.size()) b->modules[device] = nullptr;
    for (auto& k : b->kernels) {
      if (static_cast<size_t>(device) < k->functions.size()) k->functions[device] = nullptr;
    }
  }
  for (auto it = device_ranges_.begin(); it != device_ranges_.end();) {
    it = it->second.device == device ? device_ranges_.erase(it) : std::next(it);
  }
}

// ---- primary contexts, flags, allocations, sticky error ---------------------------

cudaError_t Runtime::primary(int device, CUcontext* out) {
  std::lock_guard<std::mutex> lock(mu_);
  grow(primary_, device, static_cast<CUcontext>(nullptr));
  grow(device_flags_, device, 0u);
  if (!primary_[device]) {
    if (device_flags_[device] != 0) cuDevicePrimaryCtxSetFlags(device, device_flags_[device]);
    CUcontext c = nullptr;
    CUresult r = cuDevicePrimaryCtxRetain(&c, device);
    if (r != CUDA_SUCCESS) return to_cuda_error(r);
    primary_[device] = c;
  }
  *out = primary_[device];
  return cudaSuccess;
}

bool Runtime::primary_held(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  return device >= 0 && static_cast<size_t>(device) < primary_.size() && primary_[device] != nullptr;
}

void Runtime::drop_primary(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (device >= 0 && static_cast<size_t>(device) < primary_.size()) primary_[device] = nullptr;
}

unsigned Runtime::device_flags(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  return device >= 0 && static_cast<size_t>(device) < device_flags_.size() ? device_flags_[device] : 0;
}

void Runtime::set_device_flags(int device, unsigned flags) {
  std::lock_guard<std::mutex> lock(mu_);
  grow(device_flags_, device, 0u);
  device_flags_[device] = flags;
}

void Runtime::add_device_range(uint64_t base, size_t size, int device) {
  std::lock_guard<std::mutex> lock(mu_);
  device_ranges_[base] = DeviceRange{size, device};
}

bool Runtime::remove_device_range(uint64_t base) {
  std::lock_guard<std::mutex> lock(mu_);
  return device_ranges_.erase(base) > 0;
}

bool Runtime::find_device_range(uint64_t ptr, uint64_t* base, int* device) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = device_ranges_.upper_bound(ptr);
  if (it == device_ranges_.begin()) return false;
  --it;
  if (ptr >= it->first + std::max<size_t>(it->second.size, 1)) return false;
  if (base) *base = it->first;
  if (device) *device = it->second.device;
  return true;
}

void Runtime::add_host_range(const void* base, size_t size, unsigned flags, bool registered) {
  std::lock_guard<std::mutex> lock(mu_);
  host_ranges_[base] = HostRange{size, flags, registered};
}

bool Runtime::remove_host_range(const void* base, bool* registered) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = host_ranges_.find(base);
  if (it == host_ranges_.end()) return false;
  *registered = it->second.registered;
  host_ranges_.erase(it);
  return true;
}

bool Runtime::find_host_range(const void* ptr, const void** base, unsigned* flags) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = host_ranges_.upper_bound(ptr);
  if (it == host_ranges_.begin()) return false;
  --it;
  auto p = reinterpret_cast<uintptr_t>(ptr), b = reinterpret_cast<uintptr_t>(it->first);
  if (p >= b + std::max<size_t>(it->second.size, 1)) return false;
  if (base) *base = it->first;
  if (flags) *flags = it->second.flags;
  return true;
}

void Runtime::set_stream_priority(cudaStream_t s, int priority) {
  std::lock_guard<std::mutex> lock(mu_);
  stream_priorities_[s] = priority;
}

bool Runtime::stream_priority(cudaStream_t s, int* priority) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = stream_priorities_.find(s);
  if (it == stream_priorities_.end()) return false;
  *priority = it->second;
  return true;
}

void Runtime::forget_stream(cudaStream_t s) {
  std::lock_guard<std::mutex> lock(mu_);
  stream_priorities_.erase(s);
}

MemPools& Runtime::pools() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!pools_) pools_ = std::make_unique<MemPools>();
  return *pools_;
}

cudaError_t Runtime::sticky() {
  std::lock_guard<std::mutex> lock(mu_);
  return sticky_;
}

void Runtime::set_sticky(cudaError_t e) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sticky_ == cudaSuccess) sticky_ = e;
}

void Runtime::clear_sticky() {
  std::lock_guard<std::mutex> lock(mu_);
  sticky_ = cudaSuccess;
}

// ---- errors ------------------------------------------------------------------------

cudaError_t to_cuda_error(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
    case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
    case CUDA_ERROR_DEINITIALIZED: return cudaErrorCudartUnloading;
    case CUDA_ERROR_NO_DEVICE: return cudaErrorNoDevice;
    case CUDA_ERROR_INVALID_DEVICE: return cudaErrorInvalidDevice;
    case CUDA_ERROR_DEVICE_UNAVAILABLE: return cudaErrorDevicesUnavailable;
    case CUDA_ERROR_INVALID_IMAGE: return cudaErrorInvalidKernelImage;
    case CUDA_ERROR_INVALID_CONTEXT: return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_NO_BINARY_FOR_GPU: return cudaErrorNoKernelImageForDevice;
    case CUDA_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
    case CUDA_ERROR_NOT_FOUND: return cudaErrorSymbolNotFound;
    case CUDA_ERROR_NOT_READY: return cudaErrorNotReady;
    case CUDA_ERROR_ILLEGAL_ADDRESS: return cudaErrorIllegalAddress;
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return cudaErrorLaunchOutOfResources;
    case CUDA_ERROR_LAUNCH_TIMEOUT: return cudaErrorLaunchTimeout;
    case CUDA_ERROR_LAUNCH_FAILED: return cudaErrorLaunchFailure;
    case CUDA_ERROR_ASSERT: return cudaErrorAssert;
    case CUDA_ERROR_HARDWARE_STACK_ERROR: return cudaErrorHardwareStackError;
    case CUDA_ERROR_ILLEGAL_INSTRUCTION: return cudaErrorIllegalInstruction;
    case CUDA_ERROR_MISALIGNED_ADDRESS: return cudaErrorMisalignedAddress;
    case CUDA_ERROR_INVALID_ADDRESS_SPACE: return cudaErrorInvalidAddressSpace;
    case CUDA_ERROR_INVALID_PC: return cudaErrorInvalidPc;
    case CUDA_ERROR_NOT_PERMITTED: return cudaErrorNotPermitted;
    case CUDA_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
    case CUDA_ERROR_PEER_ACCESS_UNSUPPORTED: return cudaErrorPeerAccessUnsupported;
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: return cudaErrorHostMemoryAlreadyRegistered;
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: return cudaErrorHostMemoryNotRegistered;
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION: return cudaErrorUnsupportedPtxVersion;
    case CUDA_ERROR_INVALID_PTX: return cudaErrorInvalidPtx;
    case CUDA_ERROR_ECC_UNCORRECTABLE: return cudaErrorECCUncorrectable;
    case CUDA_ERROR_OPERATING_SYSTEM: return cudaErrorOperatingSystem;
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return cudaErrorSystemDriverMismatch;
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: return cudaErrorCooperativeLaunchTooLarge;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return cudaErrorStreamCaptureUnsupported;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return cudaErrorStreamCaptureInvalidated;
    case CUDA_ERROR_STREAM_CAPTURE_MERGE: return cudaErrorStreamCaptureMerge;
    case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED: return cudaErrorStreamCaptureUnmatched;
    case CUDA_ERROR_STREAM_CAPTURE_UNJOINED: return cudaErrorStreamCaptureUnjoined;
    case CUDA_ERROR_STREAM_CAPTURE_ISOLATION: return cudaErrorStreamCaptureIsolation;
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: return cudaErrorStreamCaptureImplicit;
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD: return cudaErrorStreamCaptureWrongThread;
    case CUDA_ERROR_CAPTURED_EVENT: return cudaErrorCapturedEvent;
    case CUDA_ERROR_ILLEGAL_STATE: return cudaErrorIllegalState;
    case CUDA_ERROR_TIMEOUT: return cudaErrorTimeout;
    default: return cudaErrorUnknown;
  }
}

cudaError_t record(cudaError_t e) {
  if (e == cudaSuccess || e == cudaErrorNotReady) return e;  // "not ready" is an answer, not an error
  t_last_error = e;
  if (is_sticky(e)) state().set_sticky(e);
  return e;
}

cudaError_t take_last_error(bool clear) {
  cudaError_t sticky = state().sticky();
  cudaError_t e = t_last_error;
  if (clear) t_last_error = cudaSuccess;
  if (sticky != cudaSuccess) return sticky;  // stays until cudaDeviceReset
  return e;
}

cudaError_t refuse(const char* name) {
  return record(static_cast<cudaError_t>(rgpu::shim::report_unimplemented(name)));
}

// ---- the calling thread's device and context ------------------------------------------

cudaError_t check_device(int device) {
  if (CUresult r = cuInit(0); r != CUDA_SUCCESS) return r == CUDA_ERROR_NO_DEVICE ? cudaErrorNoDevice : to_cuda_error(r);
  int count = 0;
  if (CUresult r = cuDeviceGetCount(&count); r != CUDA_SUCCESS) return to_cuda_error(r);
  if (count == 0) return cudaErrorNoDevice;
  return device >= 0 && device < count ? cudaSuccess : cudaErrorInvalidDevice;
}

int current_device() { return t_device; }

void set_current_device(int device) {
  t_device = device;
  t_device_chosen = true;
}

cudaError_t activate_device(int device) {
  if (CUresult r = cuInit(0); r != CUDA_SUCCESS) return r == CUDA_ERROR_NO_DEVICE ? cudaErrorNoDevice : to_cuda_error(r);
  int count = 0;
  if (CUresult r = cuDeviceGetCount(&count); r != CUDA_SUCCESS) return to_cuda_error(r);
  if (count == 0) return cudaErrorNoDevice;
  if (device < 0 || device >= count) return cudaErrorInvalidDevice;
  CUcontext c = nullptr;
  if (cudaError_t e = state().primary(device, &c); e != cudaSuccess) return e;
  if (CUresult r = cuCtxSetCurrent(c); r != CUDA_SUCCESS) return to_cuda_error(r);
  t_device = device;
  t_bound = c;
  return cudaSuccess;
}

cudaError_t ensure_context() {
  if (cudaError_t sticky = state().sticky(); sticky != cudaSuccess) return sticky;
  CUcontext cur = nullptr;
  if (cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur != nullptr) {
    if (cur == t_bound && state().primary_held(t_device)) return cudaSuccess;
    // A context the program made current through the driver API is used as
    // it is, as cudart does, unless the thread chose a device since.
    if (cur != t_bound && !t_device_chosen) {
      CUdevice d = 0;
      if (cuCtxGetDevice(&d) == CUDA_SUCCESS) t_device = d;
      return cudaSuccess;
    }
  }
  return activate_device(t_device);
}

}  // namespace rgpu::runtime
