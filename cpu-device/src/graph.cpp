// Graphs, their tables, and the rules of stream capture shared by the entry
// points (recording, invalidation, the capture modes' unsafe calls).
#include "graph.h"

#include "event.h"

#include <algorithm>

namespace rgpu::cpudev {

CUresult Graph::add(GraphNode node, const std::vector<GraphNode*>& deps, GraphNode** out) {
  std::lock_guard lock(mu_);
  for (GraphNode* d : deps) {
    if (!d || d->graph != this) return CUDA_ERROR_INVALID_VALUE;
  }
  node.deps.clear();
  for (GraphNode* d : deps) {
    if (std::find(node.deps.begin(), node.deps.end(), d) == node.deps.end()) node.deps.push_back(d);
  }
  node.graph = this;
  nodes_.push_back(std::make_unique<GraphNode>(std::move(node)));
  if (out) *out = nodes_.back().get();
  return CUDA_SUCCESS;
}

std::shared_ptr<Graph> Graph::clone() const {
  std::lock_guard lock(mu_);
  auto g = std::make_shared<Graph>(context_, users_);
  std::map<const GraphNode*, GraphNode*> copy_of;
  for (const auto& n : nodes_) {
    auto copy = std::make_unique<GraphNode>(*n);
    copy->graph = g.get();
    for (GraphNode*& d : copy->deps) d = copy_of.at(d);  // added before: in the map
    copy_of[n.get()] = copy.get();
    g->nodes_.push_back(std::move(copy));
  }
  return g;
}

bool Graph::owns(const GraphNode* node) const {
  std::lock_guard lock(mu_);
  for (auto& n : nodes_) {
    if (n.get() == node) return true;
  }
  return false;
}

std::vector<GraphNode*> Graph::nodes() const {
  std::lock_guard lock(mu_);
  std::vector<GraphNode*> out;
  for (auto& n : nodes_) out.push_back(n.get());
  return out;
}

std::vector<GraphNode*> Graph::leaves() const {
  std::lock_guard lock(mu_);
  std::set<const GraphNode*> inner;
  for (auto& n : nodes_) inner.insert(n->deps.begin(), n->deps.end());
  std::vector<GraphNode*> out;
  for (auto& n : nodes_) {
    if (!inner.count(n.get())) out.push_back(n.get());
  }
  return out;
}

std::vector<std::pair<GraphNode*, GraphNode*>> Graph::edges() const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<GraphNode*, GraphNode*>> out;
  for (auto& n : nodes_) {
    for (GraphNode* d : n->deps) out.emplace_back(d, n.get());
  }
  return out;
}

void UserObject::release(uint64_t n) {
  uint64_t before = refs_.load();
  do {
    if (n > before) n = before;
  } while (!refs_.compare_exchange_weak(before, before - n));
  if (before != 0 && before == n) {
    if (destroy_) destroy_(ptr_);
    tables_->remove_user_object(this);
  }
}

UserObjectRefs::UserObjectRefs(const UserObjectRefs& other) {
  std::lock_guard lock(other.mu_);
  held_ = other.held_;
  for (auto& [o, n] : held_) o->retain(n);
}

UserObjectRefs::~UserObjectRefs() {
  for (auto& [o, n] : held_) o->release(n);
}

void UserObjectRefs::add(const std::shared_ptr<UserObject>& o, uint64_t n) {
  std::lock_guard lock(mu_);
  held_[o] += n;
}

bool UserObjectRefs::drop(const std::shared_ptr<UserObject>& o, uint64_t n) {
  std::unique_lock lock(mu_);
  auto it = held_.find(o);
  if (it == held_.end() || it->second < n) return false;
  if ((it->second -= n) == 0) held_.erase(it);
  lock.unlock();
  o->release(n);
  return true;
}

Capture::Member* Capture::member(const Stream* s) {
  for (auto& m : members) {
    if (m.stream.lock().get() == s) return &m;
  }
  return nullptr;
}

std::atomic<int> GraphTables::active_count_{0};

uint64_t GraphTables::add_graph(std::shared_ptr<Graph> g) {
  std::lock_guard lock(mu_);
  auto h = reinterpret_cast<uint64_t>(g.get());
  graphs_[h] = std::move(g);
  return h;
}

std::shared_ptr<Graph> GraphTables::graph(uint64_t handle) const {
  std::lock_guard lock(mu_);
  auto it = graphs_.find(handle);
  return it == graphs_.end() ? nullptr : it->second;
}

bool GraphTables::remove_graph(uint64_t handle) {
  std::shared_ptr<Graph> last;  // destroyed outside the lock: it releases user objects
  std::lock_guard lock(mu_);
  auto it = graphs_.find(handle);
  if (it == graphs_.end()) return false;
  last = std::move(it->second);
  graphs_.erase(it);
  return true;
}

uint64_t GraphTables::add_exec(std::shared_ptr<GraphExec> e) {
  std::lock_guard lock(mu_);
  auto h = reinterpret_cast<uint64_t>(e.get());
  execs_[h] = std::move(e);
  return h;
}

std::shared_ptr<GraphExec> GraphTables::exec(uint64_t handle) const {
  std::lock_guard lock(mu_);
  auto it = execs_.find(handle);
  return it == execs_.end() ? nullptr : it->second;
}

bool GraphTables::remove_exec(uint64_t handle) {
  std::shared_ptr<GraphExec> last;  // destroyed outside the lock, as above
  std::lock_guard lock(mu_);
  auto it = execs_.find(handle);
  if (it == execs_.end()) return false;
  last = std::move(it->second);
  execs_.erase(it);
  return true;
}

