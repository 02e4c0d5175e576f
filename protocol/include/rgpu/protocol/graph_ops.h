// The operations of Call.graph (stream capture, graphs, virtual memory
// management) and their arguments, shared by the client and rgpud. Values
// are append-only, like the schema's ordinals.
#pragma once

#include <cstdint>

namespace rgpu::protocol {

// Arguments ("a:" in the order of Call.graph.args) and results ("r:" in
// Reply.values). Streams are wire stream handles; graphs, executable graphs,
// chunks and addresses are the server's values.
enum class GraphOp : uint16_t {
  kBeginCapture = 1,    // a: stream, mode
  kEndCapture = 2,      // a: stream                   r: graph
  kCaptureInfo = 3,     // a: stream                   r: status, id, graph, dependencies
  kGraphDestroy = 4,    // a: graph
  kInstantiate = 5,     // a: graph, flags             r: exec
  kExecDestroy = 6,     // a: exec
  kLaunch = 7,          // a: exec, stream
  kUpload = 8,          // a: exec, stream
  kGraphNodeCount = 9,  // a: graph                    r: nodes
  kGraphCreate = 10,    //                             r: graph
  // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, invalidating the capture, when
  // the stream captures; success otherwise.
  kRefuseIfCapturing = 11,  // a: stream
  // Work with a client-side effect, recorded into the capture of `stream`
  // as a host step (HostStepKind) that runs at every replay: r: 1 when
  // recorded, 0 when the stream does not capture (the client then does the
  // work as usual). `id` (kHostStepIdBit set) names the step in
  // HostFuncCall/HostFuncDone; `address` and `size` are the device side of
  // a copy (0 for kRun).
  kCaptureHostStep = 12,  // a: stream, id, kind, address, size   r: recorded
  kGraphClone = 13,       // a: graph                              r: clone
  kMemGranularity = 20,  // a: device, option          r: bytes
  kMemCreate = 21,       // a: device, size            r: chunk
  kMemRelease = 22,      // a: chunk
  kAddressReserve = 23,  // a: size, alignment, hint   r: address
  kAddressFree = 24,     // a: address, size
  kMemMap = 25,          // a: address, size, chunk
  kMemUnmap = 26,        // a: address, size
  kMemSetAccess = 27,    // a: address, size, device, flags
  kMemRetain = 28,       // a: address                 r: chunk
  kMemProperties = 29,   // a: chunk                   r: device
};

// The kinds of kCaptureHostStep. A copy's staging buffer on the server sits
// between the device and the client: kCopyIn fetches the client's bytes at
// the step, then copies them to the device; kCopyOut copies from the device,
// then sends the bytes to the client at the step.
enum class HostStepKind : uint64_t { kRun = 0, kCopyIn = 1, kCopyOut = 2 };
// Host step ids have this bit; call ids (which name one-shot host
// functions) never do.
constexpr uint64_t kHostStepIdBit = uint64_t{1} << 63;
// The largest copy one host step carries (it travels inside one message).
constexpr uint64_t kMaxHostStepBytes = uint64_t{16} << 20;

}  // namespace rgpu::protocol
