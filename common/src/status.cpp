// Status formatting.
#include "rgpu/common/status.h"

namespace rgpu {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kOk: return "ok";
    case ErrorKind::kFailed: return "failed";
    case ErrorKind::kOverloaded: return "overloaded";
    case ErrorKind::kDisconnected: return "disconnected";
    case ErrorKind::kUnimplemented: return "unimplemented";
    case ErrorKind::kInvalidArgument: return "invalid argument";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(error_kind_name(kind_)) + ": " + message_;
}

}  // namespace rgpu
