// Client: batching, the flusher, pipelined copies and host functions over a Connection.
#include "client.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rgpu/common/log.h"
#include "rgpu/common/request_text.h"
#include "rgpu/protocol/handles.h"
#include "driver_pack.h"
#include "reasons.h"
#include "route.h"
#include "visible_devices.h"

namespace rgpu::shim {
namespace {

std::string program_name() {
  char buf[512];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, n) : std::string("?");
}

// A number from the environment in [0, max]; false (with a warning for a bad
// value) when unset or malformed.
bool env_number(const char* name, uint64_t max, uint64_t* out) {
  const char* text = std::getenv(name);
  if (text == nullptr) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || v > max || text[0] == '-') {
    RGPU_WARN("ignoring %s=%s (expected a whole number from 0 to %llu)", name, text,
              static_cast<unsigned long long>(max));
    return false;
  }
  *out = v;
  return true;
}

// A request from the environment overrides the caller's, field by field:
// RGPU_REQUEST="devices=N,mem=SIZE,share=F" first, then RGPU_REQUEST_DEVICES and
// RGPU_REQUEST_MEMORY (a size: bytes, or 512M, 2G). A malformed request is
// an error: running without the quota that was asked for would be worse.
Status request_from_environment(Resources* request) {
  if (const char* text = std::getenv("RGPU_REQUEST"); text != nullptr && *text != '\0') {
    auto parsed = parse_request(text);
    if (!parsed.is_ok()) return invalid_argument("RGPU_REQUEST: " + parsed.status().message());
    if (parsed.value().devices != 0) request->devices = parsed.value().devices;
    if (parsed.value().memory_bytes != 0) request->memory_bytes = parsed.value().memory_bytes;
    if (parsed.value().share != 0) request->share = parsed.value().share;
  }
  if (uint64_t n; env_number("RGPU_REQUEST_DEVICES", UINT32_MAX, &n)) request->devices = static_cast<uint32_t>(n);
  if (const char* text = std::getenv("RGPU_REQUEST_MEMORY"); text != nullptr && *text != '\0') {
    auto bytes = parse_size(text);
    if (!bytes.is_ok()) return invalid_argument("RGPU_REQUEST_MEMORY: " + bytes.status().message());
    request->memory_bytes = bytes.value();
  }
  if (uint64_t n; env_number("RGPU_LEASE_SECONDS", UINT32_MAX, &n)) request->lease_seconds = static_cast<uint32_t>(n);
  if (const char* lease = std::getenv("RGPU_LEASE"); lease != nullptr && *lease != '\0' && lease_is_ours()) {
    request->lease = lease;
  }
  return Status();
}

}  // namespace

bool lease_is_ours() {
  const char* pid = std::getenv("RGPU_LEASE_PID");
  return pid == nullptr || *pid == '\0' || std::strtoll(pid, nullptr, 10) == static_cast<long long>(getpid());
}

Result<std::unique_ptr<Client>> Client::connect(const ClientOptions& options,
                                                std::shared_ptr<transport::Transport> transport) {
  std::unique_ptr<Client> client(new Client());
  client->options_ = options;
  if (uint64_t us; env_number("RGPU_POLL_US", 1000000, &us)) client->options_.poll_budget = std::chrono::microseconds(us);
  if (uint64_t bytes; env_number("RGPU_PIPELINE_CHUNK", uint64_t{1} << 40, &bytes)) {
    client->options_.pipeline_chunk = bytes;
    client->pipeline_chunk_from_env_ = true;
  }
  if (Status s = request_from_environment(&client->options_.request); !s.is_ok()) return s;
  if (!transport) {
    transport::UcxOptions ucx_options;
    // Callers poll for their own replies, so the progress thread sleeps as
    // soon as it is idle instead of competing with them for the CPU.
    if (client->options_.poll_budget.count() > 0) ucx_options.idle_spin = std::chrono::microseconds(0);
    auto ucx = transport::make_ucx_transport(ucx_options);
    if (!ucx.is_ok()) return ucx.status();
    transport = std::move(ucx.value());
  }
  ConnectionOptions co;
  co.server = options.server;
  co.tenant = options.tenant;
  co.auth_token = options.auth_token;
  co.connect_timeout = options.connect_timeout;
  co.integrity = options.integrity;
  co.request = client->options_.request;
  Client* self = client.get();
  Connection::Events events;
  events.host_func_call = [self](uint64_t id, std::vector<std::byte> bytes) {
    self->on_host_func_call(id, std::move(bytes));
  };
  events.device_output = [](std::string_view text) {
    // Through stdio, so it keeps its place among the program's own output.
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  };
  events.device_error = [](std::string_view text) {
    std::fflush(stdout);  // after the kernel's printf output, as on a GPU
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
  };
  auto connection = Connection::open(co, std::move(transport), std::move(events));
  if (!connection.is_ok()) return connection.status();
  client->connection_ = std::move(connection.value());
  const auto& all = client->connection_->session().devices;
  if (!options.visible_devices) {
    client->visible_ = all;
  } else {
    std::vector<CUuuid> uuids;
    for (const auto& d : all) uuids.push_back(d.uuid);
    for (int i : select_visible(*options.visible_devices, uuids)) client->visible_.push_back(all[static_cast<size_t>(i)]);
    RGPU_INFO("visible devices=%zu of=%zu spec=\"%s\"", client->visible_.size(), all.size(),
              options.visible_devices->c_str());
  }
  if (!client->pipeline_chunk_from_env_) client->options_.pipeline_chunk = client->connection_->session().copy_pipeline_chunk;
  client->host_memory_ = std::make_unique<HostMemory>(client->connection_->transport_connection());
  client->flusher_ = std::thread([self] { self->run_flusher(); });
  client->callbacks_ = std::thread([self] { self->run_callbacks(); });
  return client;
}

