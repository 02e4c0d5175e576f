// Session: the calls themselves, sync and async, and their waits.
#include <algorithm>
#include <cstring>

#include "rgpu/common/log.h"
#include "rgpu/common/reason.h"
#include "rgpu/fatbin/fatbin.h"
#include "rgpu/protocol/args.h"
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
    case wire::Call::STREAM_QUERY:
    case wire::Call::EVENT_SYNCHRONIZE:
    case wire::Call::EVENT_QUERY:
    case wire::Call::EVENT_ELAPSED_TIME:
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
// Device-to-host results up to this size ride inside the reply.
constexpr uint64_t kReplyBytesLimit = 32 * 1024;

bool names_per_thread_stream(uint64_t handle) { return handle == protocol::kPerThreadStream; }

// Whether this server knows the call's kind; a newer client's call is not.
// Typed members that generated calls replaced (their ordinals stay, unused):
// a client that sends one is answered like any call this server does not know.
bool retired_call(wire::Call::Which which) {
  return which == wire::Call::MEM_GET_INFO || which == wire::Call::MEM_GET_ADDRESS_RANGE;
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
      case wire::Call::EVENT_QUERY:
      case wire::Call::EVENT_ELAPSED_TIME:
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
        } catch (const kj::Exception&) {
          return Inline::kNo;
        }
        if (row == nullptr || !row->quick) return Inline::kNo;
        break;
      }
      case wire::Call::STREAM_QUERY:
        if (names_per_thread_stream(call.getStreamQuery().getHandle())) return Inline::kNo;
        break;
      case wire::Call::STREAM_SYNCHRONIZE:
        if (names_per_thread_stream(call.getStreamSynchronize().getHandle())) return Inline::kNo;
        break;
      default:
        return Inline::kNo;
    }
  }
  return Inline::kYes;
}

