// Session: executes one client's calls in order through the driver table.
#include "session.h"

#include <cstring>

#include "rgpu/common/log.h"

namespace rgpu::server {
namespace {

// Device-to-host results up to this size ride inline in the reply; larger
// ones travel as the transport payload (rendezvous, no extra copy).
constexpr uint64_t kInlineLimit = 32 * 1024;

// Whether this thread is running a session's calls right now (its executor,
// or a batch run inline). Such a thread may drive the transport while it
// waits for a payload of its own, and the handlers of other connections then
// run on it: they must not run their batches here too, which would switch the
// current context under the call in progress (a copy would then be issued in
// another session's context, its completion event never recorded).
thread_local bool t_executing = false;

// Marks the calling thread as executing for a scope.
class Executing {
 public:
  Executing() : was_(t_executing) { t_executing = true; }
  ~Executing() { t_executing = was_; }
  Executing(const Executing&) = delete;
  Executing& operator=(const Executing&) = delete;

 private:
  const bool was_;
};

// Idle staging buffers a session keeps for reuse.
constexpr size_t kStagingCache = size_t{256} << 20;

// Pieces of a synchronous copy that goes through staging: large enough that a
// piece's overhead is small, small enough that the network and the device
// copy of neighbouring pieces overlap.
constexpr uint64_t kCopyPipelineChunk = 4u << 20;

// How long the executor keeps looking for the next message before it sleeps:
// a client's next call usually follows its reply within microseconds.
constexpr auto kExecutorSpin = std::chrono::microseconds(20);

}  // namespace

Session::Session(uint64_t id, ClientIdentity client, std::shared_ptr<const DriverTable> driver,
                 std::shared_ptr<const ServerInfo> info, std::shared_ptr<ModuleCache> modules,
                 std::shared_ptr<transport::Connection> connection)
    : id_(id),
      client_(std::move(client)),
      driver_(std::move(driver)),
      cu_(*driver_),
      info_(std::move(info)),
      module_cache_(std::move(modules)),
      connection_(std::move(connection)),
      staging_pool_(connection_, kStagingCache, info_->limits.max_inflight_bytes),
      bulk_direct_(cu_.cpu_device() || connection_->supports_cuda_memory()),
      limits_(info_->limits) {
  executor_ = std::thread([this] { run_executor(); });
  executor_id_ = executor_.get_id();  // before any message can arrive
}

Session::~Session() {
  close();
  // The client is gone: its kernels need not finish. Stopping them first
  // bounds the teardown, which otherwise waits for every thread below, and
  // they may wait for a kernel that never ends. (NVIDIA's driver has no such
  // call: there the contexts' destruction below ends their work.)
  if (cu_.rgpuCtxAbort) {
    std::lock_guard<std::mutex> lock(live_mu_);
    for (CUcontext ctx : live_contexts_) cu_.rgpuCtxAbort(ctx);
  }
  if (executor_.joinable()) executor_.join();
  {
    std::lock_guard<std::mutex> lock(completions_mu_);
    completions_stop_ = true;
  }
  completions_cv_.notify_all();
  std::vector<std::thread> lanes;
  {
    std::lock_guard<std::mutex> lock(completions_mu_);
    for (auto& [stream, lane] : lanes_) lanes.push_back(std::move(lane->thread));
  }
  for (auto& t : lanes) {
    if (t.joinable()) t.join();
  }
  waiters_.join_all();
  connection_->close();
  release_all();
  RGPU_INFO("session closed id=%llu", static_cast<unsigned long long>(id_));
}

template <class Fn>
void Session::guarded(const char* where, Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    fail(std::string(where) + ": " + e.what());
  } catch (...) {
    fail(std::string(where) + ": unknown exception");
  }
}

void Session::fail(const std::string& reason) {
  if (failed_.exchange(true)) return;
  RGPU_WARN("session failed id=%llu tenant=%s peer=%s reason=\"%s\"", static_cast<unsigned long long>(id_),
            client_.tenant.c_str(), connection_->peer().c_str(), reason.c_str());
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
    inbox_.clear();
    inbox_size_.store(0, std::memory_order_release);
  }
  cv_.notify_all();
  connection_->close();
}

