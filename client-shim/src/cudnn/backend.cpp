// cuDNN's backend (graph) API on the client. A descriptor is an attribute
// bag in host memory: created, set, read and destroyed with no round trip.
// Four things reach rgpud, each in one message that carries the whole
// description (rgpu/protocol/cudnn_wire.h's Graph):
//   - finalizing engine heuristics: the server's library answers the engine
//     configs, kept here as bags the application copies out of
//     CUDNN_ATTR_ENGINEHEUR_RESULTS;
//   - reading an operation graph's CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT;
//   - finalizing an execution plan: rgpud builds and keeps the plan under a
//     handle minted here and answers its workspace size;
//   - executing a plan (one-way) with the variant pack's uids and pointers.
// Every other descriptor's finalize only marks it (the library checks it
// when a plan or heuristics that use it are built on the server).
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <vector>

#include "api_common.h"
#include "cudnn_client.h"
#include "unimplemented.h"

namespace rgpu::shim::cudnn {
namespace {

namespace cw = protocol::cudnn;
constexpr auto kPlanKind = static_cast<HandleKind>(cw::kPlanKind);

// A finalized plan's server-side handle; destroyed there when the last
// descriptor holding it goes.
struct PlanRef {
  uint64_t handle = 0;
  int64_t workspace = 0;
};

struct Desc {
  static constexpr uint32_t kMagic = 0x636e6e64;  // "dnnc"
  uint32_t magic = kMagic;
  cudnnBackendDescriptorType_t type{};
  bool finalized = false;
  struct Value {
    cudnnBackendAttributeType_t type{};
    int64_t count = 0;
    std::vector<std::byte> bytes;
    // A descriptor-valued attribute holds copies of the descriptors as they
    // were when set, as cuDNN does: the application may destroy its own
    // right after (cuDNN's frontend does).
    std::vector<std::shared_ptr<const Desc>> refs;
    bool derived = false;  // answered by the library: never sent back to it
  };
  std::map<uint32_t, Value> attrs;
  std::vector<std::shared_ptr<const Desc>> results;  // heuristics' engine configs
  std::shared_ptr<PlanRef> plan;
  int64_t global_count = -1;                   // an operation graph's, once asked

  const Desc* ref(uint32_t name) const {
    auto it = attrs.find(name);
    return it != attrs.end() && it->second.type == CUDNN_TYPE_BACKEND_DESCRIPTOR && it->second.count == 1
               ? it->second.refs[0].get()
               : nullptr;
  }
};

Desc* desc_of(cudnnBackendDescriptor_t d) {
  auto* p = static_cast<Desc*>(d);
  return p && p->magic == Desc::kMagic ? p : nullptr;
}

void copy_into(Desc& dst, const Desc& src) {
  dst.attrs = src.attrs;
  dst.results = src.results;
  dst.plan = src.plan;
  dst.global_count = src.global_count;
  dst.finalized = src.finalized;
}

template <class T>
void put(Desc& d, uint32_t name, cudnnBackendAttributeType_t type, const T* values, int64_t n, bool derived) {
  Desc::Value v;
  v.type = type;
  v.count = n;
  v.derived = derived;
  v.bytes.resize(size_t(n) * sizeof(T));
  if (n > 0) std::memcpy(v.bytes.data(), values, v.bytes.size());
  d.attrs[name] = std::move(v);
}

void put_refs(Desc& d, uint32_t name, std::vector<std::shared_ptr<const Desc>> refs) {
  Desc::Value v;
  v.type = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  v.count = int64_t(refs.size());
  v.refs = std::move(refs);
  d.attrs[name] = std::move(v);
}

// The graph `root` and everything it refers to, referenced nodes first; the
// handle of the first handle-valued attribute met in *handle.
class GraphWriter {
 public:
  cudnnStatus_t add(const Desc* d) {
    if (index_.count(d)) return CUDNN_STATUS_SUCCESS;
    if (++depth_ > 64) return CUDNN_STATUS_BAD_PARAM;  // a cycle, or a graph no library builds
    cw::Node node;
    node.type = uint32_t(d->type);
    for (const auto& [name, v] : d->attrs) {
      if (v.derived) continue;
      cw::Attr a;
      a.name = name;
      a.type = uint32_t(v.type);
      a.count = v.count;
      if (v.type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
        for (const auto& r : v.refs) {
          if (cudnnStatus_t s = add(r.get()); s != CUDNN_STATUS_SUCCESS) return s;
          a.refs.push_back(index_[r.get()]);
        }
      } else if (v.type == CUDNN_TYPE_HANDLE) {
        if (v.count != 1 || v.bytes.size() != 8) return CUDNN_STATUS_BAD_PARAM;
        uint64_t h;
        std::memcpy(&h, v.bytes.data(), 8);
        if (handle_ == 0) handle_ = h;
        if (h != handle_) return CUDNN_STATUS_NOT_SUPPORTED;  // one graph, one handle
      } else if (v.type == CUDNN_TYPE_VOID_PTR) {
        return CUDNN_STATUS_NOT_SUPPORTED;  // addresses travel only in a variant pack
      } else {
        a.data = v.bytes;
      }
      node.attrs.push_back(std::move(a));
    }
    --depth_;
    index_[d] = uint32_t(graph_.size());
    graph_.push_back(std::move(node));
    return CUDNN_STATUS_SUCCESS;
  }
  const cw::Graph& graph() const { return graph_; }
  uint64_t handle() const { return handle_; }