namespace {

// Where the bytes of a host-to-device copy are: inline, or the message payload.
struct SourceBytes {
  const std::byte* data = nullptr;
  StagingPool::Buffer owned;
};

// `staging(size)` gives a staging buffer (Session::staging).
template <class Staging>
CUresult source_bytes(wire::Call::CopyIn::Reader in, uint64_t payload_bytes, transport::Message& message,
                      bool is_last, bool need_copy, Staging&& staging, SourceBytes* out) {
  uint64_t size = in.getSize();
  auto inline_bytes = in.getBytes();
  if (payload_bytes == 0) {
    if (inline_bytes.size() != size) return CUDA_ERROR_INVALID_VALUE;
    if (need_copy) {
      out->owned = staging(size);
      if (!out->owned) return CUDA_ERROR_OUT_OF_MEMORY;
      std::memcpy(out->owned.get(), inline_bytes.begin(), size);
      out->data = out->owned.get();
    } else {
      out->data = reinterpret_cast<const std::byte*>(inline_bytes.begin());
    }
    return CUDA_SUCCESS;
  }
  // The payload belongs to the last call of its message, and only once.
  if (!is_last || !message.payload || payload_bytes != size || message.payload->size() != size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  out->owned = staging(size);
  if (!out->owned) return CUDA_ERROR_OUT_OF_MEMORY;
  Status s = message.payload->receive(out->owned.get());
  message.payload.reset();
  if (!s.is_ok()) return CUDA_ERROR_UNKNOWN;
  out->data = out->owned.get();
  return CUDA_SUCCESS;
}

}  // namespace

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
    case wire::Call::STREAM_QUERY: {
      if (!needs_ctx()) break;
      CUstream s;
      if ((out.result = lookup_stream(ctx, call.getStreamQuery().getHandle(), &s)) != CUDA_SUCCESS) break;
      out.result = cu_.cuStreamQuery(s);
      break;
    }
    case wire::Call::EVENT_QUERY: {
      if (!needs_ctx()) break;
      CUevent e;
      if ((out.result = lookup_event(call.getEventQuery().getHandle(), &e)) != CUDA_SUCCESS) break;
      out.result = cu_.cuEventQuery(e);
      break;
    }
    case wire::Call::EVENT_ELAPSED_TIME: {
      if (!needs_ctx()) break;
      CUevent a, b;
      if ((out.result = lookup_event(call.getEventElapsedTime().getStart(), &a)) != CUDA_SUCCESS) break;
      if ((out.result = lookup_event(call.getEventElapsedTime().getEnd(), &b)) != CUDA_SUCCESS) break;
      out.result = cu_.cuEventElapsedTime(&out.elapsed_ms, a, b);
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
    it->second = std::make_unique<HostFuncWait>(HostFuncWait{this, in.getId()});
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
// function: asks the client to run it and holds the stream until it has.
void CUDA_CB Session::host_func_trampoline(void* arg) {
  auto* wait = static_cast<HostFuncWait*>(arg);
  Session* self = wait->session;
  const uint64_t id = wait->id;
  capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
  builder.initRoot<wire::Envelope>().initHostFuncCall().setId(id);
  auto words = protocol::encode(builder);
  bool sent = self->connection_->send(protocol::as_bytes(words)).is_ok();
  std::unique_lock<std::mutex> lock(self->host_funcs_mu_);
  if (sent) self->host_funcs_cv_.wait(lock, [&] { return wait->done; });
  self->host_funcs_.erase(id);
}

void Session::host_func_done(uint64_t id) {
  std::lock_guard<std::mutex> lock(host_funcs_mu_);
  auto it = host_funcs_.find(id);
  if (it == host_funcs_.end()) return;
  it->second->done = true;
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
    case wire::Call::STREAM_DESTROY: {
      // Any of the session's streams, whichever context is current (as in CUDA).
      destroy_result_ = CUDA_SUCCESS;
      if (!handles_.remove(HandleKind::kStream, call.getStreamDestroy().getHandle())) return CUDA_ERROR_INVALID_HANDLE;
      return destroy_result_;
    }
    case wire::Call::MODULE_UNLOAD: {
      if (!handles_.remove(HandleKind::kModule, call.getModuleUnload().getHandle())) return CUDA_ERROR_INVALID_HANDLE;
      return CUDA_SUCCESS;
    }
    case wire::Call::EVENT_DESTROY: {
      destroy_result_ = CUDA_SUCCESS;
      if (!handles_.remove(HandleKind::kEvent, call.getEventDestroy().getHandle())) return CUDA_ERROR_INVALID_HANDLE;
      return destroy_result_;
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
    case wire::Call::STREAM_CREATE: {
      auto in = call.getStreamCreate();
      if (!HandleTable::nameable(HandleKind::kStream, in.getHandle()) || handles_.find(HandleKind::kStream, in.getHandle())) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      if (!handle_room()) return CUDA_ERROR_OUT_OF_MEMORY;
      CUstream s = nullptr;
      if ((r = cu_.cuStreamCreateWithPriority(&s, in.getFlags(), in.getPriority())) != CUDA_SUCCESS) return r;
      return add_handle(HandleKind::kStream, in.getHandle(), s, ctx, [this](void* object) {
        pollers_->forget(id_, object);  // no watch may look at it any more
        destroy_result_ = cu_.cuStreamDestroy(static_cast<CUstream>(object));
      });
    }
    case wire::Call::EVENT_CREATE: {
      auto in = call.getEventCreate();
      if (!HandleTable::nameable(HandleKind::kEvent, in.getHandle()) || handles_.find(HandleKind::kEvent, in.getHandle())) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      if (!handle_room()) return CUDA_ERROR_OUT_OF_MEMORY;
      CUevent e = nullptr;
      if ((r = cu_.cuEventCreate(&e, in.getFlags())) != CUDA_SUCCESS) return r;
      return add_handle(HandleKind::kEvent, in.getHandle(), e, ctx, [this](void* object) {
        pollers_->forget(id_, object);  // no watch may look at it any more
        destroy_result_ = cu_.cuEventDestroy(static_cast<CUevent>(object));
      });
    }
    case wire::Call::EVENT_RECORD: {
      CUevent e;
      CUstream s;
      const uint64_t event = call.getEventRecord().getEvent();
      if ((r = lookup_event(event, &e)) != CUDA_SUCCESS) return r;
      // Recorded only on a stream of the event's own context.
      if (handles_.parent(HandleKind::kEvent, event) != ctx) return CUDA_ERROR_INVALID_HANDLE;
      if ((r = lookup_stream(ctx, call.getEventRecord().getStream(), &s)) != CUDA_SUCCESS) return r;
      return cu_.cuEventRecord(e, s);
    }
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
