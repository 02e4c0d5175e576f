// Copies between two devices that no server copies between (devices of two
// servers, or two devices of one): staged through this process.
#pragma once

#include <cstdint>

#include "shim.h"

namespace rgpu::shim {

// Pieces of a staged copy: one is read from the source while the piece
// before goes to the destination; each moves in the sessions' own pipelined
// chunks (Client::copy_out_pipelined, copy_in_pipelined). A copy of at most
// one piece is one read, then one write (on the CI machine this measured
// faster than smaller pieces overlapped; docs/transport.md).
constexpr uint64_t kStagePiece = uint64_t{64} << 20;

// Copies `size` bytes from `src` (from's server and context) to `dst` (to's), in
// order on `stream` (a wire stream handle of the calling thread's current
// context): the stream and the source's context are waited for, then the
// bytes go in pieces of kStagePiece through host buffers the Shim keeps,
// a reader thread reading the next piece from the source session while this
// thread writes the last one to the destination session, each on its
// server's legacy stream. Returns when the last piece is on the destination
// device (also when `async`: there is no later point at which the client
// could finish it). An error of any piece is the result.
CUresult copy_between_servers(Shim& shim, const Route& to, uint64_t dst, const Route& from, uint64_t src,
                              uint64_t size, uint64_t stream, bool async);

}  // namespace rgpu::shim
