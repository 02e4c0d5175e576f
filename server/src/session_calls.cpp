// Session: how each call runs (inline, sync, deferred, waiting), the typed
// calls answered at once, the generated calls (Call.invoke) and the memory
// quota. The calls that put work on the device are in session_work.cpp.
#include <endian.h>

#include <algorithm>
#include <cstring>

#include "rgpu/common/log.h"
#include "rgpu/common/reason.h"
#include "rgpu/fatbin/fatbin.h"
#include "rgpu/protocol/args.h"
#include "copy_source.h"
#include "executing.h"
#include "session.h"

namespace rgpu::server {
namespace {

// The generated cuMemGetInfo row, whose answer a memory quota rewrites.
const DispatchRow* mem_get_info_row() {
  static const DispatchRow* const row = [] {
    for (size_t i = 0; const DispatchRow* r = find_driver_row_at(i); ++i) {
      if (std::strcmp(r->name, "cuMemGetInfo_v2") == 0) return r;
    }
    return static_cast<const DispatchRow*>(nullptr);
  }();
  return row;
}

bool is_sync(wire::Call::Reader call) {
  switch (call.which()) {
    case wire::Call::CTX_DESTROY:
    case wire::Call::CTX_SYNCHRONIZE:
    case wire::Call::PRIMARY_CTX_RESET:
    case wire::Call::MEM_ALLOC:
    case wire::Call::MEM_FREE:
    case wire::Call::STREAM_SYNCHRONIZE:
    case wire::Call::EVENT_SYNCHRONIZE:
    case wire::Call::MODULE_LOAD:
    case wire::Call::MODULE_GET_GLOBAL:
    case wire::Call::FUNC_GET_ATTRIBUTES:
    case wire::Call::GRAPH:
      return true;
    case wire::Call::MEMCPY_HTO_D: return !call.getMemcpyHtoD().getAsync();
    case wire::Call::MEMCPY_DTO_H: return !call.getMemcpyDtoH().getAsync();
    case wire::Call::MEMCPY_DTO_D: return !call.getMemcpyDtoD().getAsync();
    case wire::Call::MEMSET: return !call.getMemset().getAsync();
    default:
      return false;
  }
}

bool is_wait(wire::Call::Reader call) {
  auto w = call.which();
  return w == wire::Call::CTX_SYNCHRONIZE || w == wire::Call::STREAM_SYNCHRONIZE ||
         w == wire::Call::EVENT_SYNCHRONIZE;
}

// Largest synchronous copy that may run on the transport's thread. That
// thread drives the transfer anyway, and handing it to the executor costs
// thread switches that, on a busy host, stall a transfer for a scheduler tick
// now and then; but meanwhile it hands out no other message, so the bound
// caps how long other sessions wait (64 MiB: about 15 ms on loopback tcp,
// 5 ms on shared memory here; less on RDMA).
constexpr uint64_t kInlineCopyLimit = 64u << 20;

bool names_per_thread_stream(uint64_t handle) { return handle == protocol::kPerThreadStream; }

// Whether this server knows the call's kind; a newer client's call is not.
// Typed members that generated calls replaced (their ordinals stay, unused):
// a client that sends one is answered like any call this server does not know.
bool retired_call(wire::Call::Which which) {
  switch (which) {
    case wire::Call::MEM_GET_INFO:
    case wire::Call::MEM_GET_ADDRESS_RANGE:
    case wire::Call::EVENT_CREATE:
    case wire::Call::EVENT_RECORD:
    case wire::Call::EVENT_QUERY:
    case wire::Call::EVENT_ELAPSED_TIME:
    case wire::Call::EVENT_DESTROY:
    case wire::Call::STREAM_CREATE:
    case wire::Call::STREAM_DESTROY:
    case wire::Call::STREAM_QUERY:
      return true;
    default:
      return false;
  }
}

bool known_call(wire::Call::Which which) { return which <= wire::Call::GRAPH && !retired_call(which); }

}  // namespace

Session::Inline Session::runs_inline(const protocol::Decoded& decoded, const transport::Message& message) {
  auto envelope = decoded.envelope();
  if (!envelope.isBatch()) return Inline::kNo;
  auto calls = envelope.getBatch().getCalls();
  if (calls.size() == 1) {
    // A synchronous copy of moderate size does not block on the device when
    // its context has nothing in flight; its bytes move while this thread
    // drives the transport anyway.
    auto call = calls[0].getCall();
    switch (call.which()) {
      case wire::Call::MEMCPY_DTO_H: {
        auto c = call.getMemcpyDtoH();
        if (!c.getAsync() && c.getSize() <= kInlineCopyLimit && !names_per_thread_stream(c.getStream())) {
          return Inline::kIfIdle;
        }
        break;
      }
      case wire::Call::MEMCPY_HTO_D: {
        auto c = call.getMemcpyHtoD();
        if (!c.getAsync() && c.getSize() <= kInlineCopyLimit && !names_per_thread_stream(c.getStream())) {
          return Inline::kIfIdle;
        }
        break;
      }
      default:
        break;
    }
  }
  if (message.payload) return Inline::kNo;  // bulk data of anything else: the executor receives it
  if (calls.size() == 0 || calls.size() > kMaxInlineCalls) return Inline::kNo;
  for (auto entry : calls) {
    auto call = entry.getCall();
    switch (call.which()) {
      case wire::Call::MEM_ALLOC:
      case wire::Call::FUNC_GET_ATTRIBUTES:
      case wire::Call::EVENT_SYNCHRONIZE:  // waits on its own thread unless complete
      case wire::Call::CTX_SYNCHRONIZE:
        break;
      case wire::Call::INVOKE: {
        // A call that cannot be read goes to the executor, whose barrier
        // answers it.
        const DispatchRow* row = nullptr;
        try {
          auto in = call.getInvoke();
          row = find_row(in.getApi(), in.getFunction());
          if (row == nullptr || !row->quick) return Inline::kNo;
          if (row->stream_item >= 0) {
            // The per-thread stream is the executor's own, not this thread's.
            auto args = in.getArgs();
            const size_t at = static_cast<size_t>(row->stream_item) * 8;
            uint64_t stream = 0;
            if (args.size() < at + 8) return Inline::kNo;
            std::memcpy(&stream, args.begin() + at, 8);
            if (names_per_thread_stream(le64toh(stream))) return Inline::kNo;
          }
        } catch (const kj::Exception&) {
          return Inline::kNo;
        }
        break;
      }
      case wire::Call::STREAM_SYNCHRONIZE:
        if (names_per_thread_stream(call.getStreamSynchronize().getHandle())) return Inline::kNo;
        break;
      default:
        return Inline::kNo;
    }
  }
  return Inline::kYes;
}

void Session::execute(wire::Call::Reader call, transport::Message& message, bool is_last) {
  const auto start = std::chrono::steady_clock::now();
  invoked_row_ = nullptr;
  execute_call(call, message, is_last);
  record_call(call, start);
}

void Session::record_call(wire::Call::Reader call, std::chrono::steady_clock::time_point start) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  try {
    const auto which = call.which();
    const bool sync = call.getWantsReply();
    if (invoked_row_ != nullptr) {
      metrics_.on_call(invoked_row_->api, invoked_row_->name, reinterpret_cast<uintptr_t>(invoked_row_), sync,
                       seconds);
      return;
    }
    metrics_.on_call(wire::Api::DRIVER, call_kind_name(which), static_cast<uintptr_t>(which), sync, seconds);
    if (which == wire::Call::MEMCPY_HTO_D) {
      metrics_.on_copy(ledger_.device_of(call.getCtx()), true, call.getMemcpyHtoD().getSize());
    } else if (which == wire::Call::MEMCPY_DTO_H) {
      metrics_.on_copy(ledger_.device_of(call.getCtx()), false, call.getMemcpyDtoH().getSize());
    }
  } catch (const kj::Exception&) {
    // A call whose fields cannot be read was answered as such; nothing to count.
  }
}

