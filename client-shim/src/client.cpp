// Client: the session with rgpud.
#include "client.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rgpu/common/log.h"
#include "rgpu/protocol/handles.h"
#include "rgpu/protocol/auth.h"

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

}  // namespace

Result<std::unique_ptr<Client>> Client::connect(const ClientOptions& options,
                                                std::shared_ptr<transport::Transport> transport) {
  std::unique_ptr<Client> client(new Client());
  client->options_ = options;
  if (uint64_t us; env_number("RGPU_POLL_US", 1000000, &us)) client->options_.poll_budget = std::chrono::microseconds(us);
  if (uint64_t bytes; env_number("RGPU_PIPELINE_CHUNK", uint64_t{1} << 40, &bytes)) {
    client->options_.pipeline_chunk = bytes;
    client->pipeline_chunk_from_env_ = true;
  }
  if (!transport) {
    transport::UcxOptions ucx_options;
    // Callers poll for their own replies, so the progress thread sleeps as
    // soon as it is idle instead of competing with them for the CPU.
    if (client->options_.poll_budget.count() > 0) ucx_options.idle_spin = std::chrono::microseconds(0);
    auto ucx = transport::make_ucx_transport(ucx_options);
    if (!ucx.is_ok()) return ucx.status();
    transport = std::move(ucx.value());
  }
  client->transport_ = std::move(transport);
  transport::ConnectionHandler handler;
  Client* self = client.get();
  handler.on_message = [self](transport::Connection&, transport::Message m) { self->on_message(std::move(m)); };
  handler.on_closed = [self](transport::Connection&, const Status& why) { self->on_closed(why); };
  auto connection = client->transport_->connect(options.server, std::move(handler), options.connect_timeout);
  if (!connection.is_ok()) {
    return disconnected("cannot reach rgpud at " + options.server + ": " + connection.status().message());
  }
  client->connection_ = std::move(connection.value());
  if (Status s = client->handshake(options); !s.is_ok()) return s;
  client->host_memory_ = std::make_unique<HostMemory>(client->connection_);
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
  closing_ = true;
  host_memory_.reset();
  if (connection_) connection_->close();
  connection_.reset();
  transport_.reset();
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

Status Client::handshake(const ClientOptions& options) {
  namespace auth = protocol::auth;
  auto client_nonce = auth::random_nonce();
  if (!client_nonce.is_ok()) return client_nonce.status();
  const std::string tenant = options.tenant.empty() ? auth::kDefaultTenant : options.tenant;
  {
    capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
    auto hello = builder.initRoot<wire::Envelope>().initHello();
    hello.setProtocolVersion(wire::PROTOCOL_VERSION);
    hello.setClientBuild(RGPU_VERSION_STRING);
    hello.setPid(static_cast<uint32_t>(getpid()));
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    hello.setHostname(host);
    hello.setProgram(program_name());
    hello.setTenant(tenant);
    hello.setClientNonce(kj::arrayPtr(client_nonce.value().data(), client_nonce.value().size()));
    auto words = protocol::encode(builder);
    if (Status s = connection_->send(protocol::as_bytes(words)); !s.is_ok()) return s;
  }
  const std::string where = "rgpud at " + options.server;
  const auto deadline = std::chrono::steady_clock::now() + options.connect_timeout;
  auth::Nonce server_nonce{};
  bool challenged = false;
  for (;;) {
    std::unique_ptr<protocol::Decoded> decoded;
    {
      std::unique_lock<std::mutex> lock(replies_mu_);
      if (!replies_cv_.wait_until(lock, deadline, [&] { return handshake_ready_ || failed_.load(); }) ||
          !handshake_ready_) {
        return disconnected(where + " did not answer the handshake");
      }
      handshake_ready_ = false;
      decoded = std::move(handshake_decoded_);
    }
    auto envelope = decoded->envelope();
    if (envelope.isChallenge()) {
      auto nonce = envelope.getChallenge().getServerNonce();
      if (challenged || nonce.size() != server_nonce.size()) return rgpu::failed(where + " sent a malformed challenge");
      if (options.auth_token.empty()) {
        return rgpu::failed(where + " requires authentication: set RGPU_AUTH_TOKEN or RGPU_AUTH_TOKEN_FILE (and "
                                    "RGPU_TENANT when the key is not the default tenant's)");
      }
      challenged = true;
      std::memcpy(server_nonce.data(), nonce.begin(), server_nonce.size());
      const auth::Proof proof = auth::client_proof(options.auth_token, tenant, client_nonce.value(), server_nonce);
      capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
      builder.initRoot<wire::Envelope>().initAuthenticate().setProof(kj::arrayPtr(proof.data(), proof.size()));
      auto words = protocol::encode(builder);
      if (Status s = connection_->send(protocol::as_bytes(words)); !s.is_ok()) return s;
      continue;
    }
    auto welcome = envelope.getWelcome();
    if (!welcome.getAccepted()) {
      return rgpu::failed(where + " refused the session: " + welcome.getRefusal().cStr());
    }
    if (!options.auth_token.empty()) {
      // A client that holds a key talks only to a server that proves it
      // holds the key too: anyone can listen on an address and say welcome.
      const auth::Proof expected = auth::server_proof(options.auth_token, tenant, client_nonce.value(), server_nonce);
      auto proof = welcome.getServerProof();
      if (!challenged || !auth::equal_constant_time(std::span<const uint8_t>(proof.begin(), proof.size()), expected)) {
        return rgpu::failed(where + " did not prove that it holds the key (wrong server, or one without "
                                    "authentication); refusing to use it");
      }
    }
    driver_version_ = welcome.getDriverVersion();
    if (!pipeline_chunk_from_env_) options_.pipeline_chunk = welcome.getCopyPipelineChunk();
    for (auto d : welcome.getDevices()) {
      DeviceInfo info;
      info.name = d.getName();
      auto uuid = d.getUuid();
      std::memcpy(info.uuid.bytes, uuid.begin(), std::min<size_t>(uuid.size(), sizeof info.uuid.bytes));
      info.total_mem = d.getTotalMem();
      for (auto a : d.getAttributes()) info.attributes.push_back(a);
      for (auto m : d.getAttributeMissing()) info.attribute_missing.push_back(m);
      devices_.push_back(std::move(info));
    }
    break;
  }
  {
    std::lock_guard<std::mutex> lock(replies_mu_);
    handshake_message_ = {};
  }
  RGPU_INFO("connected server=%s tenant=%s devices=%zu", options.server.c_str(), tenant.c_str(), devices_.size());
  return Status::ok();
}

wire::Call::Builder Client::add_call_locked(uint64_t ctx) {
  if (!builder_) builder_ = std::make_unique<capnp::MallocMessageBuilder>(protocol::kSmallMessageWords);
  auto orphan = builder_->getOrphanage().newOrphan<wire::Call>();
  wire::Call::Builder call = orphan.get();
  call.setId(next_id_++);
  call.setCtx(ctx);
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
  Status s = lock == nullptr || payload.empty()
                 ? connection_->send(protocol::as_bytes(words), payload)
                 : connection_->send_then(protocol::as_bytes(words), payload, [lock] { lock->unlock(); });
  if (!s.is_ok()) on_closed(s);
  return s;
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

SyncResult Client::finish_sync_locked(std::unique_lock<std::mutex>& lock, uint64_t id, transport::Bytes payload,
                                      OutBuffer out, uint64_t own_from) {
  Waiter waiter;
  {
    std::lock_guard<std::mutex> r(replies_mu_);
    waiters_[id] = &waiter;
  }
  Status sent = send_batch_locked(payload, &lock);
  if (lock.owns_lock()) lock.unlock();

  if (sent.is_ok() && options_.poll_budget.count() > 0) {
    // Poll for the reply on this thread; its handler runs here too.
    connection_->poll_until(
        [&] {
          std::lock_guard<std::mutex> r(replies_mu_);
          return waiter.done || failed_.load();
        },
        options_.poll_budget);
  }
  std::unique_lock<std::mutex> r(replies_mu_);
  replies_cv_.wait(r, [&] { return waiter.done || failed_.load(); });
  waiters_.erase(id);
  if (!waiter.done || !sent.is_ok()) return SyncResult{CUDA_ERROR_DEVICE_UNAVAILABLE};

  auto reply = waiter.decoded->envelope().getReply();
  SyncResult result;
  result.result = static_cast<CUresult>(reply.getResult());
  for (auto v : reply.getValues()) result.values.push_back(v);
  result.elapsed_ms = reply.getElapsedMs();
  result.need_image = reply.getNeedImage();
  if (reply.hasMessage() && result.result != CUDA_SUCCESS) {
    RGPU_DEBUG("call failed id=%llu result=%d detail=\"%s\"", static_cast<unsigned long long>(id), result.result,
               reply.getMessage().cStr());
  }
  // Errors of earlier async calls surface here, at the next sync call.
  auto async_error = static_cast<CUresult>(reply.getAsyncError());
  if (async_error != CUDA_SUCCESS && own_from != 0 && reply.getAsyncErrorCall() >= own_from) {
    if (result.result == CUDA_SUCCESS) result.result = async_error;  // a piece of this very call
  } else if (async_error != CUDA_SUCCESS && sticky_async_error_ == CUDA_SUCCESS) {
    sticky_async_error_ = async_error;
  }
  r.unlock();

  if (result.result == CUDA_SUCCESS && out.data) {
    if (reply.getPayloadBytes() > 0) {
      if (!waiter.message.payload || waiter.message.payload->size() != out.size ||
          reply.getPayloadBytes() != out.size) {
        result.result = CUDA_ERROR_UNKNOWN;
      } else if (!waiter.message.payload->receive(out.data).is_ok()) {
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
  }
  r.lock();
  if (sticky_async_error_ != CUDA_SUCCESS && result.result == CUDA_SUCCESS) {
    result.result = sticky_async_error_;
    sticky_async_error_ = CUDA_SUCCESS;
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
    if (failed_.load()) return SyncResult{CUDA_ERROR_DEVICE_UNAVAILABLE};
    auto piece = add_piece(false);
    if (!send_batch_locked(piece.second, &lock).is_ok()) return SyncResult{CUDA_ERROR_DEVICE_UNAVAILABLE};
  }
  std::unique_lock<std::mutex> lock(batch_mu_);
  if (failed_.load()) return SyncResult{CUDA_ERROR_DEVICE_UNAVAILABLE};
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
    if (failed_.load()) return SyncResult{CUDA_ERROR_DEVICE_UNAVAILABLE};
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
  if (result.result == CUDA_SUCCESS) result.result = pieces;
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
  {
    std::lock_guard<std::mutex> r(replies_mu_);
    copy_outs_[call.getId()] = CopyOut{dst, size, stream};
  }
  after_async_locked(lock);
}

CUresult Client::wait_copy_outs(uint64_t stream) {
  std::unique_lock<std::mutex> r(replies_mu_);
  uint64_t horizon = copy_outs_.empty() ? 0 : copy_outs_.rbegin()->first;
  auto pending = [&] {
    for (auto& [id, c] : copy_outs_) {
      if (id > horizon) break;
      if (!c.done && (stream == kAnyStream || c.stream == stream)) return true;
    }
    return false;
  };
  replies_cv_.wait(r, [&] { return !pending() || failed_.load(); });
  CUresult first = failed_.load() && pending() ? CUDA_ERROR_DEVICE_UNAVAILABLE : CUDA_SUCCESS;
  for (auto it = copy_outs_.begin(); it != copy_outs_.end();) {
    if (it->second.done) {
      if (first == CUDA_SUCCESS) first = it->second.result;
      it = copy_outs_.erase(it);
    } else {
      ++it;
    }
  }
  return first;
}

void Client::wait_host_funcs(uint64_t stream) {
  {
    std::lock_guard<std::mutex> lock(host_mu_);
    if (host_pending_.empty()) return;
  }
  flush();  // the host functions run only once the server has them
  std::unique_lock<std::mutex> lock(host_mu_);
  host_cv_.wait(lock, [&] {
    if (failed_.load() || stop_callbacks_) return true;
    return stream == kAnyStream ? host_pending_.empty() : host_pending_.count(stream) == 0;
  });
}

void Client::wait_copy_outs_before(uint64_t id, uint64_t stream) {
  const bool legacy = stream == protocol::kNullStream || stream == protocol::kLegacyStream;
  std::unique_lock<std::mutex> r(replies_mu_);
  replies_cv_.wait(r, [&] {
    if (failed_.load()) return true;
    for (auto& [cid, c] : copy_outs_) {
      if (cid >= id) break;
      if (!c.done && (legacy || c.stream == stream)) return false;
    }
    return true;
  });
}

bool Client::copy_outs_pending(uint64_t stream) {
  std::lock_guard<std::mutex> r(replies_mu_);
  for (auto& [id, c] : copy_outs_) {
    if (!c.done && (stream == kAnyStream || c.stream == stream)) return true;
  }
  return false;
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

void Client::run_callbacks() {
  std::unique_lock<std::mutex> lock(host_mu_);
  for (;;) {
    host_cv_.wait(lock, [&] { return stop_callbacks_ || !host_ready_.empty(); });
    if (host_ready_.empty()) return;
    uint64_t id = host_ready_.front();
    host_ready_.pop_front();
    auto it = host_funcs_.find(id);
    if (it == host_funcs_.end()) continue;
    HostFunc f = it->second;
    host_funcs_.erase(it);
    lock.unlock();
    // The stream reached the host function, so the copies before it are done
    // on the device; their data may still be on its way here.
    wait_copy_outs_before(id, f.stream);
    f.fn(f.data);
    {
      std::lock_guard<std::mutex> relock(host_mu_);
      if (--host_pending_[f.stream] == 0) host_pending_.erase(f.stream);
    }
    host_cv_.notify_all();
    capnp::MallocMessageBuilder builder(protocol::kSmallMessageWords);
    builder.initRoot<wire::Envelope>().initHostFuncDone().setId(id);
    auto words = protocol::encode(builder);
    (void)connection_->send(protocol::as_bytes(words));
    lock.lock();
  }
}

void Client::on_message(transport::Message message) {
  auto decoded = protocol::decode(message.header);
  if (!decoded.is_ok()) {
    RGPU_WARN("dropping malformed message from server");
    return;
  }
  auto envelope = decoded.value()->envelope();
  switch (envelope.which()) {
    case wire::Envelope::WELCOME:
    case wire::Envelope::CHALLENGE: {
      std::lock_guard<std::mutex> lock(replies_mu_);
      handshake_message_ = std::move(message);  // the decoded reader points into its bytes
      handshake_decoded_ = std::move(decoded.value());
      handshake_ready_ = true;
      replies_cv_.notify_all();
      return;
    }
    case wire::Envelope::REPLY: {
      uint64_t id = envelope.getReply().getId();
      std::lock_guard<std::mutex> lock(replies_mu_);
      auto it = waiters_.find(id);
      if (it == waiters_.end()) {
        RGPU_WARN("reply for unknown call id=%llu", static_cast<unsigned long long>(id));
        return;
      }
      it->second->message = std::move(message);  // the header's bytes do not move
      it->second->decoded = std::move(decoded.value());
      it->second->done = true;
      replies_cv_.notify_all();
      return;
    }
    case wire::Envelope::COPY_DONE: {
      auto done = envelope.getCopyDone();
      CopyOut target{};
      {
        std::lock_guard<std::mutex> lock(replies_mu_);
        auto it = copy_outs_.find(done.getId());
        if (it == copy_outs_.end()) return;
        target = it->second;
      }
      CUresult result = static_cast<CUresult>(done.getResult());
      if (result == CUDA_SUCCESS) {
        if (done.getPayloadBytes() > 0 && message.payload && message.payload->size() == target.size) {
          if (!message.payload->receive(target.dst).is_ok()) result = CUDA_ERROR_DEVICE_UNAVAILABLE;
        } else if (done.getBytes().size() == target.size) {
          std::memcpy(target.dst, done.getBytes().begin(), target.size);
        } else if (target.size != 0) {
          result = CUDA_ERROR_UNKNOWN;
        }
      }
      std::lock_guard<std::mutex> lock(replies_mu_);
      auto it = copy_outs_.find(done.getId());
      if (it != copy_outs_.end()) {
        it->second.done = true;
        it->second.result = result;
      }
      replies_cv_.notify_all();
      return;
    }
    case wire::Envelope::DEVICE_OUTPUT: {
      // Through stdio, so it keeps its place among the program's own output.
      auto text = envelope.getDeviceOutput();
      std::fwrite(text.begin(), 1, text.size(), stdout);
      std::fflush(stdout);
      return;
    }
    case wire::Envelope::HOST_FUNC_CALL: {
      std::lock_guard<std::mutex> lock(host_mu_);
      host_ready_.push_back(envelope.getHostFuncCall().getId());
      host_cv_.notify_all();
      return;
    }
    default:
      RGPU_WARN("unexpected message from server kind=%d", static_cast<int>(envelope.which()));
  }
}

void Client::on_closed(const Status& why) {
  if (failed_.exchange(true) || closing_.load()) return;
  RGPU_ERROR("connection to rgpud lost server=%s reason=\"%s\"", options_.server.c_str(), why.to_string().c_str());
  std::lock_guard<std::mutex> lock(replies_mu_);
  replies_cv_.notify_all();
}

}  // namespace rgpu::shim
