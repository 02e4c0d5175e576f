// Writes the dispatch fuzzer's seeds: one file per valid call of every
// generated row (fakes.cpp's valid_calls), in fuzz_input.h's layout.
#include <cstdio>
#include <fstream>
#include <string>

#include "fuzz_input.h"

using namespace rgpu::server::apigen_test;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  FakeEnv env(fake_driver());
  int n = 0;
  for (const ValidCall& call : valid_calls(env)) {
    if (!call.row) return 1;
    const uint8_t which = call.row->api == rgpu::wire::Api::CUSPARSE                          ? 3
                          : call.row->api == rgpu::wire::Api::CUBLAS_LT                       ? 2
                          : rgpu::server::find_driver_row(call.row->function) == call.row ? 0
                                                                                          : 1;
    uint8_t header[kFuzzHeader] = {which,
                                   static_cast<uint8_t>(call.row->function), static_cast<uint8_t>(call.row->function >> 8),
                                   static_cast<uint8_t>(call.row->function >> 16),
                                   static_cast<uint8_t>(call.row->function >> 24)};
    std::ofstream out(std::string(argv[1]) + "/" + call.row->name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(header), sizeof header);
    out.write(reinterpret_cast<const char*>(call.args.data()), static_cast<std::streamsize>(call.args.size()));
    if (!out) return 1;
    ++n;
  }
  std::printf("apigen seeds: %d\n", n);
  return 0;
}