void Session::execute_call(wire::Call::Reader call, transport::Message& message, bool is_last) {
  const uint64_t id = call.getId();
  const bool wants_reply = call.getWantsReply();
  clear_reason();  // a reason belongs to the call that noted it
  try {
    if (!known_call(call.which())) {
      if (!unknown_call_logged_) {
        unknown_call_logged_ = true;
        RGPU_INFO("session unknown call id=%llu kind=%d", static_cast<unsigned long long>(id_),
                  static_cast<int>(call.which()));
      }
      note_reason(not_supported_code(wire::Api::DRIVER),
                  "a call this server does not know (kind " + std::to_string(static_cast<int>(call.which())) +
                      "); the client is newer than rgpud");
      if (wants_reply) {
        send_api_reply(id, InvokeOutcome{wire::Api::DRIVER, not_supported_code(wire::Api::DRIVER), {},
                                         "call not known to this server"});
      } else {
        record_async_error(id, not_supported_code(wire::Api::DRIVER));
      }
      return;
    }
    if (call.which() == wire::Call::INVOKE) {
      invoke(call);
      return;
    }
    execute_known(call, message);
  } catch (const kj::Exception& e) {
    // The call's own fields cannot be read (the message around it could).
    // A call that wants a reply gets one and the session goes on; one that
    // may be an old client's sync call (the last of its batch), which would
    // wait for an answer nobody can promise, fails the session.
    if (!wants_reply && is_last) throw;
    RGPU_DEBUG("session undecodable call id=%llu call=%llu error=\"%s\"", static_cast<unsigned long long>(id_),
               static_cast<unsigned long long>(id), e.getDescription().cStr());
    if (wants_reply) {
      send_api_reply(id, InvokeOutcome{wire::Api::DRIVER, not_supported_code(wire::Api::DRIVER), {},
                                       "call could not be decoded"});
    } else {
      record_async_error(id, not_supported_code(wire::Api::DRIVER));
    }
  }
}

