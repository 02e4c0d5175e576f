// Context streams, legacy-stream ordering and teardown.
#include "context.h"

#include "graph.h"

namespace rgpu::cpudev {

Context::Context(Scheduler* scheduler, uint64_t handle, int device, unsigned flags, bool primary)
    : scheduler_(scheduler), handle_(handle), device_(device), flags_(flags), primary_(primary) {}

Context::~Context() { shutdown(); }

void Context::set_sticky(CUresult error) {
  int expected = CUDA_SUCCESS;
  state_->sticky.compare_exchange_strong(expected, error);
}

CUresult Context::set_group(uint64_t group) {
  if (group == kAnyGroup) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(group_mu_);
  if (group_fixed_ && group != state_->group.load()) return CUDA_ERROR_NOT_PERMITTED;
  state_->group.store(group);
  return CUDA_SUCCESS;
}

uint64_t Context::memory_group() {
  std::lock_guard lock(group_mu_);
  group_fixed_ = true;
  return state_->group.load();
}

std::shared_ptr<Stream> Context::legacy() {
  std::lock_guard lock(mu_);
  if (!legacy_ && !shut_down_) {
    legacy_ = std::make_shared<Stream>(scheduler_, 0, handle_, device_, Stream::Kind::kLegacy, 0, 0);
  }
  return legacy_;
}

std::shared_ptr<Stream> Context::per_thread() {
  std::lock_guard lock(mu_);
  if (shut_down_) return nullptr;
  auto& s = per_thread_[std::this_thread::get_id()];
  if (!s) {
    s = std::make_shared<Stream>(scheduler_, reinterpret_cast<uint64_t>(CU_STREAM_PER_THREAD), handle_, device_,
                                 Stream::Kind::kPerThread, 0, 0);
  }
  return s;
}

std::shared_ptr<Stream> Context::create_stream(uint64_t handle, unsigned flags, int priority) {
  std::lock_guard lock(mu_);
  if (shut_down_) return nullptr;
  reap_locked();
  auto s = std::make_shared<Stream>(scheduler_, handle, handle_, device_, Stream::Kind::kUser, flags, priority);
  streams_[handle] = s;
  return s;
}

void Context::retire_stream(uint64_t handle) {
  std::lock_guard lock(mu_);
  auto it = streams_.find(handle);
  if (it == streams_.end()) return;
  it->second->close();
  retired_.push_back(std::move(it->second));
  streams_.erase(it);
  reap_locked();
}

void Context::reap_locked() {
  // Joining an idle, closed stream is immediate; busy ones wait for later.
  for (auto it = retired_.begin(); it != retired_.end();) {
    if ((*it)->idle()) {
      (*it)->join();
      it = retired_.erase(it);
    } else {
      ++it;
    }
  }
}

uint64_t Context::enqueue(const std::shared_ptr<Stream>& stream, std::vector<Dependency> deps, Work work,
                          OpKind kind, CUgraphNodeType type) {
  if (auto c = stream->capture()) return capture_record(c, stream.get(), std::move(work), kind, type);
  if (stream->kind() == Stream::Kind::kLegacy && check_wait(stream) != CUDA_SUCCESS) return 0;
  std::lock_guard lock(mu_);
  auto add = [&deps](const std::shared_ptr<Stream>& s) {
    uint64_t last = s->last_enqueued();
    if (last && !s->done(last)) deps.push_back(Dependency{s, last});
  };
  if (stream->kind() == Stream::Kind::kLegacy) {
    for (auto& [h, s] : streams_) {
      if (s->blocking()) add(s);
    }
    for (auto& [t, s] : per_thread_) add(s);
    for (auto& s : retired_) {
      if (s->blocking()) add(s);
    }
  } else if (stream->blocking() && legacy_) {
    add(legacy_);
  }
  return stream->enqueue(std::move(deps), std::move(work), kind);
}

CUresult Context::check_wait(const std::shared_ptr<Stream>& stream) {
  if (auto c = stream->capture()) {
    capture_invalidate(c);
    set_capture_refusal(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (stream->kind() != Stream::Kind::kLegacy || !GraphTables::any_active()) return CUDA_SUCCESS;
  std::vector<std::shared_ptr<Capture>> implicit;
  {
    std::lock_guard lock(mu_);
    for (auto& s : all_streams_locked()) {
      if (s->blocking() || s->kind() == Stream::Kind::kPerThread) {
        if (auto c = s->capture()) implicit.push_back(std::move(c));
      }
    }
  }
  if (implicit.empty()) return CUDA_SUCCESS;
  for (auto& c : implicit) capture_invalidate(c);
  set_capture_refusal(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
}

bool Context::run_now_if_idle(const std::shared_ptr<Stream>& stream, const Work& work, CUresult* result) {
  if (stream->capture()) return false;
  std::lock_guard lock(mu_);
  // Every enqueue goes through mu_, so nothing can be added while we look.
  auto busy = [](const std::shared_ptr<Stream>& s) { return !s->idle(); };
  if (busy(stream)) return false;
  if (stream->kind() == Stream::Kind::kLegacy) {
    for (auto& [h, s] : streams_) {
      if (s->blocking() && busy(s)) return false;
    }
    for (auto& [t, s] : per_thread_) {
      if (busy(s)) return false;
    }
    for (auto& s : retired_) {
      if (s->blocking() && busy(s)) return false;
    }
  } else if (stream->blocking() && legacy_ && busy(legacy_)) {
    return false;
  }
  *result = work();
  return true;
}

std::vector<std::shared_ptr<Stream>> Context::all_streams_locked() const {
  std::vector<std::shared_ptr<Stream>> all;
  if (legacy_) all.push_back(legacy_);
  for (auto& [t, s] : per_thread_) all.push_back(s);
  for (auto& [h, s] : streams_) all.push_back(s);
  for (auto& s : retired_) all.push_back(s);
  return all;
}

std::vector<std::pair<std::shared_ptr<Stream>, uint64_t>> Context::wait_all() {
  std::vector<std::pair<std::shared_ptr<Stream>, uint64_t>> targets;
  {
    std::lock_guard lock(mu_);
    for (auto& s : all_streams_locked()) targets.emplace_back(s, s->last_enqueued());
  }
  for (auto& [s, seq] : targets) s->wait(seq);
  return targets;
}

void Context::drain() { (void)wait_all(); }

CUresult Context::synchronize() {
  CUresult first = CUDA_SUCCESS;
  for (auto& [s, seq] : wait_all()) {
    CUresult e = s->take_error();
    if (first == CUDA_SUCCESS) first = e;
  }
  CUresult st = sticky();
  return st != CUDA_SUCCESS ? st : first;
}

void Context::shutdown() {
  std::vector<std::shared_ptr<Stream>> all;
  {
    std::lock_guard lock(mu_);
    shut_down_ = true;
    state_->cancel.store(true);
    all = all_streams_locked();
    legacy_.reset();
    per_thread_.clear();
    streams_.clear();
    retired_.clear();
  }
  for (auto& s : all) s->abandon_waits();
  for (auto& s : all) s->join();
}

}  // namespace rgpu::cpudev
