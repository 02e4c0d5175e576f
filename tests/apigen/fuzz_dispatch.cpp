// libFuzzer target: a generated dispatch row chosen by the input, run on
// the rest of the input as its packed arguments, against the fake session
// of fakes.h (with the allocations and handles of valid_calls, so that
// valid-looking calls reach the fake driver). A row may refuse anything; it
// must never crash, read past its input, or let the driver touch memory
// outside an allocation (each is followed by a page with no access).
#include <cstdint>

#include "fuzz_input.h"

using namespace rgpu::server::apigen_test;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const rgpu::server::DispatchRow* row = fuzz_row({data, size});
  if (!row) return 0;
  FakeEnv env(fake_driver());
  (void)valid_calls(env);  // the same allocations and handles as the seeds'
  auto args = std::span<const std::byte>(reinterpret_cast<const std::byte*>(data) + kFuzzHeader, size - kFuzzHeader);
  rgpu::server::InvokeOutcome out = row->run(env, args);
  if (out.code == CUDA_SUCCESS && out.out.size() > 64 * 1024) __builtin_trap();  // replies stay small
  return 0;
}