Client::~Client() {
  if (const char* path = std::getenv("RGPU_STATS"); path && *path) write_stats(path);
  {
    std::lock_guard<std::mutex> lock(batch_mu_);
    stop_flusher_ = true;
  }
  flush_cv_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  {
    std::lock_guard<std::mutex> lock(host_mu_);
    stop_callbacks_ = true;
  }
  host_cv_.notify_all();
  if (callbacks_.joinable()) callbacks_.join();
  host_memory_.reset();
  // After this no handler of the connection calls back into this object.
  connection_.reset();
}

void Client::write_stats(const std::string& path) const {
  auto n = [](const std::atomic<uint64_t>& v) { return static_cast<unsigned long long>(v.load()); };
  std::string program = program_name();
  for (char& c : program) {
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '?';
  }
  char line[1024];
  const int len = std::snprintf(
      line, sizeof line,
      "{\"pid\":%d,\"program\":\"%s\",\"sync_calls\":%llu,\"async_calls\":%llu,\"batches\":%llu,"
      "\"payload_bytes_sent\":%llu,\"modules_sent\":%llu,\"module_bytes_sent\":%llu,\"modules_cached\":%llu}\n",
      static_cast<int>(getpid()), program.c_str(), n(stats_.sync_calls), n(stats_.async_calls), n(stats_.batches),
      n(stats_.payload_bytes_sent), n(stats_.modules_sent), n(stats_.module_bytes_sent), n(stats_.modules_cached));
  if (len <= 0 || static_cast<size_t>(len) >= sizeof line) return;
  // One write to an O_APPEND file: lines of concurrent processes never mix.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    RGPU_WARN("cannot write RGPU_STATS=%s: %s", path.c_str(), std::strerror(errno));
    return;
  }
  if (::write(fd, line, static_cast<size_t>(len)) != len) RGPU_WARN("short write to RGPU_STATS=%s", path.c_str());
  ::close(fd);
}

wire::Call::Builder Client::add_call_locked(uint64_t ctx) {
  if (!builder_) builder_ = std::make_unique<capnp::MallocMessageBuilder>(protocol::kSmallMessageWords);
  auto orphan = builder_->getOrphanage().newOrphan<wire::Call>();
  wire::Call::Builder call = orphan.get();
  call.setId(next_id_++);
  // A primary context's program value carries its server's tag (route.h).
  call.setCtx(route::wire_context(ctx));
  calls_.push_back(kj::mv(orphan));
  return call;
}

void Client::after_async_locked(std::unique_lock<std::mutex>& lock) {
  if (calls_.size() >= options_.batch_calls) {
    (void)send_batch_locked({});
  } else if (calls_.size() == 1) {
    batch_started_ = std::chrono::steady_clock::now();
    flush_cv_.notify_one();
  }
}

