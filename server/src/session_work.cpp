// Session: the calls that put work on the device (module loads, launches,
// host functions, the asynchronous calls), and the waits and copy-outs that
// follow them: completion events, context watches, queued device-to-host
// copies.
#include <algorithm>
#include <cstring>

#include "copy_source.h"
#include "executing.h"
#include "rgpu/common/log.h"
#include "rgpu/common/reason.h"
#include "rgpu/fatbin/fatbin.h"
#include "rgpu/protocol/args.h"
#include "session.h"

namespace rgpu::server {

Session::Outcome Session::load_module(wire::Call::Reader call, transport::Message& message) {
  Outcome out;
  auto in = call.getModuleLoad();
  auto hash_bytes = in.getHash();
  if (hash_bytes.size() != 32 || !HandleTable::nameable(protocol::HandleKind::kModule, in.getHandle()) ||
      handles_.find(protocol::HandleKind::kModule, in.getHandle())) {
    out.result = CUDA_ERROR_INVALID_VALUE;
    return out;
  }
  if (!handle_room()) {
    out.result = CUDA_ERROR_OUT_OF_MEMORY;
    return out;
  }
  fatbin::ContentHash hash;
  std::memcpy(hash.bytes.data(), hash_bytes.begin(), 32);
  std::string key = hash.to_hex();
  ModuleCache::Image image;
  if (in.getImageBytes() == 0) {
    image = module_cache_->find(key);
    if (!image) {
      out.result = CUDA_ERROR_NOT_FOUND;
      out.need_image = true;
      return out;
    }
  } else {
    // The declared size is checked against the limit and against the bytes
    // that really came before anything is allocated for it.
    const uint64_t size = in.getImageBytes();
    const bool inline_image = call.getPayloadBytes() == 0;
    if (size > limits_.max_module_bytes) {
      out.result = CUDA_ERROR_INVALID_VALUE;
      out.message = "module image of " + std::to_string(size) + " bytes is over the server's limit of " +
                    std::to_string(limits_.max_module_bytes);
      note_reason(out.result, out.message + " (rgpud --limit module-bytes=N)");
      return out;
    }
    if (inline_image ? in.getImage().size() != size
                     : !message.payload || message.payload->size() != size || call.getPayloadBytes() != size) {
      out.result = CUDA_ERROR_INVALID_VALUE;
      out.message = "module image size does not match the bytes sent";
      return out;
    }
    std::vector<std::byte> bytes(size + 1);  // + NUL: PTX text must end in one
    if (inline_image) {
      std::memcpy(bytes.data(), in.getImage().begin(), size);
    } else if (!message.payload->receive(bytes.data()).is_ok()) {
      out.result = CUDA_ERROR_INVALID_VALUE;
      return out;
    }
    message.payload.reset();
    // The hash names the image for every session: never trust it unchecked.
    auto actual = fatbin::content_hash(fatbin::Bytes(reinterpret_cast<const uint8_t*>(bytes.data()), size));
    if (!(actual == hash)) {
      out.result = CUDA_ERROR_INVALID_VALUE;
      out.message = "module image does not match its hash";
      return out;
    }
    image = module_cache_->insert(key, std::move(bytes));
  }
  // The image is device memory the session holds as long as the module is loaded.
  const uint64_t handle = in.getHandle();
  if (!fits(call.getCtx(), image->size() - 1) || !ledger_.charge_module(call.getCtx(), handle, image->size() - 1)) {
    out.result = CUDA_ERROR_OUT_OF_MEMORY;
    out.message = "module image past the session's memory quota";
    note_quota(call.getCtx(), image->size() - 1);
    return out;
  }
  CUmodule module = nullptr;
  out.result = cu_.cuModuleLoadData(&module, image->data());
  if (out.result != CUDA_SUCCESS) {
    ledger_.drop_module(handle);
    return out;
  }
  // Its globals took device memory as it loaded: that counts too, and a
  // module whose globals pass the quota is unloaded again and refused.
  unsigned long long globals = 0;
  if (cu_.rgpuModuleGetMemoryBytes && cu_.rgpuModuleGetMemoryBytes(module, &globals) == CUDA_SUCCESS &&
      globals > 0 && (!fits(call.getCtx(), globals) || !ledger_.grow_module(handle, globals))) {
    note_quota(call.getCtx(), globals, "the module's global variables");  // its image still counted
    cu_.cuModuleUnload(module);
    ledger_.drop_module(handle);
    out.result = CUDA_ERROR_OUT_OF_MEMORY;
    out.message = "module globals past the session's memory quota";
    return out;
  }
  // Unloading goes through the table: its functions first, then its globals
  // and image leave the ledger, then the module, in its own context.
  out.result = add_handle(protocol::HandleKind::kModule, handle, module, call.getCtx(),
                          [this, handle, ctx = context_object(call.getCtx())](void* object) {
                            ledger_.drop_module(handle);
                            set_current(ctx);
                            cu_.cuModuleUnload(static_cast<CUmodule>(object));
                          });
  return out;
}

CUresult Session::launch(uint64_t ctx, wire::Call::Launch::Reader in) {
  auto f = static_cast<CUfunction>(handles_.find(protocol::HandleKind::kFunction, in.getFunction()));
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  CUstream stream;
  if (CUresult r = lookup_stream(ctx, in.getStream(), &stream); r != CUDA_SUCCESS) return r;
  auto params = in.getParams();
  size_t size = params.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<capnp::byte*>(params.begin()),
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  auto run = [&] {
    return cu_.cuLaunchKernel(f, in.getGridX(), in.getGridY(), in.getGridZ(), in.getBlockX(), in.getBlockY(),
                              in.getBlockZ(), in.getSharedMem(), stream, nullptr, size > 0 ? extra : nullptr);
  };
  // On a slice with a share, in the slice's turn (TimeShare).
  if (auto ts = time_shares_.find(ctx); ts != time_shares_.end()) return ts->second->launch(stream, run);
  return run();
}

CUresult Session::launch_host_func(uint64_t ctx, wire::Call::HostFunc::Reader in) {
  CUstream stream;
  if (CUresult r = lookup_stream(ctx, in.getStream(), &stream); r != CUDA_SUCCESS) return r;
  if (CUresult r = refuse_if_capturing(stream); r != CUDA_SUCCESS) return r;
  HostFuncWait* wait;
  {
    std::lock_guard<std::mutex> lock(host_funcs_mu_);
    auto [it, added] = host_funcs_.try_emplace(in.getId(), nullptr);
    if (!added) return CUDA_ERROR_INVALID_VALUE;
    it->second = std::make_unique<HostFuncWait>();
    it->second->session = this;
    it->second->id = in.getId();
    wait = it->second.get();
  }
  CUresult r = cu_.cuLaunchHostFunc(stream, &Session::host_func_trampoline, wait);
  if (r != CUDA_SUCCESS) {
    std::lock_guard<std::mutex> lock(host_funcs_mu_);
    host_funcs_.erase(in.getId());
  }
  return r;
}

// Runs on the device's callback thread when the stream reaches the host
// function or step: asks the client to run it and holds the stream until it
// has. A copy to the client sends the staged bytes along; one from it gets
// them in the answer (host_func_done).
void CUDA_CB Session::host_func_trampoline(void* arg) {
  auto* wait = static_cast<HostFuncWait*>(arg);
  Session* self = wait->session;
  const uint64_t id = wait->id;
  {
    std::lock_guard<std::mutex> lock(self->host_funcs_mu_);
    if (self->host_funcs_closed_) return;  // nobody will answer
    wait->done = false;
  }
  capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
  auto call = builder.initRoot<wire::Envelope>().initHostFuncCall();
  call.setId(id);
  if (wait->kind == protocol::HostStepKind::kCopyOut) {
    call.setBytes(kj::arrayPtr(reinterpret_cast<const capnp::byte*>(wait->buffer.get()), wait->size));
  }
  auto words = protocol::encode(builder);
  bool sent = self->connection_->send(protocol::as_bytes(words)).is_ok();
  std::unique_lock<std::mutex> lock(self->host_funcs_mu_);
  if (sent) self->host_funcs_cv_.wait(lock, [&] { return wait->done; });
  if (!wait->step) self->host_funcs_.erase(id);
}

void Session::host_func_done(uint64_t id, capnp::Data::Reader bytes) {
  std::lock_guard<std::mutex> lock(host_funcs_mu_);
  auto it = host_funcs_.find(id);
  if (it == host_funcs_.end()) return;
  HostFuncWait& wait = *it->second;
  // A copy from the client takes exactly its size; any other answer leaves
  // the staged bytes as they were (only this session's own copy is wrong).
  if (wait.kind == protocol::HostStepKind::kCopyIn && bytes.size() == wait.size && wait.size > 0) {
    memcpy(wait.buffer.get(), bytes.begin(), wait.size);
  }
  wait.done = true;
  host_funcs_cv_.notify_all();
}

CUresult Session::execute_async(wire::Call::Reader call, transport::Message& message) {
  using protocol::HandleKind;
  auto stage = [this](size_t n) { return staging(n); };
  CUresult r = CUDA_SUCCESS;
  const uint64_t ctx = call.getCtx();
  switch (call.which()) {
    case wire::Call::CTX_CREATE: {
      auto in = call.getCtxCreate();
      // A primary context's handle is the device's own, never a created one's.
      if (!protocol::is_minted(in.getHandle())) return CUDA_ERROR_INVALID_VALUE;
      return create_context(in.getHandle(), in.getDevice(), in.getFlags());
    }
    case wire::Call::PRIMARY_CTX_RETAIN: {
      auto in = call.getPrimaryCtxRetain();
      if (in.getDevice() < 0 || in.getHandle() != protocol::primary_context(static_cast<uint32_t>(in.getDevice()))) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      if (context_object(in.getHandle())) return CUDA_SUCCESS;
      return create_context(in.getHandle(), in.getDevice(), in.getFlags());
    }
    case wire::Call::PRIMARY_CTX_RELEASE: {
      const uint64_t h = call.getPrimaryCtxRelease().getHandle();
      if (!protocol::is_primary_context(h)) return CUDA_ERROR_INVALID_CONTEXT;
      return destroy_context(h);
    }
    case wire::Call::MODULE_UNLOAD: {
      if (!handles_.remove(HandleKind::kModule, call.getModuleUnload().getHandle())) return CUDA_ERROR_INVALID_HANDLE;
      return CUDA_SUCCESS;
    }
    default:
      break;
  }
  if ((r = make_current(ctx)) != CUDA_SUCCESS) {
    if (call.which() == wire::Call::MEMCPY_DTO_H) {
      // The client waits for every async copy-out: always answer it.
      queue_copy_out(ctx, call.getMemcpyDtoH().getStream(), PendingCopyOut{call.getId(), 0, nullptr, {}, 0, r});
    }
    return r;
  }
  switch (call.which()) {
    case wire::Call::MODULE_GET_FUNCTION: {
      auto in = call.getModuleGetFunction();
      auto module = static_cast<CUmodule>(handles_.find(HandleKind::kModule, in.getModule()));
      if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
      if (!HandleTable::nameable(HandleKind::kFunction, in.getHandle()) ||
          handles_.find(HandleKind::kFunction, in.getHandle())) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      if (!handle_room()) return CUDA_ERROR_OUT_OF_MEMORY;
      CUfunction f = nullptr;
      if ((r = cu_.cuModuleGetFunction(&f, module, in.getName().cStr())) != CUDA_SUCCESS) return r;
      return add_handle(HandleKind::kFunction, in.getHandle(), f, in.getModule(), nullptr);
    }
    case wire::Call::LAUNCH_KERNEL:
      return launch(ctx, call.getLaunchKernel());
    case wire::Call::FUNC_SET_ATTRIBUTE: {
      auto in = call.getFuncSetAttribute();
      auto f = static_cast<CUfunction>(handles_.find(HandleKind::kFunction, in.getFunction()));
      if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
      return cu_.cuFuncSetAttribute(f, static_cast<CUfunction_attribute>(in.getAttribute()), in.getValue());
    }
    case wire::Call::LAUNCH_HOST_FUNC:
      return launch_host_func(ctx, call.getLaunchHostFunc());
    case wire::Call::STREAM_WAIT_EVENT: {
      CUevent e;
      CUstream s;
      auto in = call.getStreamWaitEvent();
      if ((r = lookup_stream(ctx, in.getStream(), &s)) != CUDA_SUCCESS) return r;
      if ((r = lookup_event(in.getEvent(), &e)) != CUDA_SUCCESS) return r;
      return cu_.cuStreamWaitEvent(s, e, in.getFlags());
    }
    case wire::Call::MEMCPY_HTO_D: {
      auto in = call.getMemcpyHtoD();
      CUstream s;
      if ((r = lookup_stream(ctx, in.getStream(), &s)) != CUDA_SUCCESS) return r;
      if ((r = check_range(ctx, in.getDst(), in.getSize())) != CUDA_SUCCESS) return r;
      if ((r = refuse_if_capturing(s)) != CUDA_SUCCESS) return r;
      SourceBytes src;
      r = source_bytes(in, call.getPayloadBytes(), message, true, true, stage, &src);
      if (r != CUDA_SUCCESS) return r;
      if (in.getSize() == 0) return CUDA_SUCCESS;
      if ((r = cu_.cuMemcpyHtoDAsync(in.getDst(), src.data, in.getSize(), s)) != CUDA_SUCCESS) return r;
      // The staged bytes may be reused only once the device has read them:
      // an event marks that. Without one (a failed create or record), wait
      // for the stream here rather than let the buffer go too early.
      CUevent done = completion_event(s, &r);
      if (done == nullptr) {
        cu_.cuStreamSynchronize(s);
        return r;
      }
      staging_.push_back(Staged{done, std::move(src.owned)});
      return CUDA_SUCCESS;
    }
    case wire::Call::MEMCPY_DTO_H: {
      auto in = call.getMemcpyDtoH();
      PendingCopyOut pending{call.getId(), reinterpret_cast<uint64_t>(context_object(ctx)), nullptr, {},
                             in.getSize(), CUDA_SUCCESS};
      CUstream s;
      r = lookup_stream(ctx, in.getStream(), &s);
      if (r == CUDA_SUCCESS) r = check_range(ctx, in.getSrc(), in.getSize());
      // Past the session's limit of pending completions the copy is refused
      // before it is issued, as one past its bytes in flight is.
      if (r == CUDA_SUCCESS && !watch_room()) r = CUDA_ERROR_OUT_OF_MEMORY;
      if (r == CUDA_SUCCESS) r = refuse_if_capturing(s);
      if (r == CUDA_SUCCESS && in.getSize() > 0) {
        pending.buffer = staging(in.getSize());
        r = pending.buffer ? cu_.cuMemcpyDtoHAsync(pending.buffer.get(), in.getSrc(), in.getSize(), s)
                           : CUDA_ERROR_OUT_OF_MEMORY;
        if (r == CUDA_SUCCESS && (pending.done = completion_event(s, &r)) == nullptr) {
          cu_.cuStreamSynchronize(s);  // the copy may still write into the buffer
        }
      }
      if (r != CUDA_SUCCESS) {
        pending.buffer.reset();
        pending.size = 0;
        pending.result = r;
      }
      queue_copy_out(ctx, in.getStream(), std::move(pending));
      return r;
    }
    case wire::Call::MEMCPY_DTO_D: {
      auto in = call.getMemcpyDtoD();
      CUstream s;
      if ((r = lookup_stream(ctx, in.getStream(), &s)) != CUDA_SUCCESS) return r;
      if ((r = check_range(ctx, in.getDst(), in.getSize())) != CUDA_SUCCESS) return r;
      if ((r = check_range(ctx, in.getSrc(), in.getSize())) != CUDA_SUCCESS) return r;
      if (in.getSize() == 0) return CUDA_SUCCESS;
      return cu_.cuMemcpyDtoDAsync(in.getDst(), in.getSrc(), in.getSize(), s);
    }
    case wire::Call::MEMSET: {
      auto in = call.getMemset();
      CUstream s;
      unsigned es = in.getElementSize();
      if ((es != 1 && es != 2 && es != 4) || in.getCount() > UINT64_MAX / es) return CUDA_ERROR_INVALID_VALUE;
      if ((r = lookup_stream(ctx, in.getStream(), &s)) != CUDA_SUCCESS) return r;
      if ((r = check_range(ctx, in.getDst(), in.getCount() * es)) != CUDA_SUCCESS) return r;
      if (es == 1) return cu_.cuMemsetD8Async(in.getDst(), static_cast<unsigned char>(in.getValue()), in.getCount(), s);
      if (es == 2) return cu_.cuMemsetD16Async(in.getDst(), static_cast<unsigned short>(in.getValue()), in.getCount(), s);
      return cu_.cuMemsetD32Async(in.getDst(), in.getValue(), in.getCount(), s);
    }
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

CUevent Session::completion_event(CUstream stream, CUresult* result) {
  CUevent done = nullptr;
  CUresult r = cu_.cuEventCreate(&done, CU_EVENT_DISABLE_TIMING);
  if (r == CUDA_SUCCESS && (r = cu_.cuEventRecord(done, stream)) != CUDA_SUCCESS) {
    cu_.cuEventDestroy(done);
    done = nullptr;
  }
  if (r != CUDA_SUCCESS) {
    RGPU_WARN("session completion event failed id=%llu result=%d", static_cast<unsigned long long>(id_), r);
    *result = r;
  }
  return done;
}

bool Session::context_watch(uint64_t ctx, Watch* watch, CUresult* first_error, CUresult* result) {
  // The streams context_idle() looks at; an event after each busy one's work.
  std::vector<CUstream> streams{nullptr};
  for (uint64_t stream : handles_.children(ctx, protocol::HandleKind::kStream)) {
    streams.push_back(static_cast<CUstream>(handles_.find(protocol::HandleKind::kStream, stream)));
  }
  if (used_per_thread_stream_) {
    if (std::this_thread::get_id() == executor_id_) {
      streams.push_back(CU_STREAM_PER_THREAD);
    } else {
      // Another thread's per-thread stream cannot be named here (an inline
      // batch): the poller ends with a context synchronize instead.
      watch->ctx_synchronize = true;
    }
  }
  for (CUstream s : streams) {
    const CUresult q = cu_.cuStreamQuery(s);
    if (q == CUDA_SUCCESS) continue;
    if (q != CUDA_ERROR_NOT_READY) {
      if (*first_error == CUDA_SUCCESS) *first_error = q;
      continue;
    }
    CUevent done = completion_event(s, result);
    if (done == nullptr) {  // *result says why
      for (CUevent e : watch->events) cu_.cuEventDestroy(e);
      watch->events.clear();
      return true;
    }
    watch->events.push_back(done);
    if (s != CU_STREAM_PER_THREAD) watch->streams.push_back(s);
  }
  return !watch->events.empty() || watch->ctx_synchronize;
}

bool Session::watch_room() const {
  // Only the executor may be refused, to wait itself: a batch run inline
  // holds the transport's thread, which must never block on device work
  // (post() keeps batches from running inline near the limit).
  return pending_watches_.load(std::memory_order_relaxed) < limits_.max_session_waits ||
         std::this_thread::get_id() != executor_id_;
}

bool Session::add_watch(uint64_t ctx, Watch watch) {
  if (!watch_room()) return false;
  // The ledger knows the session's ordinal of the context; the pollers are
  // the server's devices'.
  const uint32_t slot = ledger_.device_of(ctx);
  const uint32_t device = slot < devices_.size() ? devices_[slot].device : 0;
  pending_watches_.fetch_add(1, std::memory_order_relaxed);
  watch.owner = id_;
  watch.done = [this, done = std::move(watch.done)](CUresult r) {
    // A poller is shared by every session of its device: while it waits to
    // send this answer, other sessions' batches must not run on it.
    Executing executing;
    // Before the answer goes: a client that saw it may rightly send more.
    pending_watches_.fetch_sub(1, std::memory_order_relaxed);
    done(r);
  };
  pollers_->of(static_cast<int>(device)).add(std::move(watch));
  return true;
}

void Session::wait_then_reply(uint64_t call_id, uint64_t ctx, Watch watch, CUresult first_error,
                              const std::function<CUresult()>& wait) {
  std::vector<CUevent> events = watch.events;
  watch.done = [this, call_id, first_error](CUresult r) {
    send_reply(call_id, Outcome{first_error != CUDA_SUCCESS ? first_error : r});
  };
  if (add_watch(ctx, std::move(watch))) return;
  // Past the session's limit of watches: this wait runs here.
  for (CUevent e : events) cu_.cuEventDestroy(e);
  const CUresult r = wait();
  send_reply(call_id, Outcome{first_error != CUDA_SUCCESS ? first_error : r});
}

void Session::queue_copy_out(uint64_t ctx, uint64_t stream, PendingCopyOut pending) {
  auto p = std::make_shared<PendingCopyOut>(std::move(pending));
  Watch watch;
  watch.ctx = reinterpret_cast<CUcontext>(p->ctx);
  watch.order = stream + 1;  // 0 is "no order"
  if (p->done != nullptr) watch.events.push_back(p->done);
  p->done = nullptr;  // the watch's now
  watch.done = [this, p](CUresult waited) { complete_copy_out(*p, waited); };
  std::vector<CUevent> events = watch.events;
  if (!add_watch(ctx, std::move(watch))) {
    // Past the session's limit of watches (a copy that failed when issued;
    // a good one was refused before): answered now. Had it been issued, its
    // buffer would go with its event, once the device is done with it.
    if (!events.empty()) staging_.push_back(Staged{events[0], std::move(p->buffer)});
    if (p->result == CUDA_SUCCESS) {
      p->result = CUDA_ERROR_OUT_OF_MEMORY;
      record_async_error(p->call_id, p->result);
    }
    p->buffer.reset();
    p->size = 0;
    complete_copy_out(*p, p->result);
  }
}

void Session::complete_copy_out(PendingCopyOut& p, CUresult waited) {
  CUresult r = p.result != CUDA_SUCCESS ? p.result : waited;
  capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
  auto done = builder.initRoot<wire::Envelope>().initCopyDone();
  done.setId(p.call_id);
  done.setResult(r);
  transport::Bytes payload;
  if (r == CUDA_SUCCESS && p.size > 0) {
    if (p.size <= kReplyBytesLimit) {
      done.setBytes(kj::arrayPtr(reinterpret_cast<const capnp::byte*>(p.buffer.get()), p.size));
    } else {
      done.setPayloadBytes(p.size);
      payload = transport::Bytes(p.buffer.get(), p.size);
    }
  }
  // An error found when the copy was issued was recorded then, not again.
  if (r != CUDA_SUCCESS && p.result == CUDA_SUCCESS) record_async_error(p.call_id, r);
  auto words = protocol::encode(builder);
  if (payload.empty()) {
    (void)connection_->send(protocol::as_bytes(words), payload);
    return;
  }
  // The bytes go without this thread (a device's poller, which serves every
  // session on the device) waiting for the client to take them: a client
  // that stops reading holds its own staging buffer, which counts against
  // its bytes in flight, and nobody's thread (docs/security.md, "Slow
  // readers").
  send_untaken(words, payload, std::move(p.buffer));
}

}  // namespace rgpu::server
