// Driver: device creation, handle tables, context lifetime.
#include "driver.h"

#include "rgpu/common/log.h"

namespace rgpu::cpudev {

Result<std::unique_ptr<Driver>> Driver::create(const Config& config) {
  std::unique_ptr<Driver> d(new Driver(config));
  for (int i = 0; i < config.devices; ++i) {
    auto mem = DeviceMemory::create(config.memory_bytes);
    if (!mem) return mem.status();
    auto dev = std::make_unique<Device>();
    dev->ordinal = i;
    dev->name = "rgpu CPU device " + std::to_string(i);
    const char tag[] = "rgpu-cpu-dev";
    for (int k = 0; k < 12; ++k) dev->uuid[k] = static_cast<unsigned char>(tag[k]);
    dev->uuid[12] = static_cast<unsigned char>(i >> 24);
    dev->uuid[13] = static_cast<unsigned char>(i >> 16);
    dev->uuid[14] = static_cast<unsigned char>(i >> 8);
    dev->uuid[15] = static_cast<unsigned char>(i);
    dev->memory = std::move(mem.value());
    dev->primary_handle = d->new_handle();
    d->devices_.push_back(std::move(dev));
  }
  RGPU_INFO("cpudev init devices=%d memory_bytes=%llu threads=%d stream_workers=%d", config.devices,
            static_cast<unsigned long long>(config.memory_bytes), config.threads, config.stream_workers);
  return d;
}

Driver::~Driver() {
  std::vector<std::shared_ptr<Context>> all;
  {
    std::lock_guard lock(mu_);
    for (auto& [h, c] : contexts_) all.push_back(c);
    contexts_.clear();
    streams_.clear();
    events_.clear();
  }
  for (auto& c : all) c->shutdown();
  std::lock_guard lock(mu_);
  functions_.clear();
  modules_.clear();  // frees module variables while the devices still exist
}

Device* Driver::device(int ordinal) {
  if (ordinal < 0 || ordinal >= device_count()) return nullptr;
  return devices_[static_cast<size_t>(ordinal)].get();
}

Device* Driver::device_of(uint64_t addr) {
  for (auto& d : devices_) {
    if (d->memory->in_range(addr)) return d.get();
  }
  return nullptr;
}

std::shared_ptr<Context> Driver::create_context(int device, unsigned flags) {
  auto ctx = std::make_shared<Context>(scheduler_.get(), new_handle(), device, flags, false);
  std::lock_guard lock(mu_);
  contexts_[ctx->handle()] = ctx;
  return ctx;
}

std::shared_ptr<Context> Driver::context(uint64_t handle) {
  std::lock_guard lock(mu_);
  auto it = contexts_.find(handle);
  return it == contexts_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<Context>> Driver::contexts_of(int device) {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<Context>> out;
  for (auto& [h, c] : contexts_) {
    if (c->device() == device) out.push_back(c);
  }
  return out;
}

std::shared_ptr<Context> Driver::unregister_locked(uint64_t handle) {
  auto it = contexts_.find(handle);
  if (it == contexts_.end()) return nullptr;
  auto ctx = it->second;
  contexts_.erase(it);
  for (auto s = streams_.begin(); s != streams_.end();) {
    s = s->second->context() == handle ? streams_.erase(s) : std::next(s);
  }
  for (auto e = events_.begin(); e != events_.end();) {
    e = e->second->context() == handle ? events_.erase(e) : std::next(e);
  }
  for (auto m = modules_.begin(); m != modules_.end();) {
    if (m->second->context() != handle) {
      ++m;
      continue;
    }
    uint64_t mh = m->first;
    for (auto f = functions_.begin(); f != functions_.end();) {
      f = f->second->module_handle() == mh ? functions_.erase(f) : std::next(f);
    }
    m = modules_.erase(m);
  }
  return ctx;
}

void Driver::teardown(const std::shared_ptr<Context>& ctx) {
  ctx->shutdown();
  size_t freed = devices_[static_cast<size_t>(ctx->device())]->memory->release_owner(ctx->handle());
  devices_[static_cast<size_t>(ctx->device())]->memory->release_virtual_owner(ctx->handle());
  RGPU_DEBUG("cpudev context destroyed ctx=0x%llx allocations_freed=%zu",
             static_cast<unsigned long long>(ctx->handle()), freed);
}

CUresult Driver::destroy_context(uint64_t handle) {
  std::shared_ptr<Context> ctx;
  {
    std::lock_guard lock(mu_);
    auto it = contexts_.find(handle);
    if (it == contexts_.end() || it->second->primary()) return CUDA_ERROR_INVALID_CONTEXT;
    ctx = unregister_locked(handle);
  }
  teardown(ctx);
  return CUDA_SUCCESS;
}

CUresult Driver::primary_retain(int device, uint64_t* handle) {
  Device* dev = this->device(device);
  if (!dev) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(mu_);
  if (dev->primary_refs == 0) {
    contexts_[dev->primary_handle] =
        std::make_shared<Context>(scheduler_.get(), dev->primary_handle, device, dev->primary_flags, true);
  }
  ++dev->primary_refs;
  *handle = dev->primary_handle;
  return CUDA_SUCCESS;
}

CUresult Driver::primary_release(int device) {
  Device* dev = this->device(device);
  if (!dev) return CUDA_ERROR_INVALID_DEVICE;
  std::shared_ptr<Context> ctx;
  {
    std::lock_guard lock(mu_);
    if (dev->primary_refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (--dev->primary_refs > 0) return CUDA_SUCCESS;
    ctx = unregister_locked(dev->primary_handle);
  }
  if (ctx) teardown(ctx);
  return CUDA_SUCCESS;
}

CUresult Driver::primary_reset(int device) {
  Device* dev = this->device(device);
  if (!dev) return CUDA_ERROR_INVALID_DEVICE;
  std::shared_ptr<Context> old;
  {
    std::lock_guard lock(mu_);
    old = unregister_locked(dev->primary_handle);
    // Retained references stay valid and name a fresh, empty context.
    if (dev->primary_refs > 0) {
      contexts_[dev->primary_handle] =
          std::make_shared<Context>(scheduler_.get(), dev->primary_handle, device, dev->primary_flags, true);
    }
  }
  if (old) teardown(old);
  return CUDA_SUCCESS;
}

CUresult Driver::primary_set_flags(int device, unsigned flags) {
  Device* dev = this->device(device);
  if (!dev) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(mu_);
  dev->primary_flags = flags;
  return CUDA_SUCCESS;
}

CUresult Driver::primary_state(int device, unsigned* flags, int* active) {
  Device* dev = this->device(device);
  if (!dev) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(mu_);
  *flags = dev->primary_flags;
  *active = dev->primary_refs > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

std::shared_ptr<Stream> Driver::create_stream(const std::shared_ptr<Context>& ctx, unsigned flags, int priority) {
  uint64_t h = new_handle();
  auto s = ctx->create_stream(h, flags, priority);
  if (!s) return nullptr;
  std::lock_guard lock(mu_);
  if (!contexts_.count(ctx->handle())) {  // destroyed meanwhile
    ctx->retire_stream(h);
    return nullptr;
  }
  streams_[h] = s;
  return s;
}

std::shared_ptr<Stream> Driver::stream(uint64_t handle) {
  std::lock_guard lock(mu_);
  auto it = streams_.find(handle);
  return it == streams_.end() ? nullptr : it->second;
}

CUresult Driver::destroy_stream(uint64_t handle) {
  std::shared_ptr<Stream> s;
  std::shared_ptr<Context> ctx;
  {
    std::lock_guard lock(mu_);
    auto it = streams_.find(handle);
    if (it == streams_.end()) return CUDA_ERROR_INVALID_HANDLE;
    s = it->second;
    streams_.erase(it);
    auto c = contexts_.find(s->context());
    if (c != contexts_.end()) ctx = c->second;
  }
  if (ctx) ctx->retire_stream(handle);
  return CUDA_SUCCESS;
}

std::shared_ptr<Event> Driver::create_event(const std::shared_ptr<Context>& ctx, unsigned flags) {
  auto e = std::make_shared<Event>(new_handle(), ctx->handle(), flags);
  std::lock_guard lock(mu_);
  if (!contexts_.count(ctx->handle())) return nullptr;
  events_[e->handle()] = e;
  return e;
}

std::shared_ptr<Event> Driver::event(uint64_t handle) {
  std::lock_guard lock(mu_);
  auto it = events_.find(handle);
  return it == events_.end() ? nullptr : it->second;
}

CUresult Driver::destroy_event(uint64_t handle) {
  std::lock_guard lock(mu_);
  return events_.erase(handle) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult Driver::load_module(const std::shared_ptr<Context>& ctx, const void* image, std::shared_ptr<Module>* out) {
  Device* dev = device(ctx->device());
  std::shared_ptr<Module> m;
  CUresult r = Module::load(image, new_handle(), ctx->handle(), ctx->device(), ctx->memory_group(), dev->memory.get(),
                            &programs_, &m);
  if (r != CUDA_SUCCESS) return r;
  std::lock_guard lock(mu_);
  if (!contexts_.count(ctx->handle())) return CUDA_ERROR_INVALID_CONTEXT;
  modules_[m->handle()] = m;
  *out = std::move(m);
  return CUDA_SUCCESS;
}

std::shared_ptr<Module> Driver::module(uint64_t handle) {
  std::lock_guard lock(mu_);
  auto it = modules_.find(handle);
  return it == modules_.end() ? nullptr : it->second;
}

CUresult Driver::unload_module(uint64_t handle) {
  std::shared_ptr<Module> m;  // released outside the lock
  std::lock_guard lock(mu_);
  auto it = modules_.find(handle);
  if (it == modules_.end()) return CUDA_ERROR_INVALID_HANDLE;
  m = std::move(it->second);
  modules_.erase(it);
  for (auto f = functions_.begin(); f != functions_.end();) {
    f = f->second->module_handle() == handle ? functions_.erase(f) : std::next(f);
  }
  return CUDA_SUCCESS;
}

std::shared_ptr<Function> Driver::function_of(const std::shared_ptr<Module>& module, int index) {
  std::lock_guard lock(mu_);
  if (!modules_.count(module->handle())) return nullptr;
  for (auto& [h, f] : functions_) {
    if (f->module_handle() == module->handle() && f->index() == index) return f;
  }
  auto f = std::make_shared<Function>(new_handle(), module, index);
  functions_[f->handle()] = f;
  return f;
}

std::shared_ptr<Function> Driver::function(uint64_t handle) {
  std::lock_guard lock(mu_);
  auto it = functions_.find(handle);
  return it == functions_.end() ? nullptr : it->second;
}

KernelPool* Driver::pool(int ordinal) {
  Device* dev = device(ordinal);
  if (!dev) return nullptr;
  std::call_once(dev->pool_once, [&] { dev->pool = std::make_unique<KernelPool>(static_cast<unsigned>(config_.threads)); });
  return dev->pool.get();
}

}  // namespace rgpu::cpudev
