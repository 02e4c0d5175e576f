// libFuzzer harness for a session's decode-and-dispatch path: messages
// (fuzz_input.h; tag bit 0: a payload came with the message) go to a real
// Session on rgpu's CPU device through Session::handle_for_fuzzing, exactly
// as the executor would run them, so the fuzzer reaches the driver
// (allocations, copies, module loads, launches), not only the decoder.
//
// Device pointers are the server's and differ from run to run, so inputs
// name them symbolically: any aligned 64-bit word of a header whose high
// half is 0xA110C0DE stands for the session's allocation number
// ((w >> 24) & 0xff), counted back from its latest (the pointers its memAlloc
// replies returned), plus the offset (w & 0xffffff). The seeds use these words; the fuzzer mutates
// their index and offset into every range, in bounds or not.
//
// A session is replaced when it has failed and every 256 inputs (its memory
// and handles are bounded by its limits anyway). Launches of more than 16
// blocks are skipped: the CPU device would run them correctly, but slowly.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

#include "fuzz_input.h"
#include "session.h"

namespace {

namespace server = rgpu::server;
namespace wire = rgpu::wire;
namespace transport = rgpu::transport;
using rgpu::security::fuzz::Record;

constexpr uint64_t kPointerTag = 0xA110C0DEull;

// A payload already in memory, as a small eager one is.
class Payload final : public transport::IncomingPayload {
 public:
  explicit Payload(std::vector<std::byte> bytes) : bytes_(std::move(bytes)) {}
  size_t size() const override { return bytes_.size(); }
  rgpu::Status receive(void* dst) override {
    if (!bytes_.empty()) std::memcpy(dst, bytes_.data(), bytes_.size());
    return rgpu::Status::ok();
  }

 private:
  std::vector<std::byte> bytes_;
};

// The session's peer: discards what it is sent, except that it notes the
// pointers of memAlloc replies and answers host-function calls at once (a
// client that never answered would hold their streams).
class Peer final : public transport::Connection {
 public:
  rgpu::Status send(transport::Bytes header, transport::Bytes) override {
    auto d = rgpu::protocol::decode(header);
    if (!d.is_ok()) return rgpu::Status::ok();
    auto e = d.value()->envelope();
    if (e.isReply() && e.getReply().getResult() == CUDA_SUCCESS && e.getReply().getValues().size() == 1) {
      std::lock_guard<std::mutex> lock(mu_);
      if (pointers_.size() < 256) pointers_.push_back(e.getReply().getValues()[0]);
    } else if (e.isHostFuncCall()) {
      capnp::MallocMessageBuilder b(rgpu::protocol::kSmallMessageWords);
      b.initRoot<wire::Envelope>().initHostFuncDone().setId(e.getHostFuncCall().getId());
      auto words = rgpu::protocol::encode(b);
      auto bytes = rgpu::protocol::as_bytes(words);
      std::lock_guard<std::mutex> lock(mu_);
      if (session_) session_->post(transport::Message{{bytes.begin(), bytes.end()}, nullptr});
    }
    return rgpu::Status::ok();
  }
  void close() override {}
  std::string peer() const override { return "fuzz"; }

  void attach(server::Session* s) {
    std::lock_guard<std::mutex> lock(mu_);
    session_ = s;
    pointers_.clear();
  }
  // Replaces the symbolic pointers in `header` (see the top of the file).
  void resolve(std::vector<std::byte>* header) {
    std::lock_guard<std::mutex> lock(mu_);
    if (pointers_.empty()) return;
    for (size_t at = 0; at + 8 <= header->size(); at += 8) {
      uint64_t w;
      std::memcpy(&w, header->data() + at, 8);
      if ((w >> 32) != kPointerTag) continue;
      w = pointers_[pointers_.size() - 1 - ((w >> 24) & 0xff) % pointers_.size()] + (w & 0xffffff);
      std::memcpy(header->data() + at, &w, 8);
    }
  }

 private:
  std::mutex mu_;
  server::Session* session_ = nullptr;
  std::vector<uint64_t> pointers_;
};

// Whether a message launches more blocks than the harness lets run.
bool too_many_blocks(const std::vector<std::byte>& header) {
  auto d = rgpu::protocol::decode(header);
  if (!d.is_ok()) return false;
  try {
    auto e = d.value()->envelope();
    if (!e.isBatch()) return false;
    for (auto box : e.getBatch().getCalls()) {
      auto call = box.getCall();
      if (!call.isLaunchKernel()) continue;
      auto l = call.getLaunchKernel();
      const unsigned __int128 blocks =
          static_cast<unsigned __int128>(l.getGridX()) * l.getGridY() * l.getGridZ();
      if (blocks > 16) return true;
    }
  } catch (const std::exception&) {
    return false;  // the session must refuse it by itself
  }
  return false;
}

struct World {
  std::shared_ptr<const server::DriverTable> driver;
  std::shared_ptr<const server::ServerInfo> info;
  std::shared_ptr<server::ModuleCache> modules;
  std::shared_ptr<Peer> peer;
  std::unique_ptr<server::Session> session;
  uint64_t inputs = 0, next_id = 1;

  void renew() {
    peer->attach(nullptr);
    session.reset();
    session = std::make_unique<server::Session>(next_id++, server::ClientIdentity{"fuzz", "fuzz", "fuzz", "fuzz", 1},
                                                driver, info, modules, peer);
    peer->attach(session.get());
  }
};

World* world = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("RGPU_CPU_DEVICE_MEMORY", "256M", 0);
  setenv("RGPU_CPU_KERNEL_TIMEOUT_MS", "2000", 0);
  setenv("RGPU_LOG_LEVEL", "error", 0);
  auto driver = server::DriverTable::load(RGPU_CPU_DEVICE_LIBRARY);
  if (!driver.is_ok()) {
    std::fprintf(stderr, "cannot load the CPU device: %s\n", driver.status().to_string().c_str());
    std::abort();
  }
  if (driver.value()->cuInit(0) != CUDA_SUCCESS) std::abort();
  auto info = std::make_shared<server::ServerInfo>();
  info->build = "fuzz";
  info->limits.max_handles = 64;
  info->limits.max_module_bytes = 1 << 20;
  info->limits.max_inflight_bytes = 64 << 20;
  auto modules = server::ModuleCache::open(server::ModuleCacheOptions{"", 16 << 20});
  if (!modules.is_ok()) std::abort();
  world = new World{driver.value(), std::move(info), std::move(modules.value()), std::make_shared<Peer>(), nullptr};
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!world->session || world->inputs++ % 256 == 0) world->renew();
  std::span<const uint8_t> in(data, size);
  Record r;
  for (int i = 0; i < 16 && rgpu::security::fuzz::next_record(&in, &r); ++i) {
    world->peer->resolve(&r.header);
    if (too_many_blocks(r.header)) break;
    transport::Message m{std::move(r.header), nullptr};
    if (r.has_payload()) m.payload = std::make_unique<Payload>(std::move(r.payload));
    if (!world->session->handle_for_fuzzing(std::move(m))) {
      world->renew();  // a failed session takes no more messages
      break;
    }
  }
  return 0;
}