Status Client::send_batch_locked(transport::Bytes payload, std::unique_lock<std::mutex>* lock) {
  if (calls_.empty()) return Status::ok();
  auto list = builder_->initRoot<wire::Envelope>().initBatch().initCalls(static_cast<unsigned>(calls_.size()));
  for (size_t i = 0; i < calls_.size(); ++i) list[i].adoptCall(kj::mv(calls_[i]));
  calls_.clear();
  auto words = protocol::encode(*builder_);
  builder_.reset();
  stats_.batches.fetch_add(1, std::memory_order_relaxed);
  stats_.payload_bytes_sent.fetch_add(payload.size(), std::memory_order_relaxed);
  return lock == nullptr || payload.empty()
             ? connection_->send(protocol::as_bytes(words), payload)
             : connection_->send_then(protocol::as_bytes(words), payload, [lock] { lock->unlock(); });
}

void Client::flush() {
  std::lock_guard<std::mutex> lock(batch_mu_);
  (void)send_batch_locked({});
}

void Client::run_flusher() {
  std::unique_lock<std::mutex> lock(batch_mu_);
  while (!stop_flusher_) {
    if (calls_.empty()) {
      flush_cv_.wait(lock);
      continue;
    }
    auto deadline = batch_started_ + options_.flush_delay;
    if (std::chrono::steady_clock::now() < deadline) {
      flush_cv_.wait_until(lock, deadline);
      continue;
    }
    (void)send_batch_locked({});
  }
}

CUresult Client::as_driver_result(wire::Api api, uint32_t code) {
  // NONE: a server that does not name the API answers for the driver.
  if (api == wire::Api::NONE || api == wire::Api::DRIVER) return static_cast<CUresult>(code);
  // Every remoted API spells success as 0.
  if (code == 0) return CUDA_SUCCESS;
  const uint64_t bit = uint64_t{1} << (static_cast<unsigned>(api) & 63);
  if ((foreign_api_logged_.fetch_or(bit) & bit) == 0) {
    RGPU_WARN("driver call answered with another api's status api=%u code=%u mapped=CUDA_ERROR_UNKNOWN",
              static_cast<unsigned>(api), code);
  }
  return CUDA_ERROR_UNKNOWN;
}

namespace {

// Whether a sync call reports the errors of earlier async work, as CUDA's
// synchronizing calls do: waits, queries, synchronous copies and memsets,
// frees and context teardown. Any other call (an attribute, a library's
// query) leaves such an error for the next of these, so that it reaches a
// call programs check rather than one whose result they may ignore.
bool reports_async_errors(wire::Call::Reader call) {
  switch (call.which()) {
    case wire::Call::CTX_SYNCHRONIZE:
    case wire::Call::CTX_DESTROY:
    case wire::Call::PRIMARY_CTX_RESET:
    case wire::Call::STREAM_SYNCHRONIZE:
    case wire::Call::EVENT_SYNCHRONIZE:
    case wire::Call::EVENT_QUERY:
    case wire::Call::MEM_FREE:
    case wire::Call::MEMCPY_HTO_D:
    case wire::Call::MEMCPY_DTO_H:
    case wire::Call::MEMCPY_DTO_D:
    case wire::Call::MEMSET:
      return true;
    case wire::Call::INVOKE: {
      auto invoke = call.getInvoke();
      return invoke.getApi() == wire::Api::DRIVER &&
             ::rgpu::apigen::driver::reports_async_errors(invoke.getFunction());
    }
    default:
      return false;
  }
}

}  // namespace

SyncResult Client::finish_sync_locked(std::unique_lock<std::mutex>& lock, uint64_t id, transport::Bytes payload,
                                      OutBuffer out, uint64_t own_from) {
  // A sync call is the last of its batch; the server answers it because it asks.
  calls_.back().get().setWantsReply(true);
  const bool reports = reports_async_errors(calls_.back().get().asReader());
  connection_->expect_reply(id);
  const Status sent = send_batch_locked(payload, &lock);
  if (lock.owns_lock()) lock.unlock();
  std::optional<ArrivedReply> arrived =
      connection_->wait_reply(id, sent.is_ok() ? options_.poll_budget : std::chrono::microseconds(0));
  if (!arrived || !sent.is_ok()) return SyncResult{CUDA_ERROR_DEVICE_UNAVAILABLE};
  return read_reply(*arrived, id, out, own_from, reports);
}

