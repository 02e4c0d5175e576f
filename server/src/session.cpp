// Session: executes one client's calls in order through the driver table.
#include "session.h"

#include <pthread.h>

#include <algorithm>
#include <cstring>

#include "executing.h"
#include "rgpu/common/log.h"
#include "rgpu/common/reason.h"

namespace rgpu::server {
namespace {

// Device-to-host results up to this size ride inline in the reply; larger
// ones travel as the transport payload (rendezvous, no extra copy).
constexpr uint64_t kInlineLimit = 32 * 1024;

bool has_context_synchronize(const protocol::Decoded& decoded) {
  for (auto entry : decoded.envelope().getBatch().getCalls()) {
    if (entry.getCall().isCtxSynchronize()) return true;
  }
  return false;
}

// Idle staging buffers a session keeps for reuse.
constexpr size_t kStagingCache = size_t{256} << 20;

// Pieces of a synchronous copy that goes through staging: large enough that a
// piece's overhead is small, small enough that the network and the device
// copy of neighbouring pieces overlap.
constexpr uint64_t kCopyPipelineChunk = 4u << 20;

// How long the executor keeps looking for the next message before it sleeps:
// a client's next call usually follows its reply within microseconds.
constexpr auto kExecutorSpin = std::chrono::microseconds(20);
// How long the executor drives the transport itself for a reply from device
// memory to be taken before it sleeps until it is.
constexpr auto kDeviceReplyPoll = std::chrono::microseconds(2000);

// A session admitted without slices (the fuzzer's) sees every device of the
// server, with the grant's quota on each.
std::vector<Placement> session_devices(const ClientIdentity& client, const ServerInfo& info) {
  if (!client.terms.devices.empty()) return client.terms.devices;
  std::vector<Placement> all(info.devices.size());
  for (size_t i = 0; i < all.size(); ++i) {
    all[i].device = static_cast<uint32_t>(i);
    all[i].quota = client.terms.granted.memory_bytes;
  }
  return all;
}

std::vector<uint64_t> quotas_of(const std::vector<Placement>& devices) {
  std::vector<uint64_t> quotas;
  for (const Placement& p : devices) quotas.push_back(p.quota);
  return quotas;
}

// A slice's UUID: its device's with byte 8 marked by the slice's number, so
// that CUDA_VISIBLE_DEVICES can name each slice and none is its device's.
CUuuid slice_uuid(CUuuid uuid, int slice) {
  if (slice >= 0) uuid.bytes[8] = static_cast<char>(uuid.bytes[8] ^ (0x80 | (slice & 0x7f)));
  return uuid;
}

}  // namespace

Session::Session(uint64_t id, ClientIdentity client, std::shared_ptr<const DriverTable> driver,
                 std::shared_ptr<const ServerInfo> info, std::shared_ptr<ModuleCache> modules,
                 std::shared_ptr<transport::Connection> connection, std::shared_ptr<const Admission> admission)
    : admission_(std::move(admission)),
      id_(id),
      client_(std::move(client)),
      devices_(session_devices(client_, *info)),
      driver_(std::move(driver)),
      cu_(*driver_),
      info_(std::move(info)),
      module_cache_(std::move(modules)),
      connection_(std::move(connection)),
      staging_pool_(connection_, kStagingCache, info_->limits.max_inflight_bytes),
      bulk_direct_(cu_.cpu_device() || connection_->supports_cuda_memory()),
      limits_(info_->limits),
      metrics_(info_->metrics.get(), client_.tenant, devices_),
      handles_(info_->limits.max_handles),
      ledger_(quotas_of(devices_)),
      errors_(cu_.rgpuTakeErrorReason),
      pollers_(info_->pollers ? info_->pollers
                              : std::make_shared<DevicePollers>(driver_, info_->devices.size(), PollerOptions{1})) {
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
  // Closed first, so that a continuation blocked sending to a client that
  // reads nothing fails at once rather than hold up the cancel.
  connection_->close();
  // Closing cancels the replies still going out; the ones sent from device
  // memory must be gone before that memory is. Should the transport never
  // let them go, the memory is left allocated rather than read once freed.
  if (!wait_device_replies(std::chrono::steady_clock::now() + std::chrono::seconds(10), false)) {
    RGPU_ERROR("session teardown id=%llu: replies from device memory still in flight after 10 s; its memory is "
               "left allocated",
               static_cast<unsigned long long>(id_));
    pollers_->cancel(id_);
    return;
  }
  // No continuation of this session runs after this; the ones dropped keep
  // their buffers until the contexts are gone (release_all).
  cancelled_ = pollers_->cancel(id_);
  pending_watches_.store(0);
  release_all();
  cancelled_.clear();
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
  // Tell the client why, without waiting for it: a client that has stopped
  // reading is one reason to end a session.
  {
    capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
    builder.initRoot<wire::Envelope>().setSessionEnded(bounded_reason(reason));
    auto words = protocol::encode(builder);
    connection_->send_detached(protocol::as_bytes(words), {}, [](const Status&) {});
  }
  connection_->close();
}

bool Session::handle_room() {
  if (handles_.size() < limits_.max_handles) return true;
  note_reason(CUDA_ERROR_OUT_OF_MEMORY, "the session holds " + std::to_string(handles_.size()) +
                                            " handles, rgpud's limit (--limit handles=N)");
  if (!handle_limit_logged_) {
    handle_limit_logged_ = true;
    RGPU_WARN("session handle limit id=%llu tenant=%s limit=%zu", static_cast<unsigned long long>(id_),
              client_.tenant.c_str(), limits_.max_handles);
  }
  return false;
}

std::unique_ptr<protocol::Decoded> Session::decode_incoming(const transport::Message& message) {
  auto decoded = protocol::decode(message.header);
  if (!decoded.is_ok()) {
    fail("malformed message: " + decoded.status().message());
    return nullptr;
  }
  if (decoded.value()->envelope().isHostFuncDone()) {
    auto done = decoded.value()->envelope().getHostFuncDone();
    host_func_done(done.getId(), done.getBytes());
    return nullptr;
  }
  return std::move(decoded.value());
}

void Session::post(transport::Message message) {
  guarded("message", [&] {
    std::unique_ptr<protocol::Decoded> decoded = decode_incoming(message);
    if (!decoded) return;
    // Not on a thread that is in the middle of a call (an executor, or an
    // inline batch) that drives the transport while it waits for a transfer.
    Inline how = t_executing ? Inline::kNo : runs_inline(*decoded, message);
    // A reply still going out from device memory holds back the session's
    // next calls; the executor waits for it, this thread may not.
    if (untaken_->from_device.load(std::memory_order_acquire) > 0) how = Inline::kNo;
    // Near its limit of pending watches the session's waits go to the
    // executor, which may wait itself (an inline batch may not).
    if (pending_watches_.load(std::memory_order_relaxed) + kMaxInlineCalls >= limits_.max_session_waits) {
      how = Inline::kNo;
    }
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
        // A context synchronize must watch the executor's per-thread stream,
        // which only the executor can name.
        if (used_per_thread_stream_ && has_context_synchronize(*decoded)) idle = false;
        Executing executing;
        if (idle && how == Inline::kIfIdle) {
          const uint64_t ctx = decoded->envelope().getBatch().getCalls()[0].getCall().getCtx();
          idle = make_current(ctx) == CUDA_SUCCESS && context_idle(ctx);
        }
        if (idle) {
          Incoming incoming{std::move(message), std::move(decoded)};
          handle_message(incoming);
          return;
        }
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_) return;
      inbox_.push_back(Incoming{std::move(message), std::move(decoded)});
      inbox_size_.store(inbox_.size(), std::memory_order_release);
    }
    cv_.notify_one();
  });
}

