// report_unimplemented: each unimplemented API's name is logged once.
#include "unimplemented.h"

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "reasons.h"
#include "rgpu/common/log.h"

static_assert(rgpu::shim::kCudaErrorNotSupported == CUDA_ERROR_NOT_SUPPORTED);

namespace rgpu::shim {
namespace {

// Names already logged: an open-addressing set of string pointers. Slots only
// go from null to a name, so lookups need no lock. Sized well above the
// number of exported APIs; if it ever fills up, names are logged again rather
// than lost.
constexpr std::size_t kSlots = 8192;
std::atomic<const char*> g_logged[kSlots];  // zero-initialized, trivially destroyed

std::uint32_t hash(const char* s) noexcept {
  std::uint32_t h = 2166136261u;  // FNV-1a
  for (; *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 16777619u;
  return h;
}

// True the first time `name` is seen by the set.
bool first_time(const char* name) noexcept {
  std::size_t i = hash(name) % kSlots;
  for (std::size_t probe = 0; probe < kSlots; ++probe, i = (i + 1) % kSlots) {
    const char* seen = g_logged[i].load(std::memory_order_acquire);
    while (seen == nullptr) {
      if (g_logged[i].compare_exchange_weak(seen, name, std::memory_order_acq_rel,
                                            std::memory_order_acquire)) {
        return true;
      }
    }
    if (seen == name || std::strcmp(seen, name) == 0) return false;
  }
  return true;
}

// What a program can do without a library rgpu does not implement all of
// yet: the first match of the name's prefix, or null.
const char* workaround(const char* name) noexcept {
  if (std::strncmp(name, "cudnn", 5) == 0) {
    return "in PyTorch, torch.backends.cudnn.enabled = False runs without cuDNN (docs/pytorch.md)";
  }
  return nullptr;
}

}  // namespace

int report_unimplemented(const char* name) noexcept {
  return report_unimplemented(name, kCudaErrorNotSupported, "CUDA_ERROR_NOT_SUPPORTED");
}

int report_unimplemented(const char* name, int code, const char* result) noexcept {
  if (name == nullptr) name = "?";
  if (first_time(name)) {
    // A library call that fails a program names itself and its workaround
    // on stderr (docs/protocol.md, "Reasons"); the rest are logged.
    const char* hint = workaround(name);
    if (hint != nullptr && reasons_printed()) {
      std::fprintf(stderr, "rgpu: %s is not implemented by rgpu yet (%s); %s\n", name, result, hint);
    } else {
      try {  // the log level is parsed into a std::string once; never let that escape
        RGPU_WARN("unimplemented api=%s result=%s", name, result);
      } catch (...) {
      }
    }
  }
  return code;
}

}  // namespace rgpu::shim