bool Session::fits(uint64_t ctx, uint64_t size) const {
  const uint64_t unmapped = graphs_.uncounted_bytes(ctx);
  return size <= UINT64_MAX - unmapped && ledger_.fits(ctx, size + unmapped);
}

void Session::note_quota(uint64_t ctx, uint64_t asked, std::string_view what) const {
  const uint32_t device = ledger_.device_of(ctx);
  std::string why = what.empty() ? std::string() : std::string(what) + ": ";
  why += std::to_string(asked) + " bytes asked, past the session's memory quota on device " + std::to_string(device) +
         ": " + std::to_string(ledger_.quota(device)) + " bytes, " +
         std::to_string(ledger_.bytes_held_by(ctx) + graphs_.uncounted_bytes(ctx)) + " held";
  note_reason(CUDA_ERROR_OUT_OF_MEMORY, std::move(why));
}

void Session::answer_for_quota(uint64_t ctx, InvokeOutcome* outcome) const {
  const uint64_t quota = ledger_.quota(ledger_.device_of(ctx));
  if (quota == 0 || outcome->code != CUDA_SUCCESS) return;
  protocol::ArgReader in(outcome->out);
  size_t device_free = 0, device_total = 0;
  if (!in.scalar(&device_free) || !in.scalar(&device_total)) return;
  const uint64_t total = std::min<uint64_t>(quota, device_total);
  const uint64_t held = ledger_.bytes_held_by(ctx);
  const uint64_t free = std::min<uint64_t>(held < total ? total - held : 0, device_free);
  protocol::ArgWriter out;
  out.scalar(static_cast<size_t>(free));
  out.scalar(static_cast<size_t>(total));
  outcome->out = out.take();
}

void Session::invoke(wire::Call::Reader call) {
  const uint64_t id = call.getId();
  const bool wants_reply = call.getWantsReply();
  auto in = call.getInvoke();
  const wire::Api api = in.getApi();
  InvokeOutcome outcome;
  const DispatchRow* row = find_row(api, in.getFunction());
  invoked_row_ = row;
  if (row == nullptr) {
    outcome = InvokeOutcome{api, not_supported_code(api), {}, "function not known to this server"};
    note_reason(outcome.code, std::string(api_name(api)) + " function " + std::to_string(in.getFunction()) +
                                  " is not known to this rgpud (the client is newer)");
  } else if (const uint64_t ctx = call.getCtx(); ctx != 0 && make_current(ctx) != CUDA_SUCCESS) {
    outcome = InvokeOutcome{wire::Api::DRIVER, CUDA_ERROR_INVALID_CONTEXT, {}, "no such context"};
  } else {
    auto args = in.getArgs();
    call_ctx_ = ctx;
    outcome = row->run(*this, std::span<const std::byte>(reinterpret_cast<const std::byte*>(args.begin()), args.size()));
    if (row == mem_get_info_row()) answer_for_quota(ctx, &outcome);
    call_ctx_ = 0;
  }
  const std::string_view name = row != nullptr ? std::string_view(row->name) : std::string_view();
  if (wants_reply) {
    send_api_reply(id, std::move(outcome), name);
  } else {
    record_async_error(id, outcome.code, outcome.api, name);
  }
}

