// Copies between two devices that no server copies between (devices of two
// servers, or two devices of one): staged through this process.
#pragma once

#include <cstdint>

#include "shim.h"

namespace rgpu::shim {

// Pieces of a staged copy between servers: read from one while the piece
// before goes to the other.
constexpr uint64_t kStagePiece = uint64_t{4} << 20;

// Copies `size` bytes from `src` (from's server and context) to `dst` (to's), in
// order on `stream` (a wire stream handle of the calling thread's current
// context): the stream and the source's context are waited for, then the
// bytes go in pieces of kStagePiece, each read from the source session while
// the piece before is written to the destination session, the reads and
// writes on each server's legacy stream. Returns when the last piece is on
// the destination device (also when `async`: there is no later point at
// which the client could finish it). An error of any piece is the result.
CUresult copy_between_servers(Shim& shim, const Route& to, uint64_t dst, const Route& from, uint64_t src,
                              uint64_t size, uint64_t stream, bool async);

}  // namespace rgpu::shim