SyncResult Client::read_reply(const ArrivedReply& arrived, uint64_t id, OutBuffer out, uint64_t own_from,
                              bool reports) {
  auto reply = arrived.reply();
  SyncResult result;
  result.api = reply.getApi() == wire::Api::NONE ? wire::Api::DRIVER : reply.getApi();
  result.code = reply.getResult();
  result.result = as_driver_result(result.api, result.code);
  for (auto v : reply.getValues()) result.values.push_back(v);
  result.need_image = reply.getNeedImage();
  if (result.code == 0 && reply.hasReason()) result.reason = reply.getReason().cStr();
  if (reply.hasMessage() && result.code != 0) {
    RGPU_DEBUG("call failed id=%llu api=%u result=%u detail=\"%s\"", static_cast<unsigned long long>(id),
               static_cast<unsigned>(result.api), result.code, reply.getMessage().cStr());
  }
  // Errors of earlier async calls surface here, at the next sync call.
  StickyError async_error;
  async_error.code = reply.getAsyncError();
  async_error.api = reply.getAsyncErrorApi() == wire::Api::NONE ? wire::Api::DRIVER : reply.getAsyncErrorApi();
  // The server's reasons, once each on stderr (reasons.h).
  if (result.code != 0 && reply.hasReason()) {
    auto why = reply.getReason();
    report_reason(options_.server, result.api, result.code, std::string_view(why.cStr(), why.size()));
  }
  if (async_error.code != 0 && reply.hasAsyncErrorReason()) {
    auto why = reply.getAsyncErrorReason();
    report_reason(options_.server, async_error.api, async_error.code, std::string_view(why.cStr(), why.size()));
  }
  if (async_error.code != 0 && own_from != 0 && reply.getAsyncErrorCall() >= own_from) {
    if (result.code == 0) {  // a piece of this very call
      result.api = async_error.api;
      result.code = async_error.code;
      result.result = as_driver_result(async_error.api, async_error.code);
    }
  } else if (async_error.code != 0) {
    std::lock_guard<std::mutex> lock(sticky_mu_);
    if (sticky_.code == 0) sticky_ = async_error;
  }

  if (result.code == 0 && out.data) {
    const transport::Message& message = arrived.message;
    if (reply.getPayloadBytes() > 0) {
      if (!message.payload || message.payload->size() != out.size || reply.getPayloadBytes() != out.size) {
        result.result = CUDA_ERROR_UNKNOWN;
      } else if (!message.payload->receive(out.data).is_ok()) {
        result.result = CUDA_ERROR_DEVICE_UNAVAILABLE;
      }
    } else {
      auto bytes = reply.getBytes();
      if (out.received ? bytes.size() > out.size : bytes.size() != out.size) {
        result.result = CUDA_ERROR_UNKNOWN;
      } else {
        std::memcpy(out.data, bytes.begin(), bytes.size());
        if (out.received) *out.received = bytes.size();
      }
    }
    if (result.result != CUDA_SUCCESS) {
      result.api = wire::Api::DRIVER;
      result.code = static_cast<uint32_t>(result.result);
    }
  }
  if (result.code == 0 && reports) {
    // A successful synchronizing call returns the oldest unreported async
    // error, once.
    std::lock_guard<std::mutex> lock(sticky_mu_);
    if (sticky_.code != 0) {
      result.api = sticky_.api;
      result.code = sticky_.code;
      result.result = as_driver_result(sticky_.api, sticky_.code);
      sticky_ = StickyError{};
    }
  }
  return result;
}

SyncResult Client::copy_in_pipelined(uint64_t ctx, uint64_t dst, const void* src, uint64_t size, uint64_t stream,
                                     uint64_t chunk) {
  const auto* bytes = static_cast<const std::byte*>(src);
  uint64_t first_id = 0;
  uint64_t offset = 0;
  auto add_piece = [&](bool last) {
    const uint64_t n = last ? size - offset : chunk;
    wire::Call::Builder call = add_call_locked(ctx);
    if (first_id == 0) first_id = call.getId();
    auto in = call.initMemcpyHtoD();
    in.setDst(dst + offset);
    in.setSize(n);
    in.setStream(stream);
    in.setAsync(!last);
    transport::Bytes payload(bytes + offset, n);
    if (n <= kInlineLimit) {
      in.setBytes(kj::arrayPtr(reinterpret_cast<const capnp::byte*>(payload.data()), n));
      payload = {};
    } else {
      call.setPayloadBytes(n);
    }
    return std::make_pair(call.getId(), payload);
  };
  for (; size - offset > chunk; offset += chunk) {
    std::unique_lock<std::mutex> lock(batch_mu_);
    if (connection_->failed()) return SyncResult{CUDA_ERROR_DEVICE_UNAVAILABLE};
    auto piece = add_piece(false);
    if (!send_batch_locked(piece.second, &lock).is_ok()) return SyncResult{CUDA_ERROR_DEVICE_UNAVAILABLE};
  }
  std::unique_lock<std::mutex> lock(batch_mu_);
  if (connection_->failed()) return SyncResult{CUDA_ERROR_DEVICE_UNAVAILABLE};
  auto last = add_piece(true);
  return finish_sync_locked(lock, last.first, last.second, {}, first_id);
}

