// Helpers for the transport tests: a thread-safe recorder of what handlers
// saw, payload patterns, and the factory of the transports under test.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rgpu/transport/transport.h"

namespace rgpu::transport::testing {

using namespace std::chrono_literals;

// Bound for every wait in these tests.
constexpr auto kWait = 20s;

// Deterministic pseudo-random bytes; differs per seed and per offset.
inline std::vector<std::byte> pattern(size_t n, uint32_t seed) {
  std::vector<std::byte> v(n);
  uint64_t x = (uint64_t{seed} << 32 | 0x9e3779b9u) * 0xbf58476d1ce4e5b9ull + 1;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(v.data() + i, &x, 8);
  }
  for (; i < n; ++i) v[i] = static_cast<std::byte>(x >> (8 * (i % 8)) ^ i);
  return v;
}

inline std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> v(s.size());
  std::memcpy(v.data(), s.data(), s.size());
  return v;
}

inline std::string string_of(const std::vector<std::byte>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size());
}

// Collects messages and close notifications from handlers on any thread.
class Recorder {
 public:
  void add_message(Message m) {
    std::lock_guard<std::mutex> lock(mu_);
    messages_.push_back(std::move(m));
    cv_.notify_all();
  }
  void add_closed(const Status& st) {
    std::lock_guard<std::mutex> lock(mu_);
    closed_.push_back(st);
    cv_.notify_all();
  }
  void add_note(std::string note) {
    std::lock_guard<std::mutex> lock(mu_);
    notes_.push_back(std::move(note));
    cv_.notify_all();
  }
  bool wait_messages(size_t n, std::chrono::milliseconds timeout = kWait) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return messages_.size() >= n; });
  }
  bool wait_closed(std::chrono::milliseconds timeout = kWait) { return wait_closed(1, timeout); }
  bool wait_closed(size_t n, std::chrono::milliseconds timeout = kWait) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return closed_.size() >= n; });
  }
  bool wait_notes(size_t n, std::chrono::milliseconds timeout = kWait) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return notes_.size() >= n; });
  }
  std::vector<Message> take_messages() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(messages_);
  }
  std::vector<Status> closed() {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }
  std::vector<std::string> notes() {
    std::lock_guard<std::mutex> lock(mu_);
    return notes_;
  }
  size_t message_count() {
    std::lock_guard<std::mutex> lock(mu_);
    return messages_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Message> messages_;
  std::vector<Status> closed_;
  std::vector<std::string> notes_;
};

// A handler that records into `r`.
inline ConnectionHandler recording_handler(std::shared_ptr<Recorder> r) {
  return ConnectionHandler{
      [r](Connection&, Message m) { r->add_message(std::move(m)); },
      [r](Connection&, const Status& st) { r->add_closed(st); },
  };
}

// Transports under test, by name: "inproc", "ucx" (UCX's own rendezvous
// threshold) and "ucx_rndv" (rendezvous forced from 4 KiB).
inline std::unique_ptr<Transport> make_transport(const std::string& kind) {
  if (kind == "inproc") return make_inproc_transport();
  UcxOptions options;
  if (kind == "ucx_rndv") options.rendezvous_threshold = 4096;
  auto t = make_ucx_transport(options);
  if (!t.is_ok()) {
    ADD_FAILURE() << t.status().to_string();
    return nullptr;
  }
  return std::move(t.value());
}

}  // namespace rgpu::transport::testing