GraphNode* GraphTables::node(uint64_t handle) const {
  // Never dereferenced before its graph is found to own it.
  std::lock_guard lock(mu_);
  for (auto& [h, g] : graphs_) {
    if (g->owns(reinterpret_cast<const GraphNode*>(handle))) return reinterpret_cast<GraphNode*>(handle);
  }
  return nullptr;
}

uint64_t GraphTables::add_user_object(std::shared_ptr<UserObject> o) {
  std::lock_guard lock(mu_);
  auto h = reinterpret_cast<uint64_t>(o.get());
  users_[h] = std::move(o);
  return h;
}

std::shared_ptr<UserObject> GraphTables::user_object(uint64_t handle) const {
  std::lock_guard lock(mu_);
  auto it = users_.find(handle);
  return it == users_.end() ? nullptr : it->second;
}

void GraphTables::remove_user_object(const UserObject* o) {
  std::shared_ptr<UserObject> last;  // destroyed outside the lock
  std::lock_guard lock(mu_);
  auto it = users_.find(reinterpret_cast<uint64_t>(o));
  if (it != users_.end()) {
    last = std::move(it->second);
    users_.erase(it);
  }
}

std::shared_ptr<Capture> GraphTables::begin_capture(CUstreamCaptureMode mode, std::shared_ptr<Stream> origin,
                                                    uint64_t context) {
  auto c = std::make_shared<Capture>();
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->graph = std::make_shared<Graph>(context);
  c->origin = origin;
  c->members.push_back(Capture::Member{origin, {}});
  std::lock_guard lock(mu_);
  c->id = next_capture_id_++;
  active_.push_back(c);
  active_count_.fetch_add(1, std::memory_order_release);
  return c;
}

void GraphTables::end_capture(const Capture* c) {
  std::lock_guard lock(mu_);
  size_t before = active_.size();
  active_.erase(std::remove_if(active_.begin(), active_.end(), [c](auto& a) { return a.get() == c; }), active_.end());
  active_count_.fetch_sub(static_cast<int>(before - active_.size()), std::memory_order_release);
}

std::vector<std::shared_ptr<Capture>> GraphTables::active() const {
  std::lock_guard lock(mu_);
  return active_;
}

namespace {
thread_local CUresult t_refusal = CUDA_SUCCESS;
}  // namespace

CUresult capture_refusal() {
  CUresult r = t_refusal == CUDA_SUCCESS ? CUDA_ERROR_INVALID_HANDLE : t_refusal;
  t_refusal = CUDA_SUCCESS;
  return r;
}

void set_capture_refusal(CUresult r) { t_refusal = r; }

CUstreamCaptureMode& thread_capture_mode() {
  thread_local CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  return mode;
}

uint64_t capture_record(const std::shared_ptr<Capture>& c, const Stream* stream, Work work, OpKind kind,
                        CUgraphNodeType type) {
  std::lock_guard lock(c->mu);
  if (c->invalidated) {
    t_refusal = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    return 0;
  }
  Capture::Member* m = c->member(stream);
  if (!m) {
    t_refusal = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    return 0;
  }
  if (!work) return 1;  // an ordering marker: nothing to replay
  GraphNode node;
  node.type = type;
  node.work = std::move(work);
  node.kind = kind;
  GraphNode* added = nullptr;
  if (c->graph->add(std::move(node), m->tail, &added) != CUDA_SUCCESS) {
    t_refusal = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    return 0;
  }
  m->tail = {added};
  return 1;
}

void capture_invalidate(const std::shared_ptr<Capture>& c) {
  std::lock_guard lock(c->mu);
  c->invalidated = true;
}

CUresult capture_check_unsafe(GraphTables& tables) {
  if (!GraphTables::any_active()) return CUDA_SUCCESS;
  CUstreamCaptureMode mode = thread_capture_mode();
  if (mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  std::thread::id self = std::this_thread::get_id();
  bool refused = false;
  for (auto& c : tables.active()) {
    bool own = c->thread == self && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    bool other_global = c->thread != self && c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                        mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (own || other_global) {
      capture_invalidate(c);
      refused = true;
    }
  }
  return refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult capture_record_event(const std::shared_ptr<Capture>& c, const std::shared_ptr<Stream>& s,
                              const std::shared_ptr<Event>& e) {
  std::vector<GraphNode*> tail;
  {
    std::lock_guard lock(c->mu);
    if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    Capture::Member* m = c->member(s.get());
    if (!m) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    tail = m->tail;
  }
  e->set_captured(c, std::move(tail));
  return CUDA_SUCCESS;
}

CUresult capture_join(const std::shared_ptr<Capture>& c, const std::shared_ptr<Stream>& s,
                      const std::vector<GraphNode*>& tail) {
  auto current = s->capture();
  if (current && current != c) {
    capture_invalidate(current);
    capture_invalidate(c);
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  }
  std::lock_guard lock(c->mu);
  if (c->ended) return CUDA_SUCCESS;  // the capture is over: nothing left to wait for
  if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  Capture::Member* m = c->member(s.get());
  if (!m) {
    c->members.push_back(Capture::Member{s, tail});
    s->set_capture(c);
    return CUDA_SUCCESS;
  }
  for (GraphNode* n : tail) {
    if (std::find(m->tail.begin(), m->tail.end(), n) == m->tail.end()) m->tail.push_back(n);
  }
  return CUDA_SUCCESS;
}

}  // namespace rgpu::cpudev
