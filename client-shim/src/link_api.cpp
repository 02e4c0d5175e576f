// The JIT linker (cuLinkCreate, cuLinkAddData, cuLinkAddFile, cuLinkComplete,
// cuLinkDestroy), answered on the client. A link of one input (PTX, cubin or
// fatbin: what programs that JIT-compile a kernel give it) completes with
// that input itself, which cuModuleLoadData then loads as any image: the
// device compiles PTX when the module is loaded, as the driver would at
// link time. Linking several inputs together (a call into another module's
// function) is refused with CUDA_ERROR_NOT_SUPPORTED and said in the error
// log: rgpu's devices load each module from its own code.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "api_common.h"
#include "rgpu/common/log.h"

namespace {

// Largest input a link takes (a PyTorch fatbin is a few hundred MiB at most).
constexpr size_t kMaxInput = size_t{1} << 30;

struct LinkState {
  std::vector<std::vector<char>> inputs;
  std::vector<char> output;
  char* info_log = nullptr;
  size_t info_size = 0;
  char* error_log = nullptr;
  size_t error_size = 0;
};

std::mutex g_mu;
std::set<LinkState*> g_states;  // live states: a handle is checked before use

LinkState* live(CUlinkState handle) {
  auto* s = reinterpret_cast<LinkState*>(handle);
  std::lock_guard<std::mutex> lock(g_mu);
  return g_states.count(s) ? s : nullptr;
}

void put_log(char* buffer, size_t size, const std::string& text) {
  if (buffer == nullptr || size == 0) return;
  const size_t n = std::min(size - 1, text.size());
  std::memcpy(buffer, text.data(), n);
  buffer[n] = '\0';
}

// The JIT options a link takes: its logs (left empty, or holding the
// reason of a refusal) and the wall time (0: nothing is compiled here). The
// others tune a compilation the device does when the module is loaded.
void read_options(LinkState* s, unsigned n, const CUjit_option* options, void** values) {
  for (unsigned i = 0; i < n; ++i) {
    switch (options[i]) {
      case CU_JIT_INFO_LOG_BUFFER: s->info_log = static_cast<char*>(values[i]); break;
      case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: s->info_size = reinterpret_cast<uintptr_t>(values[i]); break;
      case CU_JIT_ERROR_LOG_BUFFER: s->error_log = static_cast<char*>(values[i]); break;
      case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: s->error_size = reinterpret_cast<uintptr_t>(values[i]); break;
      case CU_JIT_WALL_TIME: {
        const float none = 0.0f;
        std::memcpy(&values[i], &none, sizeof none);  // an output, held in the option's own slot
        break;
      }
      default: break;
    }
  }
  put_log(s->info_log, s->info_size, "");
  put_log(s->error_log, s->error_size, "");
}

CUresult refuse(LinkState* s, CUresult code, const std::string& why) {
  put_log(s->error_log, s->error_size, why);
  RGPU_WARN("cuLink refused reason=\"%s\"", why.c_str());
  return code;
}

CUresult add(LinkState* s, CUjitInputType type, const void* data, size_t size) {
  if (data == nullptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (size > kMaxInput) return refuse(s, CUDA_ERROR_INVALID_VALUE, "link input larger than 1 GiB");
  switch (type) {
    case CU_JIT_INPUT_PTX:
    case CU_JIT_INPUT_CUBIN:
    case CU_JIT_INPUT_FATBINARY: break;
    default:
      return refuse(s, CUDA_ERROR_NOT_SUPPORTED, "rgpu links PTX, cubin and fatbin inputs only");
  }
  const char* bytes = static_cast<const char*>(data);
  std::vector<char> input(bytes, bytes + size);
  if (type == CU_JIT_INPUT_PTX && input.back() != '\0') input.push_back('\0');  // loaded as a C string
  s->inputs.push_back(std::move(input));
  return CUDA_SUCCESS;
}

}  // namespace

RGPU_EXPORT CUresult CUDAAPI cuLinkCreate_v2(unsigned int numOptions, CUjit_option* options, void** optionValues,
                                             CUlinkState* stateOut) {
  API_BEGIN
  if (stateOut == nullptr || (numOptions > 0 && (options == nullptr || optionValues == nullptr))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto s = std::make_unique<LinkState>();
  read_options(s.get(), numOptions, options, optionValues);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_states.insert(s.get());
  }
  *stateOut = reinterpret_cast<CUlinkState>(s.release());
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void* data, size_t size,
                                              const char* name, unsigned int numOptions, CUjit_option* options,
                                              void** optionValues) {
  API_BEGIN
  LinkState* s = live(state);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (numOptions > 0 && (options == nullptr || optionValues == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  return add(s, type, data, size);
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char* path,
                                              unsigned int numOptions, CUjit_option* options, void** optionValues) {
  API_BEGIN
  LinkState* s = live(state);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (path == nullptr || (numOptions > 0 && (options == nullptr || optionValues == nullptr))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return refuse(s, CUDA_ERROR_FILE_NOT_FOUND, std::string("cannot open ") + path);
  const std::streamoff size = in.tellg();
  if (size <= 0 || static_cast<uint64_t>(size) > kMaxInput) {
    return refuse(s, CUDA_ERROR_INVALID_VALUE, std::string(path) + " is empty or larger than 1 GiB");
  }
  std::vector<char> bytes(static_cast<size_t>(size));
  in.seekg(0);
  if (!in.read(bytes.data(), size)) return refuse(s, CUDA_ERROR_FILE_NOT_FOUND, std::string("cannot read ") + path);
  return add(s, type, bytes.data(), bytes.size());
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuLinkComplete(CUlinkState state, void** cubinOut, size_t* sizeOut) {
  API_BEGIN
  LinkState* s = live(state);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (cubinOut == nullptr || sizeOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (s->inputs.empty()) return refuse(s, CUDA_ERROR_INVALID_VALUE, "nothing was added to the link");
  if (s->inputs.size() > 1) {
    return refuse(s, CUDA_ERROR_NOT_SUPPORTED,
                  "rgpu does not link several inputs together yet: each module is loaded from its own code");
  }
  s->output = s->inputs.front();
  *cubinOut = s->output.data();
  *sizeOut = s->output.size();
  return CUDA_SUCCESS;
  API_END
}

RGPU_EXPORT CUresult CUDAAPI cuLinkDestroy(CUlinkState state) {
  API_BEGIN
  auto* s = reinterpret_cast<LinkState*>(state);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_states.erase(s) == 0) return CUDA_ERROR_INVALID_HANDLE;
  }
  delete s;
  return CUDA_SUCCESS;
  API_END
}
