// What a generated dispatch row may ask of the session it runs in: the
// driver (and library) tables, the session's handle table and its ledger of
// device memory. Session implements it; tests use a fake.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "rgpu/protocol/handles.h"
#include "rgpu/server/driver_table.h"
#include "rgpu/server/server.h"

namespace rgpu::server {

// Thread-safety: a CallEnv is used only on the thread that runs the call
// (the session's executor, or the transport's thread for an inline batch),
// while the session's execution lock is held.
class CallEnv {
 public:
  virtual ~CallEnv() = default;

  virtual const DriverTable& driver() const = 0;
  // The function table of remoted library `index` (server/generated/
  // library_tables_gen.h, kLibraries), loaded on first use; null when this
  // server cannot load that library. Rows use library_table<T>(env).
  virtual const void* library_table(size_t index) const = 0;
  virtual const ServerLimits& limits() const = 0;

  // The server's device for the session's device ordinal `ordinal` (the
  // session sees only its slices, numbered from 0); false for an ordinal
  // the session does not have. The default maps every ordinal to itself.
  virtual bool device(CUdevice ordinal, CUdevice* out) const {
    *out = ordinal;
    return true;
  }

  // The client handle of the context the call runs in (0: none); the row
  // runs with that context current.
  virtual uint64_t context() const = 0;

  // Whether [ptr, ptr + size) lies inside one allocation of the call's own
  // context (not merely of the device or of the session). size 0 checks ptr.
  virtual bool device_range(uint64_t ptr, uint64_t size) const = 0;

  // The driver or library object behind `handle` when it is one of this
  // session's live handles of `kind`; null otherwise (forged, destroyed, or
  // of another kind).
  virtual void* find(protocol::HandleKind kind, uint64_t handle) const = 0;

  // The stream `handle` names for this call: one of the special streams
  // (kNullStream, kLegacyStream, kPerThreadStream, as the driver spells
  // them), or a live stream of the call's own context. False otherwise.
  virtual bool stream(uint64_t handle, CUstream* out) const = 0;

  // The parent `handle` was registered under (a context, module, ...);
  // 0 when it is not a live handle of `kind`.
  virtual uint64_t parent(protocol::HandleKind kind, uint64_t handle) const = 0;

  // Whether the session may hold one more handle (false, with its reason
  // noted, at rgpud's limit).
  virtual bool handle_room() = 0;

  // Registers an object the call created under the client-minted `handle`,
  // a child of `parent` (a context, module, ...; 0: the call's context).
  // `destroy` releases the object and runs when the handle is removed, or
  // when its parent goes. False (and nothing registered) when the handle is
  // not a fresh minted one of `kind` or the session is at its handle limit.
  virtual bool add(protocol::HandleKind kind, uint64_t handle, void* object, uint64_t parent,
                   std::function<void(void*)> destroy) = 0;

  // Removes `handle` and, children first, everything it owns, running their
  // destroy functions. False when it is not a live handle of `kind`.
  virtual bool remove(protocol::HandleKind kind, uint64_t handle) = 0;
};

}  // namespace rgpu::server
