// API names paired with the symbol cuda.h's macros turn them into, for
// checking cuGetProcAddress against the header.
#pragma once

#include <vector>

namespace rgpu::shim::test {

struct ApiName {
  const char* api;
  const char* symbol;  // the macro expansion of `api` in the including file
};

#define RGPU_API_NAME_STR(x) #x
#define RGPU_API_NAME(api) ::rgpu::shim::test::ApiName{#api, RGPU_API_NAME_STR(api)}

// Built with CUDA_API_PER_THREAD_DEFAULT_STREAM (proc_address_ptds_names.cpp).
std::vector<ApiName> per_thread_names();

}  // namespace rgpu::shim::test
