// The input format of the security fuzzers: a sequence of records, each one
// message for the code under test. Shared by the harnesses and the program
// that writes their seeds, so seeds and fuzzing speak the same format.
//
//   record := tag:u8  header_len:u16le  header[header_len]
//             [ payload_len:u16le  payload[payload_len] ]   when tag & 1
//
// The harnesses give other tag bits their own meaning (fuzz_handshake.cpp).
// A truncated record ends the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rgpu::security::fuzz {

struct Record {
  uint8_t tag = 0;
  std::vector<std::byte> header;  // a copy, 8-byte aligned as a received header is
  std::vector<std::byte> payload;
  bool has_payload() const { return (tag & 1) != 0; }
};

// Reads the next record from `in` (advancing it); false at the end.
inline bool next_record(std::span<const uint8_t>* in, Record* out) {
  auto take16 = [&](uint16_t* v) {
    if (in->size() < 2) return false;
    *v = static_cast<uint16_t>((*in)[0] | ((*in)[1] << 8));
    *in = in->subspan(2);
    return true;
  };
  auto take = [&](size_t n, std::vector<std::byte>* v) {
    if (in->size() < n) return false;
    const auto* p = reinterpret_cast<const std::byte*>(in->data());
    v->assign(p, p + n);
    *in = in->subspan(n);
    return true;
  };
  if (in->empty()) return false;
  out->tag = (*in)[0];
  *in = in->subspan(1);
  uint16_t n = 0;
  if (!take16(&n) || !take(n, &out->header)) return false;
  out->payload.clear();
  if (out->has_payload() && (!take16(&n) || !take(n, &out->payload))) return false;
  return true;
}

// Appends a record (the writer side, for seeds).
inline void append_record(std::vector<uint8_t>* out, uint8_t tag, std::span<const std::byte> header,
                          std::span<const std::byte> payload = {}) {
  auto put16 = [&](size_t v) {
    out->push_back(static_cast<uint8_t>(v & 0xff));
    out->push_back(static_cast<uint8_t>((v >> 8) & 0xff));
  };
  out->push_back(tag);
  put16(header.size());
  for (std::byte b : header) out->push_back(static_cast<uint8_t>(b));
  if (tag & 1) {
    put16(payload.size());
    for (std::byte b : payload) out->push_back(static_cast<uint8_t>(b));
  }
}

}  // namespace rgpu::security::fuzz