bool Session::handle_room() {
  const size_t held = contexts_.size() + streams_.size() + events_.size() + modules_.size() + functions_.size();
  if (held < limits_.max_handles) return true;
  if (!handle_limit_logged_) {
    handle_limit_logged_ = true;
    RGPU_WARN("session handle limit id=%llu tenant=%s limit=%zu", static_cast<unsigned long long>(id_),
              client_.tenant.c_str(), limits_.max_handles);
  }
  return false;
}

void Session::post(transport::Message message) {
  guarded("message", [&] {
    auto decoded = protocol::decode(message.header);
    if (!decoded.is_ok()) {
      fail("malformed message: " + decoded.status().message());
      return;
    }
    if (decoded.value()->envelope().isHostFuncDone()) {
      host_func_done(decoded.value()->envelope().getHostFuncDone().getId());
      return;
    }
    // Not on a thread that is in the middle of a call (an executor, or an
    // inline batch) that drives the transport while it waits for a transfer.
    const Inline how = t_executing ? Inline::kNo : runs_inline(*decoded.value(), message);
    if (how != Inline::kNo) {
      // Nothing queued and nobody executing: run it here, saving the handoff
      // to the executor on the round trip of a quick synchronous call.
      std::unique_lock<std::mutex> exec(exec_mu_, std::try_to_lock);
      if (exec.owns_lock()) {
        bool idle;
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (closing_) return;
          idle = inbox_.empty();
        }
        Executing executing;
        if (idle && how == Inline::kIfIdle) {
          const uint64_t ctx = decoded.value()->envelope().getBatch().getCalls()[0].getCall().getCtx();
          idle = make_current(ctx) == CUDA_SUCCESS && context_idle(ctx);
        }
        if (idle) {
          Incoming incoming{std::move(message), std::move(decoded.value())};
          handle_message(incoming);
          return;
        }
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_) return;
      inbox_.push_back(Incoming{std::move(message), std::move(decoded.value())});
      inbox_size_.store(inbox_.size(), std::memory_order_release);
    }
    cv_.notify_one();
  });
}

bool Session::handle_for_fuzzing(transport::Message message) {
  Executing executing;
  std::lock_guard<std::mutex> exec(exec_mu_);
  guarded("message", [&] {
    auto decoded = protocol::decode(message.header);
    if (!decoded.is_ok()) {
      fail("malformed message: " + decoded.status().message());
      return;
    }
    if (decoded.value()->envelope().isHostFuncDone()) {
      host_func_done(decoded.value()->envelope().getHostFuncDone().getId());
      return;
    }
    Incoming incoming{std::move(message), std::move(decoded.value())};
    handle_message(incoming);
  });
  return !failed_.load();
}

void Session::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
    inbox_.clear();
    inbox_size_.store(0, std::memory_order_release);
  }
  cv_.notify_all();
  // Release streams held for host functions: the client will not run them.
  std::lock_guard<std::mutex> lock(host_funcs_mu_);
  for (auto& [id, wait] : host_funcs_) wait->done = true;
  host_funcs_cv_.notify_all();
}

void Session::run_executor() {
  Executing executing;
  auto has_work = [&] { return closing_ || !inbox_.empty(); };
  for (;;) {
    {
      // Look for a while before sleeping (without the lock, which the
      // transport's thread needs to queue), yielding the CPU meanwhile.
      const auto until = std::chrono::steady_clock::now() + kExecutorSpin;
      while (inbox_size_.load(std::memory_order_acquire) == 0 && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, has_work);
      if (closing_) return;
    }
    // exec_mu_ before taking the message, so that the inline path (which
    // needs an empty inbox) can never overtake a message taken here.
    std::lock_guard<std::mutex> exec(exec_mu_);
    Incoming incoming;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_) return;
      incoming = std::move(inbox_.front());
      inbox_.pop_front();
      inbox_size_.store(inbox_.size(), std::memory_order_release);
    }
    guarded("call", [&] { handle_message(incoming); });
  }
}

void Session::handle_message(Incoming& incoming) {
  transport::Message& message = incoming.message;
  auto envelope = incoming.decoded->envelope();
  if (envelope.which() != wire::Envelope::BATCH) {
    // The handshake is over; anything but calls breaks the protocol.
    fail("unexpected message of kind " + std::to_string(static_cast<int>(envelope.which())));
    return;
  }
  handle_batch(envelope.getBatch(), message);
}

