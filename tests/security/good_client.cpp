// GoodClient: rgpu's own client (shim::Client) used as a program would.
#include "good_client.h"

#include <chrono>
#include <cstring>
#include <vector>

#include "client.h"
#include "kernels.h"
#include "raw_peer.h"
#include "rgpu/fatbin/fatbin.h"

namespace rgpu::security {

struct GoodClient::State {
  std::unique_ptr<shim::Client> client;
};

namespace {
constexpr uint64_t kCtx = protocol::primary_context(0);
const uint64_t kModule = M(2), kFill = F(3);
}  // namespace

GoodClient::GoodClient(std::string address, std::string tenant, std::string secret)
    : address_(std::move(address)),
      tenant_(std::move(tenant)),
      secret_(std::move(secret)),
      state_(std::make_unique<State>()) {}

GoodClient::~GoodClient() { stop(); }

void GoodClient::problem(bool wrong, const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  (wrong ? tally_.wrong : tally_.errors)++;
  if (tally_.first_problem.empty()) tally_.first_problem = what;
}

bool GoodClient::start() {
  shim::ClientOptions options;
  options.server = address_;
  options.tenant = tenant_;
  options.auth_token = secret_;
  auto c = shim::Client::connect(options);
  if (!c.is_ok()) {
    problem(false, "connect: " + c.status().to_string());
    return false;
  }
  state_->client = std::move(c.value());
  shim::Client& client = *state_->client;
  client.call_async(0, [](wire::Call::Builder call) {
    auto p = call.initPrimaryCtxRetain();
    p.setHandle(kCtx);
    p.setDevice(0);
  });
  const std::vector<uint8_t> image = kernels_image();
  const fatbin::ContentHash hash = fatbin::content_hash(fatbin::Bytes(image.data(), image.size()));
  auto load = client.call_sync(kCtx, [&](wire::Call::Builder call) {
    auto m = call.initModuleLoad();
    m.setHandle(kModule);
    m.setHash(kj::arrayPtr(hash.bytes.data(), hash.bytes.size()));
    m.setImage(kj::arrayPtr(image.data(), image.size()));
    m.setImageBytes(image.size());
  });
  if (load.result != CUDA_SUCCESS) {
    problem(false, "module load: " + std::to_string(load.result));
    return false;
  }
  client.call_async(kCtx, [](wire::Call::Builder call) {
    auto f = call.initModuleGetFunction();
    f.setModule(kModule);
    f.setHandle(kFill);
    f.setName("fill");
  });
  thread_ = std::thread([this] { run(); });
  return true;
}

void GoodClient::run() {
  shim::Client& client = *state_->client;
  for (uint64_t round = 0; !stop_.load(); ++round) {
    if (client.connection_failed()) {
      problem(false, "the connection failed");
      return;
    }
    // Sizes both inline (under 32 KiB) and as bulk payloads.
    const uint64_t words = 256u << (round % 6);  // 1 KiB .. 32 KiB, then bulk above
    const uint64_t size = words * 4 * (round % 7 == 6 ? 4 : 1);
    auto alloc = client.call_sync(kCtx, [&](wire::Call::Builder call) { call.setMemAlloc(size); });
    if (alloc.result != CUDA_SUCCESS || alloc.values.size() != 1) {
      problem(false, "alloc: " + std::to_string(alloc.result));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    const uint64_t ptr = alloc.values[0];
    std::vector<uint8_t> src(size), back(size, 0);
    for (uint64_t i = 0; i < size; ++i) src[i] = static_cast<uint8_t>(i * 31 + round);
    const bool inline_bytes = size <= shim::Client::kInlineLimit;
    auto put = client.call_sync(
        kCtx,
        [&](wire::Call::Builder call) {
          auto in = call.initMemcpyHtoD();
          in.setStream(protocol::kNullStream);
          in.setDst(ptr);
          in.setSize(size);
          if (inline_bytes) in.setBytes(kj::arrayPtr(src.data(), src.size()));
        },
        inline_bytes ? transport::Bytes() : transport::Bytes(reinterpret_cast<const std::byte*>(src.data()), size));
    auto get = client.call_sync(
        kCtx,
        [&](wire::Call::Builder call) {
          auto out = call.initMemcpyDtoH();
          out.setStream(protocol::kNullStream);
          out.setSrc(ptr);
          out.setSize(size);
        },
        {}, shim::OutBuffer{back.data(), size});
    if (put.result != CUDA_SUCCESS || get.result != CUDA_SUCCESS) {
      problem(false, "copy: " + std::to_string(put.result) + "/" + std::to_string(get.result));
    } else if (src != back) {
      problem(true, "round " + std::to_string(round) + ": bytes read back differ from those written");
    }
    if (round % 2 == 0) {  // the kernel writes p[i] = v + i
      const uint32_t n = static_cast<uint32_t>(words), v = static_cast<uint32_t>(round * 1000);
      const std::vector<uint8_t> params = fill_params(ptr, v, n);
      client.call_async(kCtx, [&](wire::Call::Builder call) {
        auto l = call.initLaunchKernel();
        l.setStream(protocol::kNullStream);
        l.setFunction(kFill);
        l.setGridX((n + 127) / 128), l.setGridY(1), l.setGridZ(1);
        l.setBlockX(128), l.setBlockY(1), l.setBlockZ(1);
        l.setParams(kj::arrayPtr(params.data(), params.size()));
      });
      std::vector<uint32_t> out(n, 0);
      auto r = client.call_sync(
          kCtx,
          [&](wire::Call::Builder call) {
            auto o = call.initMemcpyDtoH();
            o.setStream(protocol::kNullStream);
            o.setSrc(ptr);
            o.setSize(uint64_t{n} * 4);
          },
          {}, shim::OutBuffer{out.data(), uint64_t{n} * 4});
      if (r.result != CUDA_SUCCESS) {
        problem(false, "kernel read-back: " + std::to_string(r.result));
      } else {
        for (uint32_t i = 0; i < n; ++i) {
          if (out[i] != v + i) {
            problem(true, "round " + std::to_string(round) + ": kernel output differs at " + std::to_string(i));
            break;
          }
        }
      }
    }
    auto freed = client.call_sync(kCtx, [&](wire::Call::Builder call) { call.setMemFree(ptr); });
    if (freed.result != CUDA_SUCCESS) problem(false, "free: " + std::to_string(freed.result));
    rounds_.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // share the CPU with the attacks
  }
}

bool GoodClient::wait_rounds(uint64_t n, int limit_ms) {
  const uint64_t target = rounds_.load() + n;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms);
  while (rounds_.load() < target && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return rounds_.load() >= target;
}

GoodClient::Tally GoodClient::tally() {
  std::lock_guard<std::mutex> lock(mu_);
  Tally t = tally_;
  t.rounds = rounds_.load();
  return t;
}

GoodClient::Tally GoodClient::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  state_->client.reset();
  return tally();
}

}  // namespace rgpu::security