void Session::execute_known(wire::Call::Reader call, transport::Message& message) {
  const uint64_t id = call.getId();
  if (!is_sync(call)) {
    if (const CUresult r = execute_async(call, message); r != CUDA_SUCCESS) {
      record_async_error(id, r, wire::Api::DRIVER, call_api_name(call.which()));
    }
    return;
  }
  if (is_wait(call)) {
    // Complete already? Answer now. Otherwise the device's poller answers.
    CUresult ready = CUDA_ERROR_NOT_READY;
    CUresult first_error = CUDA_SUCCESS;
    std::function<CUresult()> wait;
    const uint64_t call_ctx = call.getCtx();
    CUresult r = make_current(call_ctx);
    if (r != CUDA_SUCCESS) {
      send_reply(id, Outcome{r});
      return;
    }
    Watch watch;
    watch.ctx = context_object(call_ctx);
    switch (call.which()) {
      case wire::Call::CTX_SYNCHRONIZE:
        if (!context_watch(call_ctx, &watch, &first_error, &r)) ready = first_error;
        wait = [this] { return cu_.cuCtxSynchronize(); };
        break;
      case wire::Call::STREAM_SYNCHRONIZE: {
        CUstream s;
        if ((r = lookup_stream(call_ctx, call.getStreamSynchronize().getHandle(), &s)) != CUDA_SUCCESS) break;
        ready = cu_.cuStreamQuery(s);
        wait = [this, s] { return cu_.cuStreamSynchronize(s); };
        if (ready != CUDA_ERROR_NOT_READY) break;
        if (CUevent done = completion_event(s, &r)) watch.events.push_back(done);
        // The per-thread stream is another on the poller's thread: its
        // errors come with the next wait on it instead.
        if (s != CU_STREAM_PER_THREAD) watch.streams.push_back(s);
        break;
      }
      case wire::Call::EVENT_SYNCHRONIZE: {
        CUevent e;
        const uint64_t handle = call.getEventSynchronize().getHandle();
        if ((r = lookup_event(handle, &e)) != CUDA_SUCCESS) break;
        ready = cu_.cuEventQuery(e);
        wait = [this, e] { return cu_.cuEventSynchronize(e); };
        // Queried in its own context (waits may cross contexts).
        watch.ctx = context_object(handles_.parent(protocol::HandleKind::kEvent, handle));
        watch.client_event = e;
        break;
      }
      default:
        break;
    }
    if (r != CUDA_SUCCESS) {
      send_reply(id, Outcome{r});
    } else if (ready != CUDA_ERROR_NOT_READY) {
      send_reply(id, Outcome{ready});
    } else {
      wait_then_reply(id, call_ctx, std::move(watch), first_error, wait);
    }
    return;
  }
  if (defer_copy(call, message)) return;
  Outcome out = execute_sync(call, message);
  const std::string name = out.result != CUDA_SUCCESS ? call_api_name(call.which()) : std::string();
  send_reply(id, std::move(out), name);
}