void Session::welcome(const std::vector<uint8_t>& server_proof) {
  capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
  auto welcome = builder.initRoot<wire::Envelope>().initWelcome();
  welcome.setProtocolVersion(wire::PROTOCOL_VERSION);
  welcome.setServerBuild(info_->build);
  welcome.setSessionId(id_);
  welcome.setAccepted(true);
  welcome.setTenant(client_.tenant);
  if (!server_proof.empty()) {
    welcome.setServerProof(kj::arrayPtr(reinterpret_cast<const capnp::byte*>(server_proof.data()), server_proof.size()));
  }
  welcome.setDriverVersion(info_->driver_version);
  welcome.setCopyPipelineChunk(bulk_direct_ ? 0 : kCopyPipelineChunk);
  auto devices = welcome.initDevices(static_cast<unsigned>(info_->devices.size()));
  for (size_t i = 0; i < info_->devices.size(); ++i) {
    const auto& d = info_->devices[i];
    auto out = devices[i];
    out.setName(d.name);
    out.setUuid(kj::arrayPtr(reinterpret_cast<const capnp::byte*>(d.uuid.bytes), sizeof d.uuid.bytes));
    out.setTotalMem(d.total_mem);
    auto attrs = out.initAttributes(static_cast<unsigned>(d.attributes.size()));
    auto missing = out.initAttributeMissing(static_cast<unsigned>(d.attribute_missing.size()));
    for (size_t a = 0; a < d.attributes.size(); ++a) attrs.set(a, d.attributes[a]);
    for (size_t a = 0; a < d.attribute_missing.size(); ++a) missing.set(a, d.attribute_missing[a]);
  }
  RGPU_INFO("session accepted id=%llu tenant=%s peer=%s pid=%u host=%s program=%s bulk_path=%s",
            static_cast<unsigned long long>(id_), client_.tenant.c_str(), connection_->peer().c_str(), client_.pid,
            client_.hostname.c_str(), client_.program.c_str(),
            !bulk_direct_      ? "staged (no device memory support in the transport)"
            : cu_.cpu_device() ? "direct (CPU device memory is host memory)"
                               : "gpudirect (the transport moves CUDA memory)");
  auto words = protocol::encode(builder);
  if (Status s = connection_->send(protocol::as_bytes(words)); !s.is_ok()) {
    RGPU_WARN("session welcome failed id=%llu error=\"%s\"", static_cast<unsigned long long>(id_),
              s.to_string().c_str());
  }
}

void Session::handle_batch(wire::Batch::Reader batch, transport::Message& message) {
  reap_staging(false);
  auto calls = batch.getCalls();
  // Elements of zero size cost nothing on the wire, so a few bytes could
  // declare millions of (default) calls for this executor to run; a real
  // call takes at least a word of the message.
  if (calls.size() > message.header.size() / sizeof(capnp::word)) {
    fail("batch declares " + std::to_string(calls.size()) + " calls in a message of " +
         std::to_string(message.header.size()) + " bytes");
    return;
  }
  uint64_t payload_offset = 0;
  for (unsigned i = 0; i < calls.size(); ++i) {
    execute(calls[i].getCall(), message, payload_offset, i + 1 == calls.size());
  }
}

void Session::record_async_error(uint64_t call_id, CUresult result) {
  if (result == CUDA_SUCCESS) return;
  std::lock_guard<std::mutex> lock(async_error_mu_);
  if (async_error_ == CUDA_SUCCESS) {
    async_error_ = result;
    async_error_call_ = call_id;
  }
}