SyncResult Client::copy_out_pipelined(uint64_t ctx, void* dst, uint64_t src, uint64_t size, uint64_t stream,
                                      uint64_t chunk) {
  auto* bytes = static_cast<std::byte*>(dst);
  uint64_t first_id;
  {
    std::lock_guard<std::mutex> lock(batch_mu_);
    first_id = next_id_;
  }
  uint64_t offset = 0;
  // The pieces come back as the device finishes each, while it copies the next.
  for (; size - offset > chunk; offset += chunk) copy_out_async(ctx, src + offset, bytes + offset, chunk, stream);
  const uint64_t n = size - offset;
  SyncResult result;
  {
    std::unique_lock<std::mutex> lock(batch_mu_);
    if (connection_->failed()) return SyncResult{CUDA_ERROR_DEVICE_UNAVAILABLE};
    wire::Call::Builder call = add_call_locked(ctx);
    auto out = call.initMemcpyDtoH();
    out.setSrc(src + offset);
    out.setSize(n);
    out.setStream(stream);
    const uint64_t id = call.getId();
    result = finish_sync_locked(lock, id, {}, OutBuffer{bytes + offset, n}, first_id);
  }
  // The stream has done every piece; their bytes may still be on the way.
  const bool legacy = stream == protocol::kNullStream || stream == protocol::kLegacyStream;
  const CUresult pieces = wait_copy_outs(legacy ? kAnyStream : stream);
  if (result.result == CUDA_SUCCESS && pieces != CUDA_SUCCESS) result = SyncResult{pieces};
  return result;
}

void Client::copy_out_async(uint64_t ctx, uint64_t src, void* dst, uint64_t size, uint64_t stream) {
  std::unique_lock<std::mutex> lock(batch_mu_);
  wire::Call::Builder call = add_call_locked(ctx);
  auto out = call.initMemcpyDtoH();
  out.setSrc(src);
  out.setSize(size);
  out.setStream(stream);
  out.setAsync(true);
  connection_->expect_copy_out(call.getId(), dst, size, stream);
  after_async_locked(lock);
}

CUresult Client::wait_copy_outs(uint64_t stream) { return connection_->wait_copy_outs(stream); }

bool Client::copy_outs_pending(uint64_t stream) { return connection_->copy_outs_pending(stream); }

