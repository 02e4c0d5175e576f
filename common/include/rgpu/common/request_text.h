// Sizes and resource requests as people write them: "512M", "2G",
// "devices=2,mem=4G" (RGPU_REQUEST, rgpud --session-memory). One parser, so
// the client and the server read a size the same way.
#pragma once

#include <cstdint>
#include <string_view>

#include "rgpu/common/status.h"

namespace rgpu {

// A byte count: a whole decimal number with an optional binary unit, K, M,
// G or T (KiB .. TiB), optionally followed by "B" or "iB", in either case
// ("512M", "2GiB", "4096"). Anything else, or a value past 2^64 - 1, is an
// error that quotes the text.
Result<uint64_t> parse_size(std::string_view text);

// A compute share: a plain decimal number above 0 and at most 1 ("0.25",
// "1", ".5"); anything else is an error that quotes the text.
Result<float> parse_share(std::string_view text);

// A request for resources, as RGPU_REQUEST spells it: comma-separated
// key=value items, "devices=N", "mem=SIZE" (per device, parse_size's
// form) and "share=F" (the compute share of each device, a decimal number
// above 0 and at most 1), each at most once. An unknown key, a repeated one, an empty value or
// a bad number is an error naming the item. Zero in a field: not asked for.
struct RequestText {
  uint32_t devices = 0;
  uint64_t memory_bytes = 0;
  float share = 0;
};
Result<RequestText> parse_request(std::string_view text);

}  // namespace rgpu