void Session::send_reply(uint64_t call_id, Outcome outcome) {
  capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
  auto reply = builder.initRoot<wire::Envelope>().initReply();
  reply.setId(call_id);
  reply.setResult(outcome.result);
  {
    std::lock_guard<std::mutex> lock(async_error_mu_);
    reply.setAsyncError(async_error_);
    reply.setAsyncErrorCall(async_error_call_);
    async_error_ = CUDA_SUCCESS;
    async_error_call_ = 0;
  }
  if (!outcome.values.empty()) {
    auto values = reply.initValues(static_cast<unsigned>(outcome.values.size()));
    for (size_t i = 0; i < outcome.values.size(); ++i) values.set(i, outcome.values[i]);
  }
  reply.setElapsedMs(outcome.elapsed_ms);
  if (!outcome.message.empty()) reply.setMessage(outcome.message);
  reply.setNeedImage(outcome.need_image);
  transport::Bytes payload;
  const std::byte* data = outcome.direct != nullptr ? outcome.direct : outcome.data.get();
  if (data != nullptr && outcome.data_size > 0) {
    if (outcome.data_size <= kInlineLimit) {
      reply.setBytes(kj::arrayPtr(reinterpret_cast<const capnp::byte*>(data), outcome.data_size));
    } else {
      reply.setPayloadBytes(outcome.data_size);
      payload = transport::Bytes(data, outcome.data_size);
    }
  }
  auto words = protocol::encode(builder);
  if (Status s = connection_->send(protocol::as_bytes(words), payload); !s.is_ok()) {
    RGPU_DEBUG("session reply not sent id=%llu call=%llu error=\"%s\"", static_cast<unsigned long long>(id_),
               static_cast<unsigned long long>(call_id), s.to_string().c_str());
  }
}

// ---- handles and validation ------------------------------------------------

CUresult Session::make_current(uint64_t ctx) {
  auto it = contexts_.find(ctx);
  if (ctx == 0 || it == contexts_.end()) return CUDA_ERROR_INVALID_CONTEXT;
  return set_current(it->second);
}

// Asks the driver rather than trusting a cache: other code on this thread
// (a destroyed context, another session's inline batch on the transport's
// thread) may have changed the current context since. A live context's
// address names it alone, so equality means it is current.
CUresult Session::set_current(CUcontext ctx) const {
  CUcontext current = nullptr;
  if (cu_.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == ctx) return CUDA_SUCCESS;
  CUresult r = cu_.cuCtxSetCurrent(ctx);
  if (r != CUDA_SUCCESS) {
    RGPU_WARN("session set current context failed id=%llu result=%d", static_cast<unsigned long long>(id_), r);
  }
  return r;
}

CUresult Session::lookup_stream(uint64_t handle, CUstream* out) const {
  if (is_special_stream(handle)) {
    if (handle == reinterpret_cast<uint64_t>(CU_STREAM_PER_THREAD)) used_per_thread_stream_ = true;
    *out = reinterpret_cast<CUstream>(handle);
    return CUDA_SUCCESS;
  }
  auto it = streams_.find(handle);
  if (it == streams_.end()) return CUDA_ERROR_INVALID_HANDLE;
  *out = it->second;
  return CUDA_SUCCESS;
}

