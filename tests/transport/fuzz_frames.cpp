// libFuzzer harness for the UCX frame layer (FrameAssembler): the input is a
// script of frames (any sequence number, flags and sizes, eager or
// rendezvous), header fetches completing, messages released and limits
// changed. Beyond "no crash" it checks the layer's promises: messages come
// out in sequence order, each with the header fed for it (split headers
// paired with their own payload), nothing after a bye, and after every
// accepted frame no more is held than the limits allow.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "frame_assembler.h"

using namespace rgpu::transport;
using namespace rgpu::transport::ucx;

namespace {

#define CHECK(cond)                                                           \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::fprintf(stderr, "invariant failed: %s (line %d)\n", #cond, __LINE__); \
      std::abort();                                                           \
    }                                                                         \
  } while (0)

// The bytes of the header fed with sequence number seq.
std::vector<std::byte> header_of(uint64_t seq, size_t size) {
  std::vector<std::byte> h(size);
  for (size_t i = 0; i < size; ++i) h[i] = static_cast<std::byte>(seq * 31 + i * 7);
  return h;
}

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool empty() const { return p_ == end_; }
  uint8_t byte() { return p_ == end_ ? 0 : *p_++; }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

ReceiveLimits limits_from(Reader& in) {
  ReceiveLimits l;
  l.max_header = size_t{in.byte()} * 32;
  l.max_parked_frames = in.byte() % 64;
  l.max_parked_bytes = uint64_t{in.byte()} * 256;
  return l;
}

// A rendezvous payload: nothing to pull, only its size.
class FakeRndv final : public IncomingPayload {
 public:
  explicit FakeRndv(size_t size) : size_(size) {}
  size_t size() const override { return size_; }
  rgpu::Status receive(void*) override { return rgpu::Status::ok(); }

 private:
  size_t size_;
};

class Source final : public RndvSource {
 public:
  explicit Source(size_t size) : size_(size) {}
  std::unique_ptr<IncomingPayload> take() override {
    ++taken;
    return std::make_unique<FakeRndv>(size_);
  }
  int taken = 0;

 private:
  size_t size_;
};

// What was fed under each sequence number, to check what comes out.
struct Fed {
  uint32_t flags;
  size_t header_size;   // inline header, or the AM data of a header frame
  size_t payload_size;  // AM data of a payload frame
};

class Checker final : public AssemblerSink {
 public:
  void deliver(uint64_t seq, Message message, size_t bytes) override {
    CHECK(!ended);
    CHECK(!delivered_any || seq > last_);
    auto it = fed.find(seq);
    CHECK(it != fed.end());
    // Every sequence number skipped since the last message was a header part.
    for (uint64_t s = delivered_any ? last_ + 1 : 0; s < seq; ++s) {
      auto skipped = fed.find(s);
      CHECK(skipped != fed.end());
      CHECK(skipped->second.flags == kHeaderPart && s + 1 == seq);
    }
    const Fed& f = it->second;
    CHECK(f.flags == kHeaderInline || f.flags == kHeaderInData || f.flags == kHeaderFromPrev);
    if (f.flags == kHeaderFromPrev) {
      const Fed& part = fed.at(seq - 1);
      CHECK(message.header == header_of(seq - 1, part.header_size));
    } else {
      CHECK(message.header == header_of(seq, f.header_size));
    }
    const size_t payload = message.payload ? message.payload->size() : 0;
    CHECK(payload == (f.flags == kHeaderInData ? 0 : f.payload_size));
    CHECK(bytes >= message.header.size());
    delivered_any = true;
    last_ = seq;
    pending.push_back(bytes);
  }
  void peer_bye() override {
    CHECK(!ended);
    ended = true;
  }

  std::map<uint64_t, Fed> fed;
  std::deque<size_t> pending;  // bytes of delivered, unreleased messages
  bool ended = false;

 private:
  bool delivered_any = false;
  uint64_t last_ = 0;
};

uint32_t flags_from(uint8_t b) {
  static const uint32_t kValid[] = {kHeaderInline, kHeaderInData, kHeaderPart, kHeaderFromPrev, kBye};
  return b < 0xf0 ? kValid[b % 5] : static_cast<uint32_t>(b & 0x1f) | (b & 0x20 ? 0x100u : 0u);
}

uint64_t seq_from(uint8_t b, uint64_t next) {
  if (b == 0xff) return uint64_t{1} << 63;
  if (b == 0xfe) return UINT64_MAX;
  if (b >= 0xf0) return next >= 1 + (b - 0xf0) ? next - 1 - (b - 0xf0) : next;
  return next + b % 24;
}

