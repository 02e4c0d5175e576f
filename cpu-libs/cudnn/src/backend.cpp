// The backend (graph) API: descriptors as attribute bags; finalize derives
// what the stand-in runs. One engine (global index 0, no knobs, no
// workspace) runs every single-convolution graph: heuristics of any mode
// answer it, and a plan of it runs with oneDNN (conv.cpp).
#include <cstring>
#include <string>

#include "backend.h"
#include "handle.h"

namespace rgpu::cpudnn {

Desc* desc_of(cudnnBackendDescriptor_t d) {
  auto* p = static_cast<Desc*>(d);
  return p && p->magic == Desc::kMagic ? p : nullptr;
}

namespace {

uint32_t elem_bytes(cudnnBackendAttributeType_t t) {
  switch (t) {
    case CUDNN_TYPE_HANDLE: case CUDNN_TYPE_VOID_PTR: case CUDNN_TYPE_BACKEND_DESCRIPTOR:
    case CUDNN_TYPE_INT64: case CUDNN_TYPE_DOUBLE:
      return 8;
    case CUDNN_TYPE_BOOLEAN: case CUDNN_TYPE_CHAR:
      return 1;
    case CUDNN_TYPE_FRACTION:
      return 16;
    default:
      return int(t) >= 0 && int(t) <= 30 ? 4 : 0;
  }
}

void copy_into(Desc& dst, const Desc& src) {
  dst.attrs = src.attrs;
  dst.results = src.results;
  dst.plan = src.plan;
  dst.handle = src.handle;
  dst.finalized = src.finalized;
}

void set_int64(Desc& d, int name, int64_t v) {
  Desc::Value val;
  val.type = CUDNN_TYPE_INT64;
  val.count = 1;
  val.bytes.resize(8);
  std::memcpy(val.bytes.data(), &v, 8);
  d.attrs[name] = std::move(val);
}

void set_ref(Desc& d, int name, std::vector<std::shared_ptr<const Desc>> refs) {
  Desc::Value val;
  val.type = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  val.count = int64_t(refs.size());
  val.refs = std::move(refs);
  d.attrs[name] = std::move(val);
}

// The graph an engine (or an engine config's engine) runs.
const Desc* graph_of_engine(const Desc* engine) {
  return engine ? engine->ref(CUDNN_ATTR_ENGINE_OPERATION_GRAPH) : nullptr;
}

cudnnStatus_t finalize_heuristics(Desc& d) {
  const Desc::Value* gv = d.find(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
  if (!gv || gv->refs.size() != 1 || !gv->refs[0]->finalized) return CUDNN_STATUS_BAD_PARAM;
  const std::shared_ptr<const Desc> graph = gv->refs[0];
  d.results.clear();
  ConvPlan plan;
  std::string why;
  if (derive_conv(*graph, &plan, &why) == CUDNN_STATUS_SUCCESS) {
    auto engine = std::make_shared<Desc>();
    engine->type = CUDNN_BACKEND_ENGINE_DESCRIPTOR;
    set_ref(*engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, {graph});
    set_int64(*engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, 0);
    engine->finalized = true;
    auto cfg = std::make_shared<Desc>();
    cfg->type = CUDNN_BACKEND_ENGINECFG_DESCRIPTOR;
    set_ref(*cfg, CUDNN_ATTR_ENGINECFG_ENGINE, {engine});
    set_ref(*cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, {});
    cfg->finalized = true;
    d.results.push_back(cfg);
  } else {
    RGPU_DEBUG("cpu cudnn: no engine for the graph reason=%s", why.c_str());
  }
  d.finalized = true;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_plan(Desc& d) {
  const Desc::Value* h = d.find(CUDNN_ATTR_EXECUTION_PLAN_HANDLE);
  const Desc* cfg = d.ref(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
  if (!h || h->bytes.size() != 8 || !cfg) return CUDNN_STATUS_BAD_PARAM;
  const Desc* engine = cfg->ref(CUDNN_ATTR_ENGINECFG_ENGINE);
  const Desc* graph = graph_of_engine(engine);
  if (!graph) return CUDNN_STATUS_BAD_PARAM;
  auto plan = std::make_shared<ConvPlan>();
  std::string why;
  cudnnStatus_t s = derive_conv(*graph, plan.get(), &why);
  if (s != CUDNN_STATUS_SUCCESS) {
    RGPU_DEBUG("cpu cudnn: plan refused reason=%s", why.c_str());
    return s;
  }
  std::memcpy(&d.handle, h->bytes.data(), 8);
  d.plan = std::move(plan);
  d.finalized = true;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_engine(Desc& d) {
  int64_t index = 0;
  const Desc::Value* v = d.find(CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
  if (v && v->bytes.size() == 8) std::memcpy(&index, v->bytes.data(), 8);
  if (!graph_of_engine(&d)) return CUDNN_STATUS_BAD_PARAM;
  if (index != 0) return CUDNN_STATUS_NOT_SUPPORTED;
  d.finalized = true;
  return CUDNN_STATUS_SUCCESS;
}

// Attributes the library answers rather than stores.
bool derived(const Desc& d, cudnnBackendAttributeName_t name, int64_t* value) {
  switch (name) {
    case CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT:
      *value = 1;
      return d.type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR;
    case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE:
    case CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE:
      *value = 0;  // oneDNN's scratch space is host memory of its own
      return true;
    default:
      return false;
  }
}

}  // namespace
}  // namespace rgpu::cpudnn

using namespace rgpu::cpudnn;

RGPU_EXPORT cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                                       cudnnBackendDescriptor_t* descriptor) {
  return guarded("cudnnBackendCreateDescriptor", [&] {
    if (!descriptor) return CUDNN_STATUS_BAD_PARAM;
    auto* d = new Desc();
    d->type = type;
    *descriptor = d;
    return CUDNN_STATUS_SUCCESS;
  });
}

RGPU_EXPORT cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  Desc* d = desc_of(descriptor);
  if (!d) return CUDNN_STATUS_BAD_PARAM;
  d->magic = 0;
  delete d;
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnBackendInitialize(cudnnBackendDescriptor_t descriptor) {
  return desc_of(descriptor) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

RGPU_EXPORT cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                                   cudnnBackendAttributeName_t name,
                                                   cudnnBackendAttributeType_t type, int64_t count,
                                                   const void* array) {
  return guarded("cudnnBackendSetAttribute", [&] {
    Desc* d = desc_of(descriptor);
    const uint32_t eb = elem_bytes(type);
    if (!d || d->finalized || eb == 0 || count < 0 || (count > 0 && !array)) return CUDNN_STATUS_BAD_PARAM;
    Desc::Value v;
    v.type = type;
    v.count = count;
    if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
      auto* refs = static_cast<const cudnnBackendDescriptor_t*>(array);
      for (int64_t i = 0; i < count; ++i) {
        Desc* r = desc_of(refs[i]);
        if (!r) return CUDNN_STATUS_BAD_PARAM;
        v.refs.push_back(std::make_shared<const Desc>(*r));
      }
    } else {
      v.bytes.assign(static_cast<const char*>(array), static_cast<const char*>(array) + count * eb);
    }
    d->attrs[int(name)] = std::move(v);
    return CUDNN_STATUS_SUCCESS;
  });
}

RGPU_EXPORT cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                                   cudnnBackendAttributeName_t name,
                                                   cudnnBackendAttributeType_t type, int64_t requested,
                                                   int64_t* count, void* array) {
  return guarded("cudnnBackendGetAttribute", [&] {
    Desc* d = desc_of(descriptor);
    const uint32_t eb = elem_bytes(type);
    if (!d || eb == 0 || requested < 0) return CUDNN_STATUS_BAD_PARAM;
    int64_t value = 0;
    if (name == CUDNN_ATTR_ENGINEHEUR_RESULTS) {
      if (!d->finalized || type != CUDNN_TYPE_BACKEND_DESCRIPTOR) return CUDNN_STATUS_BAD_PARAM;
      const int64_t n = std::min<int64_t>(requested, int64_t(d->results.size()));
      auto* out = static_cast<cudnnBackendDescriptor_t*>(array);
      for (int64_t i = 0; i < n && out; ++i) {
        Desc* dst = desc_of(out[i]);
        if (!dst) return CUDNN_STATUS_BAD_PARAM;
        copy_into(*dst, *d->results[size_t(i)]);
      }
      if (count) *count = array ? n : int64_t(d->results.size());
      return CUDNN_STATUS_SUCCESS;
    }
    if (derived(*d, name, &value)) {
      if (type != CUDNN_TYPE_INT64) return CUDNN_STATUS_BAD_PARAM;
      if (count) *count = 1;
      if (array && requested >= 1) std::memcpy(array, &value, 8);
      return CUDNN_STATUS_SUCCESS;
    }
    const Desc::Value* v = d->find(int(name));
    if (!v) {
      if (name == CUDNN_ATTR_ENGINE_NUMERICAL_NOTE || name == CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE ||
          name == CUDNN_ATTR_ENGINECFG_KNOB_CHOICES) {
        if (count) *count = 0;  // none of either
        return CUDNN_STATUS_SUCCESS;
      }
      return CUDNN_STATUS_NOT_SUPPORTED;
    }
    if (v->type != type) return CUDNN_STATUS_BAD_PARAM;
    const int64_t n = std::min(requested, v->count);
    if (array) {
      if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
        auto* out = static_cast<cudnnBackendDescriptor_t*>(array);
        for (int64_t i = 0; i < n; ++i) {
          Desc* dst = desc_of(out[i]);
          if (!dst) return CUDNN_STATUS_BAD_PARAM;
          copy_into(*dst, *v->refs[size_t(i)]);
        }
      } else {
        std::memcpy(array, v->bytes.data(), size_t(n) * eb);
      }
    }
    if (count) *count = array ? n : v->count;
    return CUDNN_STATUS_SUCCESS;
  });
}

RGPU_EXPORT cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  return guarded("cudnnBackendFinalize", [&] {
    Desc* d = desc_of(descriptor);
    if (!d) return CUDNN_STATUS_BAD_PARAM;
    if (d->finalized) return CUDNN_STATUS_BAD_PARAM;
    switch (d->type) {
      case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: return finalize_heuristics(*d);
      case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: return finalize_plan(*d);
      case CUDNN_BACKEND_ENGINE_DESCRIPTOR: return finalize_engine(*d);
      default:
        d->finalized = true;
        return CUDNN_STATUS_SUCCESS;
    }
  });
}

RGPU_EXPORT cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                              cudnnBackendDescriptor_t variantPack) {
  return guarded("cudnnBackendExecute", [&] {
    Desc* p = desc_of(plan);
    Desc* vp = desc_of(variantPack);
    if (!handle || !p || !vp || !p->plan || p->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    return run_conv(handle, *p->plan, *vp);
  });
}
