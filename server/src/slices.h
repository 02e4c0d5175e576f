// Slices of the server's devices and the admission of sessions to them
// (docs/sharing.md): the operator's cuts (--slices, a config file), their
// checks against the devices, and which slices are free.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "handshake.h"
#include "rgpu/common/status.h"

namespace rgpu::server {

// One slice as the operator wrote it: bytes of device memory and a share of
// the device's compute (above 0, at most 1).
struct SliceSpec {
  uint64_t memory_bytes = 0;
  float share = 1;
};

// The cuts of one device, in the order written.
struct DeviceSlicing {
  uint32_t device = 0;
  std::vector<SliceSpec> slices;
};

// "DEV:SIZE@SHARE[,SIZE@SHARE...]", e.g. "1:2G@0.5,1G@0.25"; SIZE in
// parse_size's form, SHARE in parse_share's. A malformed text is an error
// that names the part at fault. (Checks against the device come later, in
// SliceTable::make.)
Result<DeviceSlicing> parse_slicing(std::string_view text);

// What rgpud was told about sharing, from its command line or config file.
struct SharingOptions {
  std::vector<DeviceSlicing> slicing;  // at most one entry per device
  // Sessions one slice may hold at once; 0: the defaults, one for a
  // configured slice, any number for a whole device.
  uint32_t max_sessions_per_slice = 0;
  // The quota of a session on a whole device when it asks for none (0: none).
  uint64_t session_memory = 0;
};

class SliceTable;

// The slices one session holds; gives them back when destroyed (when the
// session has freed its device memory). Thread-safe.
class Admission {
 public:
  Admission(std::shared_ptr<SliceTable> table, std::vector<uint32_t> slots);
  ~Admission();
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

 private:
  const std::shared_ptr<SliceTable> table_;
  const std::vector<uint32_t> slots_;
};

// Every slice of the server: each configured cut, and each device without
// cuts as one whole slice shared by any number of sessions (the behaviour of
// a server without slices). admit() picks free slices that fit a request
// and reserves them until the returned Admission is destroyed.
// Lifetime: shared by the server and every Admission. Thread-safe.
class SliceTable : public std::enable_shared_from_this<SliceTable> {
 public:
  struct Slot {
    uint32_t device = 0;      // the server's device ordinal
    int index = -1;           // the slice of the device; -1: the whole device
    uint64_t memory = 0;      // bytes: the slice's size, or the device's memory
    float share = 1;          // of the device's compute
    uint32_t max_sessions = 0;  // 0: any number
    uint32_t sessions = 0;      // holding it now
  };

  // Checks `options` against the devices (their memory in bytes, by
  // ordinal): a slice of a device that does not exist, slices whose sizes
  // add up to more than the device's memory, or whose shares add up to more
  // than 1, or a device cut twice, is an error naming the device and sums.
  static Result<std::shared_ptr<SliceTable>> make(const std::vector<uint64_t>& device_memory,
                                                  const SharingOptions& options);

  // Picks and reserves slices for `request`: `devices` of them (0: one
  // when the server has configured slices, else every device), each with at
  // least the memory and share asked for, on distinct devices where there
  // are enough, best fitting first. The session sees them in the returned
  // order (by device, then slice). An error, naming what was asked and what
  // is free, when not enough fit.
  Result<std::pair<std::vector<Placement>, std::unique_ptr<Admission>>> admit(const Resources& request);

  // Pool mode: reserves exactly the slices a verified lease grants here,
  // in the lease's order. The pool's slice 0 of a device without configured
  // slices is the whole device (index -1); its slice N of a cut device is
  // the N-th cut. Each session gets the lease's memory as its quota and
  // the lease's share. An error naming the slice when one does not exist
  // or has no room for another session.
  Result<std::pair<std::vector<Placement>, std::unique_ptr<Admission>>> admit_leased(
      const std::vector<LeasedSlice>& leased);

  bool sliced() const { return sliced_; }
  // Every slot, with its sessions now (for logs and tests).
  std::vector<Slot> slots() const;
  // "device 1 slice 0 (512 MiB, share 0.25)", for logs and refusals.
  static std::string describe(const Slot& slot);

 private:
  friend class Admission;
  SliceTable(std::vector<Slot> slots, uint64_t session_memory, bool sliced);
  void release(const std::vector<uint32_t>& slots);
  std::string free_list_locked() const;

  const uint64_t session_memory_;
  const bool sliced_;
  mutable std::mutex mu_;
  std::vector<Slot> slots_;
};

}  // namespace rgpu::server
