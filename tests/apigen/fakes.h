// Test doubles for the generated dispatch rows: a driver table whose few
// filled entries record what they were given, and a CallEnv with its own
// handle table and ledger. Device memory is host memory here, so a row that
// let a bad range through would touch memory outside an allocation, which
// the sanitizers of the fuzz build report.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "call_env.h"
#include "dispatch.h"
#include "rgpu/protocol/args.h"

namespace rgpu::server::apigen_test {

const DispatchRow* find_test_row(uint32_t function);
const DispatchRow* find_test_row_at(size_t i);

// What the fake driver functions saw (the last call of each).
struct DriverLog {
  int calls = 0;
  bool got_null_out = false;  // an out pointer came as NULL
  CUstream stream = reinterpret_cast<CUstream>(~uintptr_t{0});
  CUfunction function = nullptr;
  int attribute = -1;
  int value = 0;
  std::vector<CUevent> destroyed;
  unsigned flags = 0;
};

// The log the fake driver functions write (one per process; tests reset it).
DriverLog& driver_log();

// A driver table with the functions the generated rows of driver.api and
// apigen_test.api call, each a fake.
std::shared_ptr<DriverTable> fake_driver();

// One context's view of the session: handles by kind, and allocations of
// real host memory standing in for device memory.
class FakeEnv : public CallEnv {
 public:
  explicit FakeEnv(std::shared_ptr<DriverTable> driver) : driver_(std::move(driver)) {}
  ~FakeEnv() override;

  const DriverTable& driver() const override { return *driver_; }
  const void* library_table(size_t index) const override {
    auto it = libraries_.find(index);
    return it == libraries_.end() ? nullptr : it->second;
  }
  // Answers library_table(index) with `table` (a fake library's; not owned).
  void set_library(size_t index, const void* table) { libraries_[index] = table; }
  const ServerLimits& limits() const override { return limits_; }
  uint64_t context() const override { return protocol::primary_context(0); }
  bool device_range(uint64_t ptr, uint64_t size) const override;
  void* find(protocol::HandleKind kind, uint64_t handle) const override;
  uint64_t parent(protocol::HandleKind kind, uint64_t handle) const override;
  bool handle_room() override { return handles_.size() < kMaxHandles; }
  static constexpr size_t kMaxHandles = 64;
  bool stream(uint64_t handle, CUstream* out) const override;
  bool add(protocol::HandleKind kind, uint64_t handle, void* object, uint64_t parent,
           std::function<void(void*)> destroy) override;
  bool remove(protocol::HandleKind kind, uint64_t handle) override;

  // A zeroed allocation of this context (at most kMaxAllocation bytes), as a
  // device address. Allocations come from one arena mapped at a fixed
  // address, so the same calls get the same addresses in every process (the
  // fuzzer's seeds stay valid), and each one ends right before a page with
  // no access, so a row that let a write run past an allocation crashes.
  // One FakeEnv allocates at a time: a new one starts the arena afresh.
  static constexpr size_t kMaxAllocation = 64 * 1024;
  uint64_t allocate(size_t size);
  // A handle registered without a destroy function.
  void put(protocol::HandleKind kind, uint64_t handle, void* object);
  size_t handle_count() const { return handles_.size(); }

 private:
  struct Entry {
    protocol::HandleKind kind;
    void* object;
    std::function<void(void*)> destroy;
    uint64_t parent = 0;
  };
  std::shared_ptr<DriverTable> driver_;
  std::map<size_t, const void*> libraries_;
  ServerLimits limits_;
  std::map<uint64_t, Entry> handles_;
  std::vector<std::pair<uint64_t, uint64_t>> memory_;  // [base, size)
};

// A valid call of every generated row (of driver.api and apigen_test.api),
// made with the generated pack functions against `env`'s allocations and
// handles: the fuzzers' seeds and the undecodable-input tests' start.
struct ValidCall {
  const DispatchRow* row;
  std::vector<std::byte> args;
};
std::vector<ValidCall> valid_calls(FakeEnv& env);

}  // namespace rgpu::server::apigen_test