CUresult Session::lookup_event(uint64_t handle, CUevent* out) const {
  auto it = events_.find(handle);
  if (it == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
  *out = it->second;
  return CUDA_SUCCESS;
}

CUresult Session::check_range(uint64_t ptr, uint64_t size) const {
  if (size == 0) return CUDA_SUCCESS;
  auto it = allocations_.upper_bound(ptr);
  if (it == allocations_.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  uint64_t base = it->first;
  uint64_t end = base + it->second.size;
  if (ptr < base || ptr >= end || size > end - ptr) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult Session::create_context(uint64_t handle, int device, unsigned flags) {
  if (handle == 0 || contexts_.count(handle)) return CUDA_ERROR_INVALID_VALUE;
  CUdevice dev;
  CUresult r = cu_.cuDeviceGet(&dev, device);
  if (r != CUDA_SUCCESS) return r;
  CUcontext ctx = nullptr;
  // Each session gets contexts of its own (never the shared primary context),
  // so a sticky error in one session cannot poison another.
  r = cu_.cuCtxCreate(&ctx, nullptr, flags, dev);
  if (r != CUDA_SUCCESS) return r;
  contexts_[handle] = ctx;
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    live_contexts_.push_back(ctx);
  }
  if (cu_.rgpuCtxSetIsolationGroup) {
    // Kernels of this session may touch only this session's memory.
    if ((r = cu_.rgpuCtxSetIsolationGroup(ctx, id_)) != CUDA_SUCCESS) {
      forget_context(handle);
      cu_.cuCtxDestroy(ctx);
      return r;
    }
  }
  if (cu_.rgpuCtxSetPrintfCallback) cu_.rgpuCtxSetPrintfCallback(ctx, &Session::device_output, this);
  return CUDA_SUCCESS;
}

// Device printf text from the CPU device, sent to the client in launch
// order; the kernel's completion (and so any sync reply) comes after it.
void Session::device_output(void* session, const char* text, size_t size) {
  auto* self = static_cast<Session*>(session);
  capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
  builder.initRoot<wire::Envelope>().setDeviceOutput(
      kj::arrayPtr(reinterpret_cast<const capnp::byte*>(text), size));
  auto words = protocol::encode(builder);
  (void)self->connection_->send(protocol::as_bytes(words));
}

CUresult Session::destroy_context(uint64_t handle) {
  auto it = contexts_.find(handle);
  if (it == contexts_.end()) return CUDA_ERROR_INVALID_CONTEXT;
  CUcontext ctx = it->second;
  // The device must be done with staged host buffers before they go.
  if (set_current(ctx) == CUDA_SUCCESS) cu_.cuCtxSynchronize();
  reap_staging(true);
  forget_context(handle);
  CUresult r = cu_.cuCtxDestroy(ctx);
  for (auto a = allocations_.begin(); a != allocations_.end();) {
    a = a->second.ctx == handle ? allocations_.erase(a) : std::next(a);
  }
  for (auto m = modules_.begin(); m != modules_.end();) {
    if (m->second.ctx != handle) {
      ++m;
      continue;
    }
    for (auto f = functions_.begin(); f != functions_.end();) {
      f = f->second.module == m->first ? functions_.erase(f) : std::next(f);
    }
    m = modules_.erase(m);
  }
  for (auto s = stream_ctx_.begin(); s != stream_ctx_.end();) {
    if (s->second == handle) {
      streams_.erase(s->first);
      s = stream_ctx_.erase(s);
    } else {
      ++s;
    }
  }
  for (auto e = event_ctx_.begin(); e != event_ctx_.end();) {
    if (e->second == handle) {
      events_.erase(e->first);
      e = event_ctx_.erase(e);
    } else {
      ++e;
    }
  }
  return r;
}

void Session::forget_context(uint64_t handle) {
  auto it = contexts_.find(handle);
  if (it == contexts_.end()) return;
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    std::erase(live_contexts_, it->second);
  }
  contexts_.erase(it);
}

void Session::reap_staging(bool wait_all) {
  while (!staging_.empty()) {
    Staged& s = staging_.front();
    CUresult r = wait_all ? cu_.cuEventSynchronize(s.done) : cu_.cuEventQuery(s.done);
    if (r == CUDA_ERROR_NOT_READY) return;
    cu_.cuEventDestroy(s.done);
    staging_.pop_front();
  }
}

bool Session::context_idle(uint64_t handle) {
  // The per-thread stream is the executor's: only it can ask about it.
  if (used_per_thread_stream_ && std::this_thread::get_id() != executor_id_) return false;
  if (cu_.cuStreamQuery(nullptr) != CUDA_SUCCESS) return false;
  if (used_per_thread_stream_ && cu_.cuStreamQuery(CU_STREAM_PER_THREAD) != CUDA_SUCCESS) return false;
  for (const auto& [stream, ctx] : stream_ctx_) {
    if (ctx != handle) continue;
    auto it = streams_.find(stream);
    if (it != streams_.end() && cu_.cuStreamQuery(it->second) != CUDA_SUCCESS) return false;
  }
  return true;
}

void Session::release_all() {
  for (auto& [handle, ctx] : contexts_) {
    if (set_current(ctx) == CUDA_SUCCESS) cu_.cuCtxSynchronize();
  }
  for (auto& [handle, ctx] : contexts_) {
    CUresult r = cu_.cuCtxDestroy(ctx);
    if (r != CUDA_SUCCESS) {
      RGPU_WARN("session context destroy failed id=%llu result=%d", static_cast<unsigned long long>(id_), r);
    }
  }
  // Only now, with the contexts' work ended, may the staged host bytes go
  // (the destruction freed their events).
  staging_.clear();
  contexts_.clear();
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    live_contexts_.clear();
  }
  allocations_.clear();
  modules_.clear();
  functions_.clear();
  cu_.cuCtxSetCurrent(nullptr);
}

}  // namespace rgpu::server
