// The UCX transport's wire format (docs/transport.md, "Framing"): active
// message ids, the frame prefix of every message and the hello. No UCX types,
// so that the frame layer can be built and fuzzed without UCX.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rgpu::transport::ucx {

// Active message ids registered on every worker.
enum AmId : unsigned { kAmMessage = 0x52, kAmHello = 0x53, kAmHelloAck = 0x54 };

// Frame flags: where the user header travels.
enum FrameFlag : uint32_t {
  kHeaderInline = 0,         // AM header = Frame + user header; AM data = payload
  kHeaderInData = 1u << 0,   // header-only message; AM data = user header
  kHeaderPart = 1u << 1,     // first of two: AM data = user header; never dispatched alone
  kHeaderFromPrev = 1u << 2,  // second of two: AM data = payload; header from the previous seq
  kBye = 1u << 3              // the sender closes: nothing follows; no header, no data
};

// Prefix of every kAmMessage AM header. Host byte order (UCX peers here are
// homogeneous little-endian hosts).
struct Frame {
  uint64_t seq;      // per-connection send order, from 0
  uint32_t conn_id;  // the receiver's id for this connection
  uint32_t flags;    // FrameFlag
};
static_assert(sizeof(Frame) == 16);

constexpr uint32_t kHelloMagic = 0x52475055;  // "RGPU"
constexpr uint32_t kWireVersion = 1;

// kAmHello (client → server) and kAmHelloAck (server → client) AM headers,
// both sent with UCP_AM_SEND_FLAG_REPLY.
struct Hello {
  uint32_t magic;
  uint32_t version;
  uint32_t client_conn_id;
  uint32_t server_conn_id;  // 0 in kAmHello
};
static_assert(sizeof(Hello) == 16);

// Largest user header sent inline in the AM header; bigger ones go as AM data.
constexpr size_t kMaxInlineHeader = 1024;
// Largest user header a sender accepts to send at all.
constexpr size_t kMaxHeader = size_t{1} << 30;

}  // namespace rgpu::transport::ucx
