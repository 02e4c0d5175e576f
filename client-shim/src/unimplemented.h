// The "not supported yet" path shared by every generated driver stub.
#pragma once

// Marks a function for export from librgpu.so (built with hidden visibility);
// the version script then decides what is really exported.
#ifndef RGPU_SHIM_EXPORT
#define RGPU_SHIM_EXPORT __attribute__((visibility("default")))
#endif

namespace rgpu::shim {

// The value of CUDA_ERROR_NOT_SUPPORTED (checked against cuda.h where it is
// defined), for code that does not include cuda.h.
inline constexpr int kCudaErrorNotSupported = 801;

// Logs "unimplemented api=<name>" at warn level the first time it is called
// for a name, then only returns kCudaErrorNotSupported. `name` must be a
// string that lives for the whole process (a literal). Thread-safe, lock-free,
// allocation-free; its state is constant-initialized and never destroyed, so
// it may be called before main and during exit.
int report_unimplemented(const char* name) noexcept;

// The same for a library's name (cuBLAS, cuDNN, NVML, ...): logs
// "unimplemented api=<name> result=<result>" once and returns `code`, that
// library's "not supported" status (`result` is its name, a literal).
int report_unimplemented(const char* name, int code, const char* result) noexcept;

}  // namespace rgpu::shim
