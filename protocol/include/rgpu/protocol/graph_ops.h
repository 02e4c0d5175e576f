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
  // the stream captures; success otherwise (the client asks before work with
  // client-side effects while a capture is in progress).
  kRefuseIfCapturing = 11,  // a: stream
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

}  // namespace rgpu::protocol