bool Session::handle_for_fuzzing(transport::Message message) {
  Executing executing;
  std::lock_guard<std::mutex> exec(exec_mu_);
  guarded("message", [&] {
    std::unique_ptr<protocol::Decoded> decoded = decode_incoming(message);
    if (!decoded) return;
    Incoming incoming{std::move(message), std::move(decoded)};
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
  host_funcs_closed_ = true;
  for (auto& [id, wait] : host_funcs_) wait->done = true;
  host_funcs_cv_.notify_all();
}

void Session::run_executor() {
  pthread_setname_np(pthread_self(), "rgpud-session");
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
    // A reply still going out from the session's device memory must be gone
    // before any call may change those bytes. The client is usually taking
    // it already: drive the transport here for a moment, as a blocking send
    // would, before sleeping on it.
    if (untaken_->from_device.load(std::memory_order_acquire) > 0) {
      connection_->poll_until([this] { return untaken_->from_device.load(std::memory_order_acquire) == 0; },
                              kDeviceReplyPoll);
      if (!wait_device_replies(std::chrono::steady_clock::time_point::max(), true)) return;
    }
    guarded("call", [&] { handle_message(incoming); });
  }
}

// What a detached reply's bytes live in, until the transport is done with them.
struct Session::ReplyBytes {
  StagingPool::Buffer staged;
  std::vector<std::byte> owned;
};

void Session::send_untaken(const kj::Array<capnp::word>& words, transport::Bytes payload,
                           std::vector<std::byte> owned) {
  // `payload` lies in `owned`, whose bytes do not move with it.
  detach_reply(words, payload, std::make_shared<ReplyBytes>(ReplyBytes{{}, std::move(owned)}), false);
}

void Session::send_untaken(const kj::Array<capnp::word>& words, transport::Bytes payload, StagingPool::Buffer staged) {
  const bool from_device = !staged;
  detach_reply(words, payload, std::make_shared<ReplyBytes>(ReplyBytes{std::move(staged), {}}), from_device);
}

void Session::detach_reply(const kj::Array<capnp::word>& words, transport::Bytes payload,
                           std::shared_ptr<ReplyBytes> held, bool from_device) {
  std::shared_ptr<Untaken> untaken = untaken_;
  uint64_t serial;
  {
    std::lock_guard<std::mutex> lock(untaken->mu);
    serial = untaken->next++;
    untaken->since.emplace(serial, std::chrono::steady_clock::now());
    if (from_device) untaken->from_device.fetch_add(1, std::memory_order_acq_rel);
  }
  // Called once, when the client has the bytes or the connection has gone.
  connection_->send_detached(protocol::as_bytes(words), payload, [untaken, serial, from_device, held](const Status&) {
    held->staged.reset();
    held->owned = {};
    {
      std::lock_guard<std::mutex> lock(untaken->mu);
      untaken->since.erase(serial);
      if (from_device) untaken->from_device.fetch_sub(1, std::memory_order_acq_rel);
    }
    untaken->cv.notify_all();
  });
}

bool Session::wait_device_replies(std::chrono::steady_clock::time_point deadline, bool while_open) {
  std::unique_lock<std::mutex> lock(untaken_->mu);
  while (untaken_->from_device.load(std::memory_order_acquire) > 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    if (while_open) {
      lock.unlock();
      {
        std::lock_guard<std::mutex> open(mu_);
        if (closing_) return false;
      }
      lock.lock();
      if (untaken_->from_device.load(std::memory_order_acquire) == 0) break;
    }
    // Bounded waits: close() does not signal this condition.
    untaken_->cv.wait_for(lock, std::min<std::chrono::steady_clock::duration>(deadline - now, std::chrono::milliseconds(20)));
  }
  return true;
}

std::chrono::steady_clock::time_point Session::oldest_untaken_reply() const {
  std::lock_guard<std::mutex> lock(untaken_->mu);
  if (untaken_->since.empty()) return std::chrono::steady_clock::time_point::max();
  return untaken_->since.begin()->second;  // serials grow with time
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
  client_.terms.write(welcome);  // the version, ranges, features and grant negotiated at the hello
  welcome.setServerBuild(info_->build);
  welcome.setSessionId(id_);
  welcome.setAccepted(true);
  welcome.setTenant(client_.tenant);
  if (!server_proof.empty()) {
    welcome.setServerProof(kj::arrayPtr(reinterpret_cast<const capnp::byte*>(server_proof.data()), server_proof.size()));
  }
  welcome.setDriverVersion(info_->driver_version);
  welcome.setCopyPipelineChunk(bulk_direct_ ? 0 : kCopyPipelineChunk);
  auto devices = welcome.initDevices(static_cast<unsigned>(devices_.size()));
  for (size_t i = 0; i < devices_.size(); ++i) {
    const Placement& place = devices_[i];
    const auto& d = info_->devices.at(place.device);
    // The session's view: a slice has its own name and uuid, its quota as
    // the device's memory (cuDeviceTotalMem, cudaGetDeviceProperties and NVML
    // agree with cuMemGetInfo), and its share of the multiprocessors, at
    // least one.
    protocol::DeviceDescription view = d;
    if (place.slice >= 0) view.name += " (slice " + std::to_string(place.slice) + ")";
    view.uuid = slice_uuid(d.uuid, place.slice);
    if (place.quota != 0 && place.quota < d.total_mem) view.total_mem = place.quota;
    if (place.share < 1 && CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT < view.attributes.size()) {
      int& sms = view.attributes[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT];
      sms = std::max(1, static_cast<int>(sms * place.share + 0.5f));
    }
    protocol::write_device(view, devices[i]);
  }
  RGPU_INFO("session accepted id=%llu tenant=%s peer=%s pid=%u host=%s program=%s protocol=%u features=0x%llx "
            "devices=%zu slices=\"%s\" memory_quota=%llu bulk_path=%s",
            static_cast<unsigned long long>(id_), client_.tenant.c_str(), connection_->peer().c_str(), client_.pid,
            client_.hostname.c_str(), client_.program.c_str(), client_.terms.version,
            static_cast<unsigned long long>(client_.terms.features), devices_.size(), placements_text().c_str(),
            static_cast<unsigned long long>(client_.terms.granted.memory_bytes),
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
  for (unsigned i = 0; i < calls.size(); ++i) {
    execute(calls[i].getCall(), message, i + 1 == calls.size());
  }
}

std::string Session::placements_text() const {
  std::string text;
  for (const Placement& p : devices_) {
    if (!text.empty()) text += ',';
    text += std::to_string(p.device);
    if (p.slice >= 0) text += "." + std::to_string(p.slice);
  }
  return text;
}

bool Session::device(CUdevice ordinal, CUdevice* out) const {
  if (ordinal < 0 || static_cast<size_t>(ordinal) >= devices_.size()) return false;
  *out = static_cast<CUdevice>(devices_[static_cast<size_t>(ordinal)].device);
  return true;
}

const void* Session::library_table(size_t index) const {
  return info_->libraries ? info_->libraries->table(index) : nullptr;
}

void Session::send_api_reply(uint64_t call_id, InvokeOutcome outcome, std::string_view call) {
  capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
  auto reply = builder.initRoot<wire::Envelope>().initReply();
  reply.setId(call_id);
  reply.setResult(outcome.code);
  reply.setApi(outcome.api);
  errors_.take(reply);
  if (!outcome.message.empty()) reply.setMessage(outcome.message);
  if (outcome.code != 0) {
    if (std::string why = errors_.reason(outcome.code, call); !why.empty()) reply.setReason(why);
  }
  transport::Bytes payload;
  if (outcome.out.size() <= kInlineLimit) {
    if (!outcome.out.empty()) {
      reply.setBytes(kj::arrayPtr(reinterpret_cast<const capnp::byte*>(outcome.out.data()), outcome.out.size()));
    }
  } else {
    reply.setPayloadBytes(outcome.out.size());
    payload = transport::Bytes(outcome.out.data(), outcome.out.size());
  }
  auto words = protocol::encode(builder);
  // Large out-arguments go as a detached send, like a copy's bytes: a
  // client that stops reading holds its own reply, not the session's thread
  // (docs/security.md, "Slow readers").
  if (!payload.empty()) {
    send_untaken(words, payload, std::move(outcome.out));
    return;
  }
  if (Status s = connection_->send(protocol::as_bytes(words), payload); !s.is_ok()) {
    RGPU_DEBUG("session reply not sent id=%llu call=%llu error=\"%s\"", static_cast<unsigned long long>(id_),
               static_cast<unsigned long long>(call_id), s.to_string().c_str());
  }
}

void Session::send_reply(uint64_t call_id, Outcome outcome, std::string_view call) {
  capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
  auto reply = builder.initRoot<wire::Envelope>().initReply();
  reply.setId(call_id);
  reply.setResult(outcome.result);
  reply.setApi(wire::Api::DRIVER);
  errors_.take(reply);
  if (outcome.result != CUDA_SUCCESS) {
    if (std::string why = errors_.reason(outcome.result, call); !why.empty()) reply.setReason(why);
  } else if (!outcome.reason.empty()) {
    reply.setReason(outcome.reason);
  }
  if (!outcome.values.empty()) {
    auto values = reply.initValues(static_cast<unsigned>(outcome.values.size()));
    for (size_t i = 0; i < outcome.values.size(); ++i) values.set(i, outcome.values[i]);
  }
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
  // Bulk bytes go without this thread waiting for the client to take them:
  // a client that stops reading holds back its own session only
  // (docs/security.md, "Slow readers").
  if (!payload.empty()) {
    send_untaken(words, payload, std::move(outcome.data));
    return;
  }
  if (Status s = connection_->send(protocol::as_bytes(words), payload); !s.is_ok()) {
    RGPU_DEBUG("session reply not sent id=%llu call=%llu error=\"%s\"", static_cast<unsigned long long>(id_),
               static_cast<unsigned long long>(call_id), s.to_string().c_str());
  }
}

// ---- handles and validation ------------------------------------------------

CUresult Session::make_current(uint64_t ctx) {
  CUcontext c = context_object(ctx);
  if (c == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  return set_current(c);
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

CUresult Session::lookup_stream(uint64_t ctx, uint64_t handle, CUstream* out) const {
  using protocol::HandleKind;
  if (protocol::is_special_stream(handle)) {
    // The special streams are the context's own; the driver spells them 0, 1, 2.
    if (handle == protocol::kPerThreadStream) {
      used_per_thread_stream_ = true;
      *out = CU_STREAM_PER_THREAD;
    } else {
      *out = handle == protocol::kLegacyStream ? CU_STREAM_LEGACY : nullptr;
    }
    return CUDA_SUCCESS;
  }
  void* s = handles_.find(HandleKind::kStream, handle);
  if (s == nullptr || handles_.parent(HandleKind::kStream, handle) != ctx) return CUDA_ERROR_INVALID_HANDLE;
  *out = static_cast<CUstream>(s);
  return CUDA_SUCCESS;
}

CUresult Session::lookup_event(uint64_t handle, CUevent* out) const {
  void* e = handles_.find(protocol::HandleKind::kEvent, handle);
  if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *out = static_cast<CUevent>(e);
  return CUDA_SUCCESS;
}

CUresult Session::check_range(uint64_t ctx, uint64_t ptr, uint64_t size) const {
  if (size == 0) return CUDA_SUCCESS;
  return ledger_.check(ctx, ptr, size) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult Session::add_handle(protocol::HandleKind kind, uint64_t handle, void* object, uint64_t parent,
                             HandleTable::Destroy destroy) {
  switch (handles_.add(kind, handle, object, parent, destroy)) {
    case HandleTable::AddResult::kAdded:
      return CUDA_SUCCESS;
    case HandleTable::AddResult::kFull:
      (void)handle_room();  // logs the limit once
      if (destroy) destroy(object);
      return CUDA_ERROR_OUT_OF_MEMORY;
    case HandleTable::AddResult::kInvalid:
    default:
      if (destroy) destroy(object);
      return CUDA_ERROR_INVALID_VALUE;
  }
}

bool Session::add(protocol::HandleKind kind, uint64_t handle, void* object, uint64_t parent,
                  std::function<void(void*)> destroy) {
  if (parent == 0) parent = call_ctx_;
  if (kind == protocol::HandleKind::kEvent || kind == protocol::HandleKind::kStream) {
    // No watch may look at an event or stream once it is gone.
    destroy = [this, destroy = std::move(destroy)](void* object) {
      pollers_->forget(id_, object);
      if (destroy) destroy(object);
    };
  }
  // Refused, the object stays the caller's to release (nothing registered).
  if (handles_.add(kind, handle, object, parent, std::move(destroy)) == HandleTable::AddResult::kAdded) return true;
  (void)handle_room();  // logs the limit once when that was the reason
  return false;
}

CUresult Session::create_context(uint64_t handle, int device, unsigned flags) {
  if (!HandleTable::nameable(protocol::HandleKind::kContext, handle) ||
      handles_.find(protocol::HandleKind::kContext, handle)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!handle_room()) return CUDA_ERROR_OUT_OF_MEMORY;
  CUdevice server_device = 0;
  if (!this->device(device, &server_device)) return CUDA_ERROR_INVALID_DEVICE;
  CUdevice dev;
  CUresult r = cu_.cuDeviceGet(&dev, server_device);
  if (r != CUDA_SUCCESS) return r;
  CUcontext ctx = nullptr;
  // Each session gets contexts of its own (never the shared primary context),
  // so a sticky error in one session cannot poison another.
  r = cu_.cuCtxCreate(&ctx, nullptr, flags, dev);
  if (r != CUDA_SUCCESS) return r;
  if (cu_.rgpuCtxSetIsolationGroup) {
    // Kernels of this session may touch only this session's memory.
    if ((r = cu_.rgpuCtxSetIsolationGroup(ctx, id_)) != CUDA_SUCCESS) {
      cu_.cuCtxDestroy(ctx);
      return r;
    }
  }
  // A slice's kernels get its share of the device: of the workers and their
  // time on the CPU device, by rgpud's own timing of its launches elsewhere.
  const Placement& place = devices_[static_cast<size_t>(device)];
  if (place.share < 1 && cu_.rgpuCtxSetComputeShare) {
    if ((r = cu_.rgpuCtxSetComputeShare(ctx, place.share)) != CUDA_SUCCESS) {
      cu_.cuCtxDestroy(ctx);
      return r;
    }
  } else if (place.share < 1 && place.device < info_->fair_shares.size()) {
    time_shares_[handle] = std::make_unique<TimeShare>(cu_, info_->fair_shares[place.device], place.share);
  }
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    live_contexts_.push_back(ctx);
  }
  // Its streams, events and modules go first (the table removes children
  // first), then its memory from the ledger, then the context itself.
  r = add_handle(protocol::HandleKind::kContext, handle, ctx, 0, [this, handle](void* object) {
    auto c = static_cast<CUcontext>(object);
    ledger_.drop_context(handle);
    time_shares_.erase(handle);  // its events live in the context
    {
      std::lock_guard<std::mutex> lock(live_mu_);
      std::erase(live_contexts_, c);
    }
    destroy_result_ = cu_.cuCtxDestroy(c);
  });
  if (r != CUDA_SUCCESS) return r;
  ledger_.bind_context(handle, static_cast<uint32_t>(device));
  if (cu_.rgpuCtxSetPrintfCallback) cu_.rgpuCtxSetPrintfCallback(ctx, &Session::device_output, this);
  if (cu_.rgpuCtxSetErrorOutputCallback) cu_.rgpuCtxSetErrorOutputCallback(ctx, &Session::device_error, this);
  if (cu_.rgpuCtxSetErrorReasonCallback) cu_.rgpuCtxSetErrorReasonCallback(ctx, &ErrorSlot::device_fault, &errors_);
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

// A failed device assert's message, for the client's stderr; sent before the
// launch's failure can be reported, as device_output is.
void Session::device_error(void* session, const char* text, size_t size) {
  auto* self = static_cast<Session*>(session);
  capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
  builder.initRoot<wire::Envelope>().setDeviceError(kj::arrayPtr(reinterpret_cast<const capnp::byte*>(text), size));
  auto words = protocol::encode(builder);
  (void)self->connection_->send(protocol::as_bytes(words));
}

CUresult Session::destroy_context(uint64_t handle) {
  CUcontext ctx = context_object(handle);
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  // The device must be done with staged host buffers before they go.
  if (set_current(ctx) == CUDA_SUCCESS) cu_.cuCtxSynchronize();
  // Its watches are complete now: answered here, before their events go.
  pollers_->drain(id_, ctx);
  reap_staging(true);
  destroy_result_ = CUDA_SUCCESS;
  handles_.remove(protocol::HandleKind::kContext, handle);
  return destroy_result_;
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

StagingPool::Buffer Session::staging(size_t size) {
  auto limit_text = [&] {
    return std::to_string(staging_pool_.max_in_use()) + " bytes (rgpud --limit inflight-bytes=N)";
  };
  if (!staging_pool_.could_fit(size)) {
    note_reason(CUDA_ERROR_OUT_OF_MEMORY, "a copy of " + std::to_string(size) +
                                              " bytes is larger than the session's limit of bytes in flight, " +
                                              limit_text());
    return {};
  }
  const bool may_wait = std::this_thread::get_id() == executor_id_;
  auto give_up = std::chrono::steady_clock::now() + kStagingPatience;
  for (;;) {
    const uint64_t seen = staging_pool_.releases();
    StagingPool::Buffer b = staging_pool_.acquire(size);
    if (b || !may_wait) return b;
    if (!staging_.empty()) {
      // The oldest host-to-device copy's bytes go once the device has read them.
      Staged& oldest = staging_.front();
      cu_.cuEventSynchronize(oldest.done);
      cu_.cuEventDestroy(oldest.done);
      staging_.pop_front();
      give_up = std::chrono::steady_clock::now() + kStagingPatience;
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_) return b;
    }
    // Nothing in flight to wait for: the host is out of memory.
    if (staging_pool_.bytes_in_use() == 0) return b;
    const auto now = std::chrono::steady_clock::now();
    if (now >= give_up) {
      note_reason(CUDA_ERROR_OUT_OF_MEMORY,
                  "no room for a copy of " + std::to_string(size) + " bytes: the session's copies in flight held " +
                      std::to_string(staging_pool_.bytes_in_use()) + " of " + limit_text() + " for " +
                      std::to_string(kStagingPatience.count()) + " s (a client that does not read its results?)");
      return b;
    }
    // Device-to-host copies release theirs once their results are sent.
    if (staging_pool_.wait_release(seen, std::min(give_up, now + std::chrono::milliseconds(50)))) {
      give_up = std::chrono::steady_clock::now() + kStagingPatience;
    }
  }
}

bool Session::context_idle(uint64_t handle) {
  // The per-thread stream is the executor's: only it can ask about it.
  if (used_per_thread_stream_ && std::this_thread::get_id() != executor_id_) return false;
  if (cu_.cuStreamQuery(nullptr) != CUDA_SUCCESS) return false;
  if (used_per_thread_stream_ && cu_.cuStreamQuery(CU_STREAM_PER_THREAD) != CUDA_SUCCESS) return false;
  for (uint64_t stream : handles_.children(handle, protocol::HandleKind::kStream)) {
    auto s = static_cast<CUstream>(handles_.find(protocol::HandleKind::kStream, stream));
    if (cu_.cuStreamQuery(s) != CUDA_SUCCESS) return false;
  }
  return true;
}

void Session::release_all() {
  using protocol::HandleKind;
  const std::vector<uint64_t> contexts = handles_.children(0, HandleKind::kContext);
  for (uint64_t h : contexts) {
    if (set_current(context_object(h)) == CUDA_SUCCESS) cu_.cuCtxSynchronize();
  }
  release_graphs();  // before the contexts that own them
  for (uint64_t h : contexts) {
    set_current(context_object(h));  // for its children's destroy calls
    destroy_result_ = CUDA_SUCCESS;
    handles_.remove(HandleKind::kContext, h);
    if (destroy_result_ != CUDA_SUCCESS) {
      RGPU_WARN("session context destroy failed id=%llu result=%d", static_cast<unsigned long long>(id_),
                destroy_result_);
    }
  }
  handles_.clear();
  // Only now, with the contexts' work ended, may the staged host bytes go
  // (the destruction freed their events).
  staging_.clear();
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    live_contexts_.clear();
  }
  ledger_.clear();
  cu_.cuCtxSetCurrent(nullptr);
}

}  // namespace rgpu::server