void Client::wait_host_funcs(uint64_t stream) {
  {
    std::lock_guard<std::mutex> lock(host_mu_);
    if (host_pending_.empty()) return;
  }
  flush();  // the host functions run only once the server has them
  std::unique_lock<std::mutex> lock(host_mu_);
  // The callback thread notifies host_cv_ when a function returns; a lost
  // connection is noticed within a bounded wait (nothing notifies then).
  while (!(connection_->failed() || stop_callbacks_ ||
           (stream == kAnyStream ? host_pending_.empty() : host_pending_.count(stream) == 0))) {
    host_cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

void Client::host_func_async(uint64_t ctx, uint64_t stream, CUhostFn fn, void* data) {
  std::unique_lock<std::mutex> lock(batch_mu_);
  wire::Call::Builder call = add_call_locked(ctx);
  uint64_t id = call.getId();
  auto h = call.initLaunchHostFunc();
  h.setStream(stream);
  h.setId(id);
  {
    std::lock_guard<std::mutex> host(host_mu_);
    host_funcs_[id] = HostFunc{fn, data, stream};
    ++host_pending_[stream];
  }
  after_async_locked(lock);
}

SyncResult Client::graph_call(uint64_t ctx, protocol::GraphOp op, std::initializer_list<uint64_t> args) {
  return call_sync(ctx, [&](wire::Call::Builder c) {
    auto g = c.initGraph();
    g.setOp(static_cast<uint16_t>(op));
    auto list = g.initArgs(static_cast<unsigned>(args.size()));
    unsigned i = 0;
    for (uint64_t a : args) list.set(i++, a);
  });
}

CUresult Client::capture_host_step(uint64_t ctx, uint64_t stream, protocol::HostStepKind kind, CUhostFn fn,
                                   void* data, void* host, uint64_t device, size_t size, bool* recorded) {
  *recorded = false;
  // A copy's bytes travel in one message a step: a larger copy is recorded
  // as one step a piece, in order.
  const bool copy = kind != protocol::HostStepKind::kRun;
  size_t done = 0;
  do {
    const size_t piece = copy ? std::min<size_t>(size - done, protocol::kMaxHostStepBytes) : 0;
    uint64_t id;
    {
      std::lock_guard<std::mutex> lock(host_mu_);
      id = protocol::kHostStepIdBit | ++host_step_serial_;
      host_steps_[id] = HostStep{kind, fn, data, copy ? static_cast<std::byte*>(host) + done : nullptr, piece};
    }
    SyncResult r = graph_call(ctx, protocol::GraphOp::kCaptureHostStep,
                              {stream, id, static_cast<uint64_t>(kind), copy ? device + done : 0, piece});
    const bool step = r.result == CUDA_SUCCESS && !r.values.empty() && r.values[0] == 1;
    if (!step) {
      std::lock_guard<std::mutex> lock(host_mu_);
      host_steps_.erase(id);
    }
    if (r.result != CUDA_SUCCESS && done > 0) {
      // Part of the copy is in the capture: end it unusable, as a refused
      // call does (kRefuseIfCapturing invalidates a capturing stream).
      (void)graph_call(ctx, protocol::GraphOp::kRefuseIfCapturing, {stream});
    }
    // Not capturing: the caller does the work (only the first piece can
    // find that; a capture ended between pieces is the program's race).
    if (r.result != CUDA_SUCCESS || !step) return r.result;
    *recorded = true;
    done += piece;
  } while (done < size);
  return CUDA_SUCCESS;
}

void Client::settle_copy_outs_for_host_steps() {
  {
    std::lock_guard<std::mutex> lock(host_mu_);
    if (host_steps_.empty()) return;
  }
  if (!connection_->copy_outs_pending(kAnyStream)) return;
  flush();  // the copies must be on their way before they can land
  (void)connection_->wait_copy_outs(kAnyStream);
}

void Client::on_host_func_call(uint64_t id, std::vector<std::byte> bytes) {
  std::lock_guard<std::mutex> lock(host_mu_);
  host_ready_.push_back(HostReady{id, std::move(bytes)});
  host_cv_.notify_all();
}

std::vector<std::byte> Client::run_host_step(uint64_t id, const std::vector<std::byte>& bytes) {
  HostStep step;
  {
    std::lock_guard<std::mutex> lock(host_mu_);
    auto it = host_steps_.find(id);
    if (it == host_steps_.end()) return {};
    step = it->second;
  }
  switch (step.kind) {
    case protocol::HostStepKind::kRun:
      step.fn(step.data);
      return {};
    case protocol::HostStepKind::kCopyOut:
      if (bytes.size() == step.size) memcpy(step.host, bytes.data(), step.size);
      return {};
    case protocol::HostStepKind::kCopyIn: {
      const auto* at = static_cast<const std::byte*>(step.host);
      return std::vector<std::byte>(at, at + step.size);
    }
  }
  return {};
}

void Client::run_callbacks() {
  std::unique_lock<std::mutex> lock(host_mu_);
  for (;;) {
    host_cv_.wait(lock, [&] { return stop_callbacks_ || !host_ready_.empty(); });
    if (host_ready_.empty()) return;
    HostReady ready = std::move(host_ready_.front());
    host_ready_.pop_front();
    const uint64_t id = ready.id;
    std::vector<std::byte> answer;
    auto it = host_funcs_.find(id);
    if (it != host_funcs_.end()) {
      HostFunc f = it->second;
      host_funcs_.erase(it);
      lock.unlock();
      // The stream reached the host function, so the copies before it are
      // done on the device; their data may still be on its way here.
      connection_->wait_copy_outs_before(id, f.stream);
      f.fn(f.data);
      {
        std::lock_guard<std::mutex> relock(host_mu_);
        if (--host_pending_[f.stream] == 0) host_pending_.erase(f.stream);
      }
      host_cv_.notify_all();
    } else if (host_steps_.count(id)) {
      lock.unlock();
      answer = run_host_step(id, ready.bytes);
    } else {
      continue;
    }
    capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
    auto done = builder.initRoot<wire::Envelope>().initHostFuncDone();
    done.setId(id);
    if (!answer.empty()) done.setBytes(kj::arrayPtr(reinterpret_cast<const capnp::byte*>(answer.data()), answer.size()));
    auto words = protocol::encode(builder);
    (void)connection_->send(protocol::as_bytes(words));
    lock.lock();
  }
}

}  // namespace rgpu::shim
