// Server: driver start-up, the listener and the session registry.
#include "rgpu/server/server.h"

#include <atomic>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "rgpu/common/log.h"
#include "rgpu/common/thread_set.h"
#include "session.h"

namespace rgpu::server {
namespace {

Result<std::shared_ptr<const ServerInfo>> query_devices(const DriverTable& cu, const ServerOptions& options) {
  CUresult r = cu.cuInit(0);
  if (r != CUDA_SUCCESS) return failed("cuInit failed with " + std::to_string(r) + " in " + cu.path);
  auto info = std::make_shared<ServerInfo>();
  info->build = RGPU_VERSION_STRING;
  info->auth_token = options.auth_token;
  cu.cuDriverGetVersion(&info->driver_version);
  int count = 0;
  if ((r = cu.cuDeviceGetCount(&count)) != CUDA_SUCCESS) return failed("cuDeviceGetCount failed");
  if (count == 0) return failed("the driver in " + cu.path + " reports no devices");
  for (int i = 0; i < count; ++i) {
    CUdevice dev;
    if (cu.cuDeviceGet(&dev, i) != CUDA_SUCCESS) return failed("cuDeviceGet failed for device " + std::to_string(i));
    ServerInfo::Device d;
    char name[256] = {};
    cu.cuDeviceGetName(name, sizeof name - 1, dev);
    d.name = name;
    cu.cuDeviceGetUuid(&d.uuid, dev);
    size_t total = 0;
    cu.cuDeviceTotalMem(&total, dev);
    d.total_mem = total;
    d.attributes.assign(CU_DEVICE_ATTRIBUTE_MAX, 0);
    d.attribute_missing.assign(CU_DEVICE_ATTRIBUTE_MAX, true);
    for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; ++a) {
      int v = 0;
      if (cu.cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(a), dev) == CUDA_SUCCESS) {
        d.attributes[a] = v;
        d.attribute_missing[a] = false;
      }
    }
    RGPU_INFO("device index=%d name=\"%s\" memory=%zu", i, d.name.c_str(), total);
    info->devices.push_back(std::move(d));
  }
  return std::shared_ptr<const ServerInfo>(std::move(info));
}

class ServerImpl final : public Server {
 public:
  ServerImpl(std::shared_ptr<const DriverTable> driver, std::shared_ptr<const ServerInfo> info,
             std::shared_ptr<transport::Transport> transport, std::shared_ptr<ModuleCache> module_cache)
      : driver_(std::move(driver)),
        info_(std::move(info)),
        transport_(std::move(transport)),
        module_cache_(std::move(module_cache)) {}

  ~ServerImpl() override {
    listener_.reset();
    std::unordered_map<uint64_t, std::shared_ptr<Session>> sessions;
    {
      std::lock_guard<std::mutex> lock(mu_);
      sessions.swap(sessions_);
    }
    for (auto& [id, s] : sessions) s->close();
    sessions.clear();
    // Connections go with the transport; no more callbacks after this.
    transport_.reset();
    reapers_.join_all();
  }

  Status listen(const std::string& address) {
    auto listener = transport_->listen(address, [this](std::shared_ptr<transport::Connection> c) {
      return accept(std::move(c));
    });
    if (!listener.is_ok()) return listener.status();
    listener_ = std::move(listener.value());
    return Status::ok();
  }

  std::string address() const override { return listener_ ? listener_->address() : ""; }
  size_t session_count() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return sessions_.size();
  }

 private:
  transport::ConnectionHandler accept(std::shared_ptr<transport::Connection> connection) {
    uint64_t id = next_id_.fetch_add(1);
    RGPU_INFO("session open id=%llu peer=%s", static_cast<unsigned long long>(id), connection->peer().c_str());
    auto session = std::make_shared<Session>(id, driver_, info_, module_cache_, connection);
    {
      std::lock_guard<std::mutex> lock(mu_);
      sessions_[id] = session;
    }
    std::weak_ptr<Session> weak = session;
    transport::ConnectionHandler handler;
    handler.on_message = [weak](transport::Connection&, transport::Message message) {
      if (auto s = weak.lock()) s->post(std::move(message));
    };
    handler.on_closed = [this, id](transport::Connection&, const Status& why) { end_session(id, why); };
    return handler;
  }

  // Tears a session down off the transport's thread: freeing a session waits
  // for its device work.
  void end_session(uint64_t id, const Status& why) {
    std::shared_ptr<Session> session;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    session = std::move(it->second);
    sessions_.erase(it);
    RGPU_INFO("session ending id=%llu reason=\"%s\"", static_cast<unsigned long long>(id), why.to_string().c_str());
    session->close();
    reapers_.spawn([s = std::move(session)]() mutable {
      // Let any in-flight callback drop its temporary reference first.
      for (int i = 0; i < 5000 && s.use_count() > 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      s.reset();
    });
  }

  const std::shared_ptr<const DriverTable> driver_;
  const std::shared_ptr<const ServerInfo> info_;
  std::shared_ptr<transport::Transport> transport_;
  const std::shared_ptr<ModuleCache> module_cache_;
  std::unique_ptr<transport::Listener> listener_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Session>> sessions_;
  ThreadSet reapers_;
  std::atomic<uint64_t> next_id_{1};
};

}  // namespace

Result<std::unique_ptr<Server>> Server::start(std::shared_ptr<const DriverTable> driver,
                                              std::shared_ptr<transport::Transport> transport,
                                              const ServerOptions& options) {
  auto modules = ModuleCache::open(ModuleCacheOptions{options.module_cache_dir, options.module_cache_memory});
  if (!modules.is_ok()) return modules.status();
  if (!options.module_cache_dir.empty()) {
    RGPU_INFO("module cache dir=%s memory_limit=%llu", options.module_cache_dir.c_str(),
              static_cast<unsigned long long>(options.module_cache_memory));
  }
  auto info = query_devices(*driver, options);
  if (!info.is_ok()) return info.status();
  auto server = std::make_unique<ServerImpl>(std::move(driver), std::move(info.value()), std::move(transport),
                                             std::move(modules.value()));
  if (Status s = server->listen(options.listen); !s.is_ok()) return s;
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace rgpu::server
