// The server's reasons for errors, on the program's stderr: each distinct
// one once, at the default log level; RGPU_ERRORS=quiet silences them for
// programs that print their own (docs/protocol.md, "Reasons").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rgpu.capnp.h"

namespace rgpu::shim {

// Whether reasons are printed: RGPU_ERRORS unset or anything but "quiet".
// Read once. Any thread; callable before main and during exit.
bool reasons_printed() noexcept;

// The line a reason is printed as: "rgpu: error from rgpud at SERVER:
// NAME: REASON", NAME being the error's name (CUDA_ERROR_NOT_SUPPORTED; for
// another API, "cudnn status 3000"). `reason` is filtered again
// (rgpu/common/reason.h): it came from a peer.
std::string reason_line(std::string_view server, wire::Api api, uint32_t code, std::string_view reason);

// Prints reason_line() on stderr the first time it is seen, unless quiet.
// Thread-safe. Past 256 distinct lines, new ones go to the debug log only.
void report_reason(std::string_view server, wire::Api api, uint32_t code, std::string_view reason);

}  // namespace rgpu::shim
