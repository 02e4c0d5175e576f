// The one error type of rgpu: a kind and a message, and Result<T> for values.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace rgpu {

// What went wrong, coarse enough to decide what to do about it.
enum class ErrorKind {
  kOk = 0,
  kFailed,           // an operation failed; retrying will not help
  kOverloaded,       // out of a resource; may succeed later
  kDisconnected,     // the peer went away or cannot be reached
  kUnimplemented,    // the request is valid but not supported
  kInvalidArgument,  // the caller sent something malformed
};

const char* error_kind_name(ErrorKind kind);

// A cheap-to-copy status. Thread-compatible (no shared state).
class Status {
 public:
  Status() = default;
  Status(ErrorKind kind, std::string message) : kind_(kind), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const { return kind_ == ErrorKind::kOk; }
  explicit operator bool() const { return is_ok(); }
  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }
  // "kind: message", for logs.
  std::string to_string() const;

 private:
  ErrorKind kind_ = ErrorKind::kOk;
  std::string message_;
};

inline Status failed(std::string m) { return {ErrorKind::kFailed, std::move(m)}; }
inline Status overloaded(std::string m) { return {ErrorKind::kOverloaded, std::move(m)}; }
inline Status disconnected(std::string m) { return {ErrorKind::kDisconnected, std::move(m)}; }
inline Status unimplemented(std::string m) { return {ErrorKind::kUnimplemented, std::move(m)}; }
inline Status invalid_argument(std::string m) { return {ErrorKind::kInvalidArgument, std::move(m)}; }

// A value or an error. Thread-compatible.
template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: must not be ok

  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T* operator->() { return &value(); }
  T& operator*() { return value(); }
  Status status() const { return is_ok() ? Status::ok() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace rgpu