 private:
  cw::Graph graph_;
  std::map<const Desc*, uint32_t> index_;
  uint64_t handle_ = 0;
  int depth_ = 0;
};

// Packs the call's handle (the graph's), then `extra` items, then the graph
// of `root`.
cudnnStatus_t pack_graph(const Desc& root, protocol::ArgWriter& w, std::initializer_list<uint64_t> extra) {
  GraphWriter gw;
  if (cudnnStatus_t s = gw.add(&root); s != CUDNN_STATUS_SUCCESS) return s;
  if (gw.handle() == 0) return CUDNN_STATUS_BAD_PARAM;  // the library needs the graph's handle
  w.u64(gw.handle());
  for (uint64_t v : extra) w.u64(v);
  cw::write_graph(w, gw.graph());
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_heuristics(Desc& d) {
  const auto& gv = d.attrs.find(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
  if (gv == d.attrs.end() || gv->second.refs.size() != 1 || !gv->second.refs[0]->finalized) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  const std::shared_ptr<const Desc> graph = gv->second.refs[0];
  Shim* shim = nullptr;
  uint64_t ctx = 0;
  if (!enter(&shim, &ctx)) return CUDNN_STATUS_EXECUTION_FAILED;
  protocol::ArgWriter w;
  if (cudnnStatus_t s = pack_graph(d, w, {}); s != CUDNN_STATUS_SUCCESS) return s;
  std::vector<std::byte> reply;
  if (cudnnStatus_t s = send_sync(shim, ctx, cw::kHeuristics, w, &reply); s != CUDNN_STATUS_SUCCESS) return s;
  protocol::ArgReader rd(reply);
  uint64_t n = 0;
  if (!rd.u64(&n) || n > cw::kMaxEngineConfigs) return CUDNN_STATUS_EXECUTION_FAILED;
  std::vector<std::shared_ptr<const Desc>> results;
  for (uint64_t i = 0; i < n; ++i) {
    auto engine = std::make_shared<Desc>();
    engine->type = CUDNN_BACKEND_ENGINE_DESCRIPTOR;
    int64_t index = 0;
    rd.scalar(&index);
    put_refs(*engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, {graph});
    put(*engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, &index, 1, false);
    for (auto [name, type] : {std::pair{CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE},
                              std::pair{CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE}}) {
      uint64_t k = 0;
      if (!rd.u64(&k) || k > cw::kMaxNotes) return CUDNN_STATUS_EXECUTION_FAILED;
      std::vector<int32_t> notes(k);
      for (auto& x : notes) rd.scalar(&x);
      put(*engine, name, type, notes.data(), int64_t(k), true);
    }
    engine->finalized = true;
    auto cfg = std::make_shared<Desc>();
    cfg->type = CUDNN_BACKEND_ENGINECFG_DESCRIPTOR;
    uint64_t nk = 0;
    if (!rd.u64(&nk) || nk > cw::kMaxKnobs) return CUDNN_STATUS_EXECUTION_FAILED;
    std::vector<std::shared_ptr<const Desc>> knobs;
    for (uint64_t j = 0; j < nk; ++j) {
      int32_t type = 0;
      int64_t value = 0;
      rd.scalar(&type);
      rd.scalar(&value);
      auto knob = std::make_shared<Desc>();
      knob->type = CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR;
      put(*knob, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, &type, 1, false);
      put(*knob, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, &value, 1, false);
      knob->finalized = true;
      knobs.push_back(knob);
    }
    int64_t ws = 0;
    rd.scalar(&ws);
    put_refs(*cfg, CUDNN_ATTR_ENGINECFG_ENGINE, {engine});
    put_refs(*cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, knobs);
    put(*cfg, CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, CUDNN_TYPE_INT64, &ws, 1, true);
    cfg->finalized = true;
    results.push_back(cfg);
  }
  if (!rd.finish()) return CUDNN_STATUS_EXECUTION_FAILED;
  d.results = std::move(results);
  d.finalized = true;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_plan(Desc& d) {
  if (!d.ref(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)) return CUDNN_STATUS_BAD_PARAM;
  Shim* shim = nullptr;
  uint64_t ctx = 0;
  if (!enter(&shim, &ctx)) return CUDNN_STATUS_EXECUTION_FAILED;
  const uint64_t plan = shim->mint_handle(kPlanKind);
  protocol::ArgWriter w;
  if (cudnnStatus_t s = pack_graph(d, w, {plan}); s != CUDNN_STATUS_SUCCESS) return s;
  std::vector<std::byte> reply;
  if (cudnnStatus_t s = send_sync(shim, ctx, cw::kPlanCreate, w, &reply); s != CUDNN_STATUS_SUCCESS) return s;
  protocol::ArgReader rd(reply);
  auto ref = std::make_shared<PlanRef>();
  ref->handle = plan;
  if (!rd.scalar(&ref->workspace) || !rd.finish()) return CUDNN_STATUS_EXECUTION_FAILED;
  shim->add_handle(plan, kPlanKind);
  d.plan = std::move(ref);
  d.finalized = true;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t global_count(Desc& d, int64_t* out) {
  if (d.global_count < 0) {
    Shim* shim = nullptr;
    uint64_t ctx = 0;
    if (!enter(&shim, &ctx)) return CUDNN_STATUS_EXECUTION_FAILED;
    protocol::ArgWriter w;
    if (cudnnStatus_t s = pack_graph(d, w, {}); s != CUDNN_STATUS_SUCCESS) return s;
    std::vector<std::byte> reply;
    if (cudnnStatus_t s = send_sync(shim, ctx, cw::kGlobalCount, w, &reply); s != CUDNN_STATUS_SUCCESS) return s;
    protocol::ArgReader rd(reply);
    int64_t n = 0;
    if (!rd.scalar(&n) || !rd.finish()) return CUDNN_STATUS_EXECUTION_FAILED;
    d.global_count = n;
  }
  *out = d.global_count;
  return CUDNN_STATUS_SUCCESS;
}

void release_plan(Desc& d) {
  if (!d.plan || d.plan.use_count() != 1) return;
  Shim* shim = nullptr;
  uint64_t ctx = 0;
  if (enter(&shim, &ctx) && shim->remove_handle(d.plan->handle, kPlanKind)) {
    protocol::ArgWriter w;
    w.u64(d.plan->handle);
    send_async(shim, ctx, cw::kPlanDestroy, w);
  }
}

cudnnStatus_t get_int64(int64_t v, cudnnBackendAttributeType_t type, int64_t requested, int64_t* count, void* array) {
  if (type != CUDNN_TYPE_INT64) return CUDNN_STATUS_BAD_PARAM;
  if (count) *count = 1;
  if (array && requested >= 1) std::memcpy(array, &v, 8);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t get_attribute(Desc& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                            int64_t requested, int64_t* count, void* array) {
  if (requested < 0 || cw::attr_elem_bytes(uint32_t(type)) == 0) return CUDNN_STATUS_BAD_PARAM;
  if (name == CUDNN_ATTR_ENGINEHEUR_RESULTS) {
    if (!d.finalized || type != CUDNN_TYPE_BACKEND_DESCRIPTOR) return CUDNN_STATUS_BAD_PARAM;
    const int64_t n = std::min<int64_t>(requested, int64_t(d.results.size()));
    auto* out = static_cast<cudnnBackendDescriptor_t*>(array);
    for (int64_t i = 0; i < n && out; ++i) {
      Desc* dst = desc_of(out[i]);
      if (!dst) return CUDNN_STATUS_BAD_PARAM;
      copy_into(*dst, *d.results[size_t(i)]);
    }
    if (count) *count = array ? n : int64_t(d.results.size());
    return CUDNN_STATUS_SUCCESS;
  }
  if (name == CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT) {
    if (!d.finalized || d.type != CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR) return CUDNN_STATUS_BAD_PARAM;
    int64_t n = 0;
    if (cudnnStatus_t s = global_count(d, &n); s != CUDNN_STATUS_SUCCESS) return s;
    return get_int64(n, type, requested, count, array);
  }
  if (name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE) {
    if (!d.plan) return CUDNN_STATUS_BAD_PARAM;
    return get_int64(d.plan->workspace, type, requested, count, array);
  }
  auto it = d.attrs.find(uint32_t(name));
  if (it == d.attrs.end()) {
    if (name == CUDNN_ATTR_ENGINE_NUMERICAL_NOTE || name == CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE ||
        name == CUDNN_ATTR_ENGINECFG_KNOB_CHOICES) {
      if (count) *count = 0;
      return CUDNN_STATUS_SUCCESS;
    }
    return static_cast<cudnnStatus_t>(
        report_unimplemented("cudnnBackendGetAttribute(an attribute rgpu does not answer)",
                             CUDNN_STATUS_NOT_SUPPORTED, "CUDNN_STATUS_NOT_SUPPORTED"));
  }
  const Desc::Value& v = it->second;
  if (v.type != type) return CUDNN_STATUS_BAD_PARAM;
  const int64_t n = std::min(requested, v.count);
  if (array) {
    if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
      auto* out = static_cast<cudnnBackendDescriptor_t*>(array);
      for (int64_t i = 0; i < n; ++i) {
        Desc* dst = desc_of(out[i]);
        if (!dst) return CUDNN_STATUS_BAD_PARAM;
        copy_into(*dst, *v.refs[size_t(i)]);
      }
    } else {
      std::memcpy(array, v.bytes.data(), size_t(n) * cw::attr_elem_bytes(uint32_t(type)));
    }
  }
  if (count) *count = array ? n : v.count;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t execute(cudnnHandle_t handle, Desc& plan, const Desc& pack) {
  if (!plan.plan) return CUDNN_STATUS_BAD_PARAM;
  auto uids = pack.attrs.find(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  auto ptrs = pack.attrs.find(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  auto ws = pack.attrs.find(CUDNN_ATTR_VARIANT_PACK_WORKSPACE);
  if (uids == pack.attrs.end() || ptrs == pack.attrs.end() || uids->second.type != CUDNN_TYPE_INT64 ||
      ptrs->second.type != CUDNN_TYPE_VOID_PTR || uids->second.count != ptrs->second.count ||
      uint64_t(uids->second.count) > cw::kMaxVariantPack) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  Shim* shim = nullptr;
  uint64_t ctx = 0;
  if (!enter(&shim, &ctx)) return CUDNN_STATUS_EXECUTION_FAILED;
  protocol::ArgWriter w;
  w.u64(wire_handle(handle));
  w.u64(plan.plan->handle);
  const int64_t n = uids->second.count;
  w.u64(uint64_t(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t uid;
    uint64_t p;
    std::memcpy(&uid, uids->second.bytes.data() + i * 8, 8);
    std::memcpy(&p, ptrs->second.bytes.data() + i * 8, 8);
    w.scalar(uid);
    w.u64(p);
  }
  uint64_t workspace = 0;
  if (ws != pack.attrs.end() && ws->second.count == 1 && ws->second.bytes.size() == 8) {
    std::memcpy(&workspace, ws->second.bytes.data(), 8);
  }
  w.u64(workspace);
  send_async(shim, ctx, cw::kPlanExecute, w);
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace
}  // namespace rgpu::shim::cudnn

using namespace rgpu::shim::cudnn;

RGPU_EXPORT cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                                       cudnnBackendDescriptor_t* descriptor) {
  try {
    if (!descriptor || int(type) < 0 || int(type) > 255) return CUDNN_STATUS_BAD_PARAM;
    auto* d = new Desc();
    d->type = type;
    *descriptor = d;
    return CUDNN_STATUS_SUCCESS;
  } catch (...) {
    return CUDNN_STATUS_ALLOC_FAILED;
  }
}

RGPU_EXPORT cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  try {
    Desc* d = desc_of(descriptor);
    if (!d) return CUDNN_STATUS_BAD_PARAM;
    release_plan(*d);
    d->magic = 0;  // a stale pointer then fails desc_of() while its memory is unchanged
    delete d;
    return CUDNN_STATUS_SUCCESS;
  } catch (...) {
    return CUDNN_STATUS_INTERNAL_ERROR;
  }
}

RGPU_EXPORT cudnnStatus_t cudnnBackendInitialize(cudnnBackendDescriptor_t descriptor) {
  return desc_of(descriptor) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

RGPU_EXPORT cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                                   cudnnBackendAttributeName_t name,
                                                   cudnnBackendAttributeType_t type, int64_t count,
                                                   const void* array) {
  try {
    Desc* d = desc_of(descriptor);
    const uint32_t eb = cw::attr_elem_bytes(uint32_t(type));
    if (!d || d->finalized || eb == 0 || count < 0 || (count > 0 && !array) || count > 4096) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    Desc::Value v;
    v.type = type;
    v.count = count;
    if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
      auto* refs = static_cast<const cudnnBackendDescriptor_t*>(array);
      for (int64_t i = 0; i < count; ++i) {
        Desc* r = desc_of(refs[i]);
        if (!r || r == d) return CUDNN_STATUS_BAD_PARAM;
        v.refs.push_back(std::make_shared<const Desc>(*r));
      }
    } else {
      const auto* p = static_cast<const std::byte*>(array);
      v.bytes.assign(p, p + count * eb);
    }
    d->attrs[uint32_t(name)] = std::move(v);
    return CUDNN_STATUS_SUCCESS;
  } catch (...) {
    return CUDNN_STATUS_ALLOC_FAILED;
  }
}

RGPU_EXPORT cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                                   cudnnBackendAttributeName_t name,
                                                   cudnnBackendAttributeType_t type, int64_t requested,
                                                   int64_t* count, void* array) {
  try {
    Desc* d = desc_of(descriptor);
    if (!d) return CUDNN_STATUS_BAD_PARAM;
    return get_attribute(*d, name, type, requested, count, array);
  } catch (...) {
    return CUDNN_STATUS_INTERNAL_ERROR;
  }
}

RGPU_EXPORT cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  try {
    Desc* d = desc_of(descriptor);
    if (!d || d->finalized) return CUDNN_STATUS_BAD_PARAM;
    switch (d->type) {
      case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: return finalize_heuristics(*d);
      case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: return finalize_plan(*d);
      default:
        d->finalized = true;
        return CUDNN_STATUS_SUCCESS;
    }
  } catch (...) {
    return CUDNN_STATUS_INTERNAL_ERROR;
  }
}

RGPU_EXPORT cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                              cudnnBackendDescriptor_t variantPack) {
  try {
    Desc* p = desc_of(plan);
    Desc* vp = desc_of(variantPack);
    if (!handle || !p || !vp || p->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) return CUDNN_STATUS_BAD_PARAM;
    return execute(handle, *p, *vp);
  } catch (...) {
    return CUDNN_STATUS_EXECUTION_FAILED;
  }
}
