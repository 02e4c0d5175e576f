// The input of the dispatch fuzzer, also written by its seed generator:
// one byte choosing the description (0: driver.api, 1: apigen_test.api,
// 2: cublasLt.api, 3: cuSPARSE's hand-written rows),
// the function's ordinal (4 bytes, little-endian), then the packed args.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "fakes.h"
#include "dispatch.h"
#include "library_rows.h"

namespace rgpu::server::apigen_test {

inline constexpr size_t kFuzzHeader = 5;

inline const DispatchRow* fuzz_row(std::span<const uint8_t> input) {
  if (input.size() < kFuzzHeader) return nullptr;
  uint32_t function = input[1] | input[2] << 8 | input[3] << 16 | static_cast<uint32_t>(input[4]) << 24;
  switch (input[0]) {
    case 0: return find_driver_row(function);
    case 1: return find_test_row(function);
    case 2: return find_library_row(wire::Api::CUBLAS_LT, function);
    case 3: return find_row(wire::Api::CUSPARSE, function);
    default: return nullptr;
  }
}

}  // namespace rgpu::server::apigen_test
