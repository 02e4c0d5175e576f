// libFuzzer target: PTX text through the parser and decoder. Any input must
// give a Program or an error, never a crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rgpu/ptx/ptx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = rgpu::ptx::Program::parse(text);
  if (r.is_ok()) {
    // Touch what a driver would read after loading.
    for (size_t k = 0; k < (*r)->kernels().size(); ++k) (void)(*r)->unsupported_reason(static_cast<int>(k));
  }
  return 0;
}
