// Checking an array of device pointers in device memory: see pointer_array.h.
#include "pointer_array.h"

#include <string>
#include <vector>


namespace rgpu::server {

PointerArray::~PointerArray() {
  if (copy_ == 0) return;
  const DriverTable& d = env_.driver();
  // The library's work reads the copy from its stream; wait for it first.
  if (d.cuCtxSynchronize) d.cuCtxSynchronize();
  if (d.cuMemFree) d.cuMemFree(copy_);
}

InvokeOutcome PointerArray::load(wire::Api api, uint32_t invalid, const char* what, uint64_t array, uint64_t count,
                                 uint64_t each) {
  using dispatch::refuse;
  if (count > kMaxPointers) return refuse(api, invalid, std::string(what) + ": too many pointers");
  if (count == 0) return {};
  const DriverTable& d = env_.driver();
  if (!d.cuCtxSynchronize || !d.cuMemcpyDtoH || !d.cuMemAlloc || !d.cuMemcpyHtoD || !d.cuMemFree)
    return refuse(api, invalid, std::string(what) + ": the driver cannot copy the array");
  // What the client queued before this call may be what fills the array.
  if (d.cuCtxSynchronize() != CUDA_SUCCESS)
    return refuse(api, invalid, std::string(what) + ": the context failed before the array was read");
  std::vector<uint64_t> ptrs(count);
  if (d.cuMemcpyDtoH(ptrs.data(), array, count * sizeof(uint64_t)) != CUDA_SUCCESS)
    return refuse(api, invalid, std::string(what) + ": the array cannot be read");
  for (uint64_t i = 0; i < count; ++i) {
    if (!env_.device_range(ptrs[i], each))
      return refuse(api, invalid,
                    std::string(what) + "[" + std::to_string(i) + "] is not memory of this context");
  }
  CUdeviceptr copy = 0;
  if (d.cuMemAlloc(&copy, count * sizeof(uint64_t)) != CUDA_SUCCESS)
    return refuse(api, invalid, std::string(what) + ": no device memory for the checked array");
  copy_ = copy;
  if (d.cuMemcpyHtoD(copy_, ptrs.data(), count * sizeof(uint64_t)) != CUDA_SUCCESS)
    return refuse(api, invalid, std::string(what) + ": the checked array cannot be written");
  return {};
}

}  // namespace rgpu::server