bool Session::defer_copy(wire::Call::Reader call, transport::Message& message) {
  auto stage = [this](size_t n) { return staging(n); };
  const auto which = call.which();
  const bool htod = which == wire::Call::MEMCPY_HTO_D;
  const bool device_only = which == wire::Call::MEMCPY_DTO_D || which == wire::Call::MEMSET;
  if (!htod && !device_only && which != wire::Call::MEMCPY_DTO_H) return false;
  const uint64_t ctx = call.getCtx();
  // Only when the copy would wait for device work; an idle context copies at once.
  if (make_current(ctx) != CUDA_SUCCESS || context_idle(ctx)) return false;
  const uint64_t id = call.getId();
  CUstream stream;
  const uint64_t stream_handle = htod          ? call.getMemcpyHtoD().getStream()
                                 : device_only ? (which == wire::Call::MEMSET ? call.getMemset().getStream()
                                                                               : call.getMemcpyDtoD().getStream())
                                               : call.getMemcpyDtoH().getStream();
  CUresult r = lookup_stream(ctx, stream_handle, &stream);
  auto outcome = std::make_shared<Outcome>();
  auto staged = std::make_shared<StagingPool::Buffer>();  // host bytes the device still reads
  if (r == CUDA_SUCCESS && device_only) {
    r = execute_async(call, message);  // the same operation on the same stream, enqueued
  } else if (r == CUDA_SUCCESS && htod) {
    auto in = call.getMemcpyHtoD();
    SourceBytes src;
    if ((r = check_range(ctx, in.getDst(), in.getSize())) == CUDA_SUCCESS && in.getSize() > 0 &&
        (r = source_bytes(in, call.getPayloadBytes(), message, true, true, stage, &src)) == CUDA_SUCCESS) {
      r = cu_.cuMemcpyHtoDAsync(in.getDst(), src.data, in.getSize(), stream);
      *staged = std::move(src.owned);
    }
  } else if (r == CUDA_SUCCESS) {
    auto in = call.getMemcpyDtoH();
    if ((r = check_range(ctx, in.getSrc(), in.getSize())) == CUDA_SUCCESS && in.getSize() > 0) {
      outcome->data = staging(in.getSize());
      outcome->data_size = in.getSize();
      r = outcome->data ? cu_.cuMemcpyDtoHAsync(outcome->data.get(), in.getSrc(), in.getSize(), stream)
                        : CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  CUevent done = r == CUDA_SUCCESS ? completion_event(stream, &r) : nullptr;
  if (r != CUDA_SUCCESS) {
    // A copy that was enqueued may still read the staged bytes or write the
    // buffer: let the stream finish before they go.
    if (*staged || outcome->data) cu_.cuStreamSynchronize(stream);
    send_reply(id, Outcome{r});
    return true;
  }
  // The reply goes when the stream gets there; meanwhile this session's
  // other calls (other threads of the client) go on.
  Watch watch;
  watch.ctx = context_object(ctx);
  watch.events.push_back(done);
  watch.done = [this, id, outcome, staged](CUresult result) {
    staged->reset();
    outcome->result = result;
    if (result != CUDA_SUCCESS) {
      outcome->data.reset();
      outcome->data_size = 0;
    }
    send_reply(id, std::move(*outcome));
  };
  if (!add_watch(ctx, std::move(watch))) {
    // Past the session's limit of watches: wait here (back-pressure).
    CUresult result = cu_.cuEventSynchronize(done);
    cu_.cuEventDestroy(done);
    staged->reset();
    outcome->result = result;
    if (result != CUDA_SUCCESS) {
      outcome->data.reset();
      outcome->data_size = 0;
    }
    send_reply(id, std::move(*outcome));
  }
  return true;
}

Session::Outcome Session::execute_sync(wire::Call::Reader call, transport::Message& message) {
  auto stage = [this](size_t n) { return staging(n); };
  Outcome out;
  const uint64_t ctx = call.getCtx();
  auto needs_ctx = [&]() -> bool {
    out.result = make_current(call.getCtx());
    return out.result == CUDA_SUCCESS;
  };
  // A sync copy runs in stream order by itself, but the stream it names must
  // still be one of the context's own.
  auto stream_ok = [&](uint64_t handle) -> bool {
    CUstream s;
    out.result = lookup_stream(ctx, handle, &s);
    return out.result == CUDA_SUCCESS;
  };
  switch (call.which()) {
    case wire::Call::CTX_DESTROY:
      out.result = destroy_context(call.getCtxDestroy().getHandle());
      break;
    case wire::Call::PRIMARY_CTX_RESET: {
      auto in = call.getPrimaryCtxReset();
      if (in.getHandle() != protocol::primary_context(static_cast<uint32_t>(in.getDevice()))) {
        out.result = CUDA_ERROR_INVALID_VALUE;
        break;
      }
      out.result = destroy_context(in.getHandle());
      if (out.result == CUDA_ERROR_INVALID_CONTEXT) out.result = CUDA_SUCCESS;  // resetting an inactive one is fine
      break;
    }
    case wire::Call::MEM_ALLOC: {
      if (!needs_ctx()) break;
      uint64_t size = call.getMemAlloc();
      if (size == 0) {
        out.result = CUDA_ERROR_INVALID_VALUE;
        break;
      }
      if (!fits(ctx, size)) {
        out.result = CUDA_ERROR_OUT_OF_MEMORY;
        out.message = "past the session's memory quota";
        note_quota(ctx, size);
        break;
      }
      CUdeviceptr ptr = 0;
      out.result = cu_.cuMemAlloc(&ptr, size);
      if (out.result == CUDA_SUCCESS && !ledger_.add(ctx, ptr, size)) {
        cu_.cuMemFree(ptr);  // the driver gave an address the ledger holds: never hand it out twice
        out.result = CUDA_ERROR_UNKNOWN;
      }
      if (out.result == CUDA_SUCCESS) out.values = {ptr};
      break;
    }
    case wire::Call::GRAPH:
      out.result = graph_call(ctx, call.getGraph(), &out.values);
      break;
    case wire::Call::MEM_FREE: {
      if (!needs_ctx()) break;
      uint64_t ptr = call.getMemFree();
      auto range = ledger_.find(ptr);
      if (!range || range->base != ptr || range->ctx != ctx || range->module != 0) {
        out.result = CUDA_ERROR_INVALID_VALUE;
        out.message = "not an allocation of this context";
        break;
      }
      out.result = cu_.cuMemFree(ptr);
      if (out.result == CUDA_SUCCESS) ledger_.remove_allocation(ctx, ptr);
      break;
    }
    case wire::Call::MEMCPY_HTO_D: {
      if (!needs_ctx()) break;
      auto in = call.getMemcpyHtoD();
      if (!stream_ok(in.getStream())) break;
      if ((out.result = check_range(ctx, in.getDst(), in.getSize())) != CUDA_SUCCESS) break;
      if (bulk_direct_ && call.getPayloadBytes() == in.getSize() && message.payload &&
          message.payload->size() == in.getSize() && context_idle(call.getCtx())) {
        // Nothing in flight could touch the bytes: receive them straight
        // into device memory, with no staging copy.
        Status s = message.payload->receive(reinterpret_cast<void*>(in.getDst()));
        message.payload.reset();
        out.result = s.is_ok() ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
        break;
      }
      SourceBytes src;
      out.result = source_bytes(in, call.getPayloadBytes(), message, true, false, stage, &src);
      if (out.result == CUDA_SUCCESS && in.getSize() > 0) {
        out.result = cu_.cuMemcpyHtoD(in.getDst(), src.data, in.getSize());
      }
      break;
    }
    case wire::Call::MEMCPY_DTO_H: {
      if (!needs_ctx()) break;
      auto in = call.getMemcpyDtoH();
      if (!stream_ok(in.getStream())) break;
      if ((out.result = check_range(ctx, in.getSrc(), in.getSize())) != CUDA_SUCCESS) break;
      if (in.getSize() == 0) break;
      if (bulk_direct_ && in.getSize() > kReplyBytesLimit && context_idle(call.getCtx())) {
        // Nothing in flight could change the bytes: send them straight from
        // device memory (the reply goes out before the next call runs).
        out.direct = reinterpret_cast<const std::byte*>(in.getSrc());
        out.data_size = in.getSize();
        break;
      }
      out.data = staging(in.getSize());
      if (!out.data) {
        out.result = CUDA_ERROR_OUT_OF_MEMORY;
        break;
      }
      out.data_size = in.getSize();
      out.result = cu_.cuMemcpyDtoH(out.data.get(), in.getSrc(), in.getSize());
      if (out.result != CUDA_SUCCESS) out.data.reset(), out.data_size = 0;
      break;
    }
    case wire::Call::MEMCPY_DTO_D: {
      if (!needs_ctx()) break;
      auto in = call.getMemcpyDtoD();
      if (!stream_ok(in.getStream())) break;
      if ((out.result = check_range(ctx, in.getDst(), in.getSize())) != CUDA_SUCCESS) break;
      if ((out.result = check_range(ctx, in.getSrc(), in.getSize())) != CUDA_SUCCESS) break;
      if (in.getSize() > 0) out.result = cu_.cuMemcpyDtoD(in.getDst(), in.getSrc(), in.getSize());
      break;
    }
    case wire::Call::MEMSET: {
      if (!needs_ctx()) break;
      auto in = call.getMemset();
      if (!stream_ok(in.getStream())) break;
      unsigned es = in.getElementSize();
      if ((es != 1 && es != 2 && es != 4) || in.getCount() > UINT64_MAX / es) {
        out.result = CUDA_ERROR_INVALID_VALUE;
        break;
      }
      if ((out.result = check_range(ctx, in.getDst(), in.getCount() * es)) != CUDA_SUCCESS) break;
      if (es == 1) out.result = cu_.cuMemsetD8(in.getDst(), static_cast<unsigned char>(in.getValue()), in.getCount());
      if (es == 2) out.result = cu_.cuMemsetD16(in.getDst(), static_cast<unsigned short>(in.getValue()), in.getCount());
      if (es == 4) out.result = cu_.cuMemsetD32(in.getDst(), in.getValue(), in.getCount());
      break;
    }
    case wire::Call::MODULE_LOAD:
      if (!needs_ctx()) break;
      return load_module(call, message);
    case wire::Call::MODULE_GET_GLOBAL: {
      if (!needs_ctx()) break;
      auto in = call.getModuleGetGlobal();
      auto module = static_cast<CUmodule>(handles_.find(protocol::HandleKind::kModule, in.getModule()));
      if (module == nullptr) {
        out.result = CUDA_ERROR_INVALID_HANDLE;
        break;
      }
      CUdeviceptr ptr = 0;
      size_t size = 0;
      out.result = cu_.cuModuleGetGlobal(&ptr, &size, module, in.getName().cStr());
      if (out.result == CUDA_SUCCESS) {
        // The global belongs to the module's context; asked for again, it is already there.
        ledger_.add(handles_.parent(protocol::HandleKind::kModule, in.getModule()), ptr, size, in.getModule());
        out.values = {ptr, size};
      }
      break;
    }
    case wire::Call::FUNC_GET_ATTRIBUTES: {
      if (!needs_ctx()) break;
      auto f = static_cast<CUfunction>(
          handles_.find(protocol::HandleKind::kFunction, call.getFuncGetAttributes().getHandle()));
      if (f == nullptr) {
        out.result = CUDA_ERROR_INVALID_HANDLE;
        break;
      }
      // Every attribute in one round trip; a missing one has bit 63 set.
      for (int a = 0; a < CU_FUNC_ATTRIBUTE_MAX; ++a) {
        int v = 0;
        CUresult r = cu_.cuFuncGetAttribute(&v, static_cast<CUfunction_attribute>(a), f);
        out.values.push_back(r == CUDA_SUCCESS ? static_cast<uint32_t>(v) : uint64_t{1} << 63);
      }
      // Then whether a launch of it is refused, and why (the CPU device
      // cannot run every instruction exactly): the client refuses such a
      // launch in the launch call, as a GPU refuses a kernel it has no
      // image for, instead of the error reaching a later, unrelated call.
      CUresult refusal = CUDA_SUCCESS;
      if (cu_.rgpuFuncGetLaunchRefusal) {
        char why[kMaxReasonBytes + 1];
        size_t length = 0;
        if (cu_.rgpuFuncGetLaunchRefusal(f, &refusal, why, sizeof why, &length) != CUDA_SUCCESS) {
          refusal = CUDA_SUCCESS;
        }
        if (refusal != CUDA_SUCCESS) {
          out.reason = bounded_reason(std::string_view(why, length));
          RGPU_WARN("session kernel refused id=%llu reason=\"%s\"", static_cast<unsigned long long>(id_),
                    out.reason.c_str());
        }
      }
      out.values.push_back(refusal);
      break;
    }
    default:
      out.result = CUDA_ERROR_NOT_SUPPORTED;
      out.message = "call not implemented by this server";
      note_reason(out.result, "not implemented by this rgpud");
      break;
  }
  return out;
}

}  // namespace rgpu::server