// Feeds one frame, keeping the model in step; returns false once failed.
bool feed(FrameAssembler& a, Checker& c, std::vector<std::pair<uint64_t, size_t>>& fetches, uint64_t seq,
          uint32_t flags, size_t header_len, size_t length, bool rndv) {
  const bool header_in_data = flags == kHeaderInData || flags == kHeaderPart;
  const uint64_t seq_key = seq;
  const auto header = header_of(seq, header_in_data ? length : header_len);
  const std::vector<std::byte> payload(header_in_data ? 0 : length, std::byte{0x5a});
  FrameBytes in;
  in.header = header_in_data ? nullptr : header.data();
  in.header_len = header_in_data ? 0 : header_len;
  in.data = header_in_data ? header.data() : payload.data();
  in.length = length;
  in.rndv = rndv;
  // Recorded before the feed: an accepted frame may be delivered inside it.
  const bool known = c.fed.count(seq_key) != 0;
  const Fed previous = known ? c.fed[seq_key] : Fed{};
  c.fed[seq_key] = Fed{flags, header_in_data ? length : header_len, header_in_data ? 0 : length};
  Source src(length);
  const uint64_t next_before = a.next_seq();
  FeedResult r = a.feed(Frame{seq, 7, flags}, in, &src);
  CHECK(src.taken == (r.payload_kept ? 1 : 0));
  if (r.payload_kept) CHECK(rndv && !header_in_data && length != 0);
  if (!r.status.is_ok()) {
    CHECK(a.failed());
    if (known) c.fed[seq_key] = previous;
    return false;
  }
  // Accepted: within the limits in force, and holding no more than they allow.
  const ReceiveLimits& l = a.limits();
  CHECK((header_in_data ? length : header_len) <= l.max_header);
  CHECK(seq >= next_before);
  CHECK(a.parked_frames() <= l.max_parked_frames);
  CHECK(a.held_bytes() <= l.max_parked_bytes);
  if (r.fetch_header) {
    CHECK(rndv && header_in_data && length != 0);
    fetches.emplace_back(seq, length);
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(data, size);
  Checker checker;
  FrameAssembler a(checker, limits_from(in));
  std::vector<std::pair<uint64_t, size_t>> fetches;  // header fetches under way
  bool alive = true;
  while (alive && !in.empty()) {
    const uint8_t op = in.byte() % 8;
    switch (op) {
      case 0:
      case 1:
      case 2: {
        const uint64_t seq = seq_from(in.byte(), a.next_seq());
        const uint32_t flags = flags_from(in.byte());
        const size_t header_len = in.byte();
        const uint8_t lo = in.byte();
        const uint8_t hi = in.byte();
        const size_t length = lo | size_t{hi & 0x3fu} << 8;
        alive = feed(a, checker, fetches, seq, flags, header_len, length, (hi & 0x80) != 0);
        break;
      }
      case 3: {
        const uint8_t pick = in.byte();
        if (fetches.empty()) break;
        const size_t i = pick % fetches.size();
        const auto [seq, length] = fetches[i];
        fetches.erase(fetches.begin() + static_cast<std::ptrdiff_t>(i));
        alive = a.header_fetched(seq, header_of(seq, length)).is_ok();
        break;
      }
      case 4:
        if (!checker.pending.empty()) {
          const uint64_t before = a.held_bytes();
          a.release(checker.pending.front());
          CHECK(a.held_bytes() + checker.pending.front() >= before);
          checker.pending.pop_front();
        }
        break;
      case 5:
        a.set_limits(limits_from(in));
        break;
      case 6: {
        // A split header, as a sender sends it: header part then payload.
        const uint64_t seq = seq_from(in.byte(), a.next_seq());
        const size_t header_size = size_t{in.byte()} * 16;
        const size_t length = in.byte();
        const bool rndv = (in.byte() & 1) != 0;
        alive = feed(a, checker, fetches, seq, kHeaderPart, 0, header_size, rndv) &&
                feed(a, checker, fetches, seq + 1, kHeaderFromPrev, 0, length, rndv);
        break;
      }
      case 7:
        break;
    }
  }
  if (!alive) {
    // A failed assembler refuses everything and, once reset, holds nothing.
    CHECK(a.failed());
    Source src(0);
    const std::byte none{};
    FrameBytes fb;
    fb.header = &none;
    CHECK(!a.feed(Frame{a.next_seq(), 7, kHeaderInline}, fb, &src).status.is_ok());
    CHECK(src.taken == 0);
  }
  a.reset();
  CHECK(a.parked_frames() == 0 && a.held_bytes() == 0);
  return 0;
}
