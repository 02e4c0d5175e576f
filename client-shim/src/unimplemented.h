// The "not supported yet" path shared by every generated driver stub.
#pragma once

#include <type_traits>

// Marks a function for export from librgpu.so (built with hidden visibility);
// the version script then decides what is really exported.
#ifndef RGPU_SHIM_EXPORT
#define RGPU_SHIM_EXPORT __attribute__((visibility("default")))
#endif

// Binds `name`, defined above in the same file (and exported under the
// library's default version node by the map), also to `old_node` as
// name@old_node, through a second symbol `second` at the same address: how
// one entry point serves cublasSgemm_v2@@libcublas.so.13 and
// cublasSgemm_v2@libcublas.so.12. `@@@` makes the plain definition the
// default version explicitly; without it an object that defines both name
// and name@old_node loses the first. The alias names are local in the map.
#define RGPU_LIBRARY_ALIAS(name, second, node, old_node) \
  RGPU_LIBRARY_ALIAS_TYPED(decltype(name), name, second, node, old_node)
// The same where C++ overloads the name (cublas_api.h's cublasGemmEx): `type`
// is the function type of the extern "C" definition.
#define RGPU_LIBRARY_ALIAS_TYPED(type, name, second, node, old_node)                \
  extern "C" std::type_identity_t<type> second __attribute__((alias(#name), visibility("default"))); \
  __asm__(".symver " #name ", " #name "@@@" node);                                 \
  __asm__(".symver " #second ", " #name "@" old_node);

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
