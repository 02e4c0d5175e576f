// The hand-written rows of cuDNN (cudnn_rows.h). Every graph and tensor
// descriptor is checked before the library sees it; every device address
// against the calling context's memory with the extent its descriptor
// gives; a plan's tensors are sized once, when it is created.
#include "cudnn_rows.h"

#include <cudnn.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cudnn_graph.h"
#include "cudnn_rnn_rows.h"
#include "cudnn_row_kit.h"
#include "library_tables.h"
#include "rgpu/protocol/cudnn_wire.h"

namespace rgpu::server {
namespace {

namespace cw = ::rgpu::protocol::cudnn;
using ::rgpu::protocol::ArgReader;
using ::rgpu::protocol::ArgWriter;
using ::rgpu::protocol::HandleKind;
using dispatch::refuse;
using namespace cudnn_rows;
constexpr auto kApi = wire::Api::CUDNN;
constexpr auto kPlan = static_cast<HandleKind>(cw::kPlanKind);

// A host scalar of the type cuDNN reads for data of `dtype`.
struct Scalar {
  float f = 0;
  double d = 0;
  const void* for_type(int32_t dtype) const { return dtype == CUDNN_DATA_DOUBLE ? static_cast<const void*>(&d) : &f; }
};
bool read_scalar(ArgReader& r, Scalar* s) {
  if (!r.scalar(&s->d)) return false;
  s->f = static_cast<float>(s->d);
  return true;
}

// --- backend ---------------------------------------------------------------

InvokeOutcome run_heuristics(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cudnnBackendFinalize(heuristics)";
  ArgReader rd(args);
  uint64_t h = 0;
  cw::Graph g;
  rd.u64(&h);
  cw::read_graph(rd, &g);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  if (g.back().type != CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR) return bad(fn, "the root is no engine heuristics");
  std::string why;
  if (cudnnStatus_t s = cudnn_check_graph(g, &why); s != CUDNN_STATUS_SUCCESS) return status(s, fn, why);
  Start st = start(env, h, fn);
  if (!st.ok()) return st.refusal;
  const CudnnTable& t = *st.table;
  if (!t.cudnnBackendGetAttribute) return refuse(kApi, CUDNN_STATUS_NOT_SUPPORTED, "cudnn: no GetAttribute");
  CudnnDescriptors descs(t);
  if (cudnnStatus_t s = descs.build(g, st.handle, &why); s != CUDNN_STATUS_SUCCESS) return status(s, fn, why);
  int64_t n = 0;
  cudnnStatus_t s = t.cudnnBackendGetAttribute(descs.root(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, nullptr);
  if (s != CUDNN_STATUS_SUCCESS) return status(s, fn, "results count");
  n = std::min<int64_t>(std::max<int64_t>(n, 0), cw::kMaxEngineConfigs);
  std::vector<cudnnBackendDescriptor_t> cfgs(size_t(n), nullptr);
  for (auto& c : cfgs) {
    if ((s = descs.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &c)) != CUDNN_STATUS_SUCCESS) return status(s, fn, "cfg");
  }
  int64_t got = 0;
  if (n > 0) {
    s = t.cudnnBackendGetAttribute(descs.root(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n,
                                   &got, cfgs.data());
    if (s != CUDNN_STATUS_SUCCESS) return status(s, fn, "results");
  }
  ArgWriter w;
  w.u64(uint64_t(std::min(got, n)));
  for (int64_t i = 0; i < std::min(got, n); ++i) {
    cudnnBackendDescriptor_t engine = nullptr;
    if ((s = descs.make(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine)) != CUDNN_STATUS_SUCCESS) return status(s, fn, "engine");
    int64_t cnt = 0, index = 0;
    s = t.cudnnBackendGetAttribute(cfgs[size_t(i)], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                   &cnt, &engine);
    if (s == CUDNN_STATUS_SUCCESS) {
      s = t.cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &cnt, &index);
    }
    if (s != CUDNN_STATUS_SUCCESS) return status(s, fn, "engine of a config");
    w.scalar(index);
    for (auto [name, type] : {std::pair{CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE},
                              std::pair{CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE}}) {
      int32_t notes[cw::kMaxNotes] = {};
      int64_t k = 0;
      if (t.cudnnBackendGetAttribute(engine, name, type, cw::kMaxNotes, &k, notes) != CUDNN_STATUS_SUCCESS) k = 0;
      k = std::min<int64_t>(std::max<int64_t>(k, 0), cw::kMaxNotes);
      w.u64(uint64_t(k));
      for (int64_t j = 0; j < k; ++j) w.scalar(notes[j]);
    }
    std::vector<cudnnBackendDescriptor_t> knobs(cw::kMaxKnobs, nullptr);
    for (auto& kd : knobs) {
      if ((s = descs.make(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &kd)) != CUDNN_STATUS_SUCCESS) return status(s, fn, "knob");
    }
    int64_t nk = 0;
    if (t.cudnnBackendGetAttribute(cfgs[size_t(i)], CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                   cw::kMaxKnobs, &nk, knobs.data()) != CUDNN_STATUS_SUCCESS) {
      nk = 0;
    }
    nk = std::min<int64_t>(std::max<int64_t>(nk, 0), cw::kMaxKnobs);
    w.u64(uint64_t(nk));
    for (int64_t j = 0; j < nk; ++j) {
      int32_t type = 0;
      int64_t value = 0, c = 0;
      t.cudnnBackendGetAttribute(knobs[size_t(j)], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &c, &type);
      t.cudnnBackendGetAttribute(knobs[size_t(j)], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &c, &value);
      w.scalar(type);
      w.scalar(value);
    }
    int64_t ws = 0;
    if (t.cudnnBackendGetAttribute(cfgs[size_t(i)], CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &cnt,
                                   &ws) != CUDNN_STATUS_SUCCESS) {
      ws = 0;
    }
    w.scalar(ws);
  }
  InvokeOutcome out = status(0, fn, "");
  out.out = w.take();
  return out;
}

InvokeOutcome run_global_count(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cudnnBackendGetAttribute(engine count)";
  ArgReader rd(args);
  uint64_t h = 0;
  cw::Graph g;
  rd.u64(&h);
  cw::read_graph(rd, &g);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  if (g.back().type != CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR) return bad(fn, "the root is no operation graph");
  std::string why;
  if (cudnnStatus_t s = cudnn_check_graph(g, &why); s != CUDNN_STATUS_SUCCESS) return status(s, fn, why);
  Start st = start(env, h, fn);
  if (!st.ok()) return st.refusal;
  if (!st.table->cudnnBackendGetAttribute) return refuse(kApi, CUDNN_STATUS_NOT_SUPPORTED, "cudnn: no GetAttribute");
  CudnnDescriptors descs(*st.table);
  if (cudnnStatus_t s = descs.build(g, st.handle, &why); s != CUDNN_STATUS_SUCCESS) return status(s, fn, why);
  int64_t count = 0, n = 0;
  cudnnStatus_t s = st.table->cudnnBackendGetAttribute(descs.root(), CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
                                                       CUDNN_TYPE_INT64, 1, &n, &count);
  if (s != CUDNN_STATUS_SUCCESS) return status(s, fn, "count");
  InvokeOutcome out = status(0, fn, "");
  ArgWriter w;
  w.scalar(count);
  out.out = w.take();
  return out;
}

InvokeOutcome run_plan_create(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cudnnBackendFinalize(plan)";
  ArgReader rd(args);
  uint64_t h = 0, plan_h = 0;
  cw::Graph g;
  rd.u64(&h);
  rd.u64(&plan_h);
  cw::read_graph(rd, &g);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  if (g.back().type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) return bad(fn, "the root is no execution plan");
  if (!protocol::is_minted(plan_h) || protocol::kind_of(plan_h) != kPlan) return bad(fn, "plan is no fresh handle");
  std::string why;
  if (cudnnStatus_t s = cudnn_check_graph(g, &why); s != CUDNN_STATUS_SUCCESS) return status(s, fn, why);
  Start st = start(env, h, fn);
  if (!st.ok()) return st.refusal;
  if (!st.table->cudnnBackendGetAttribute) return refuse(kApi, CUDNN_STATUS_NOT_SUPPORTED, "cudnn: no GetAttribute");
  auto plan = std::make_unique<CudnnPlan>(*st.table);
  if (cudnnStatus_t s = plan->descs.build(g, st.handle, &why); s != CUDNN_STATUS_SUCCESS) return status(s, fn, why);
  int64_t n = 0;
  cudnnStatus_t s = st.table->cudnnBackendGetAttribute(plan->descs.root(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                       CUDNN_TYPE_INT64, 1, &n, &plan->workspace);
  if (s != CUDNN_STATUS_SUCCESS || plan->workspace < 0) return status(s ? s : CUDNN_STATUS_INTERNAL_ERROR, fn, "workspace");
  for (const cw::Node& node : g) {
    cw::TensorFacts f;
    if (cw::tensor_facts(node, &f) && !f.is_virtual) {
      plan->tensor_bytes[f.uid] = cw::tensor_bytes(f.dtype, f.nd, f.dims, f.strides);
    }
  }
  const int64_t workspace = plan->workspace;
  CudnnPlan* raw = plan.get();
  if (!env.add(kPlan, plan_h, raw, 0, [](void* p) { delete static_cast<CudnnPlan*>(p); })) {
    return bad(fn, "plan handle not accepted");
  }
  plan.release();
  InvokeOutcome out = status(0, fn, "");
  ArgWriter w;
  w.scalar(workspace);
  out.out = w.take();
  return out;
}

InvokeOutcome run_plan_destroy(CallEnv& env, std::span<const std::byte> args) {
  ArgReader rd(args);
  uint64_t plan_h = 0;
  rd.u64(&plan_h);
  if (!rd.finish()) return bad("cudnnBackendDestroyDescriptor(plan)", "undecodable arguments");
  if (!env.remove(kPlan, plan_h)) return bad("cudnnBackendDestroyDescriptor(plan)", "not a live plan");
  return status(0, "", "");
}

InvokeOutcome run_plan_execute(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cudnnBackendExecute";
  ArgReader rd(args);
  uint64_t h = 0, plan_h = 0, n = 0, workspace = 0;
  rd.u64(&h);
  rd.u64(&plan_h);
  rd.u64(&n);
  if (rd.failed() || n > cw::kMaxVariantPack) return bad(fn, "undecodable arguments");
  std::vector<int64_t> uids(n);
  std::vector<uint64_t> ptrs(n);
  for (uint64_t i = 0; i < n; ++i) {
    rd.scalar(&uids[i]);
    rd.u64(&ptrs[i]);
  }
  rd.u64(&workspace);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  auto* plan = static_cast<CudnnPlan*>(env.find(kPlan, plan_h));
  if (!plan) return bad(fn, "plan is not a live execution plan");
  Start st = start(env, h, fn);
  if (!st.ok()) return st.refusal;
  for (const auto& [uid, bytes] : plan->tensor_bytes) {
    uint64_t i = 0;
    while (i < n && uids[i] != uid) ++i;
    if (i == n) return bad(fn, "the variant pack lacks tensor " + std::to_string(uid));
    if (!env.device_range(ptrs[i], bytes)) return bad(fn, "tensor " + std::to_string(uid) + " outside device memory");
  }
  if (plan->workspace > 0 && !env.device_range(workspace, uint64_t(plan->workspace))) {
    return bad(fn, "workspace outside device memory");
  }
  const CudnnTable& t = *st.table;
  if (!t.cudnnBackendExecute) return refuse(kApi, CUDNN_STATUS_NOT_SUPPORTED, "cudnn: no execute");
  CudnnDescriptors pack(t);
  cudnnBackendDescriptor_t vp = nullptr;
  cudnnStatus_t s = pack.make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp);
  std::vector<void*> pointers(n);
  for (uint64_t i = 0; i < n; ++i) pointers[i] = reinterpret_cast<void*>(static_cast<uintptr_t>(ptrs[i]));
  void* ws = reinterpret_cast<void*>(static_cast<uintptr_t>(workspace));
  if (s == CUDNN_STATUS_SUCCESS) {
    s = t.cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, int64_t(n), uids.data());
  }
  if (s == CUDNN_STATUS_SUCCESS) {
    s = t.cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, int64_t(n),
                                   pointers.data());
  }
  if (s == CUDNN_STATUS_SUCCESS) {
    s = t.cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
  }
  if (s == CUDNN_STATUS_SUCCESS) s = t.cudnnBackendFinalize(vp);
  if (s == CUDNN_STATUS_SUCCESS) s = t.cudnnBackendExecute(st.handle, plan->descs.root(), vp);
  return status(s, fn, "the library refused the execute");
}

// --- batch norm ------------------------------------------------------------

// A tensor descriptor and the address it describes, checked.
struct Tensor {
  cw::LegacyTensor desc;
  uint64_t ptr = 0;
};

bool read_tensor_ptr(ArgReader& r, Tensor* t) { return cw::read_tensor(r, &t->desc) && r.u64(&t->ptr); }

InvokeOutcome run_bn_forward_training(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cudnnBatchNormalizationForwardTrainingEx";
  ArgReader rd(args);
  uint64_t h = 0, scale = 0, bias = 0, rm = 0, rv = 0, sm = 0, siv = 0, ws = 0, ws_n = 0, rs = 0, rs_n = 0;
  uint32_t mode = 0, ops = 0;
  Scalar alpha, beta;
  double factor = 0, eps = 0;
  Tensor x, y;
  cw::LegacyTensor bn;
  rd.u64(&h);
  read_enum(rd, CUDNN_BATCHNORM_SPATIAL_PERSISTENT, &mode);
  read_enum(rd, CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION, &ops);
  read_scalar(rd, &alpha);
  read_scalar(rd, &beta);
  read_tensor_ptr(rd, &x);
  read_tensor_ptr(rd, &y);
  cw::read_tensor(rd, &bn);
  rd.u64(&scale), rd.u64(&bias), rd.scalar(&factor), rd.u64(&rm), rd.u64(&rv), rd.scalar(&eps);
  rd.u64(&sm), rd.u64(&siv), rd.u64(&ws), rd.u64(&ws_n), rd.u64(&rs), rd.u64(&rs_n);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  if (ops != CUDNN_BATCHNORM_OPS_BN) return refuse(kApi, CUDNN_STATUS_NOT_SUPPORTED, std::string(fn) + ": ops");
  if (!in_memory(env, x.desc, x.ptr, false) || !in_memory(env, y.desc, y.ptr, false) ||
      !in_memory(env, bn, scale, false) || !in_memory(env, bn, bias, false) || !in_memory(env, bn, rm, true) ||
      !in_memory(env, bn, rv, true) || !in_memory(env, bn, sm, true) || !in_memory(env, bn, siv, true) ||
      (ws_n > 0 && !env.device_range(ws, ws_n)) || (rs_n > 0 && !env.device_range(rs, rs_n))) {
    return bad(fn, "an operand outside device memory");
  }
  Start st = start(env, h, fn);
  if (!st.ok()) return st.refusal;
  if (!st.table->cudnnBatchNormalizationForwardTrainingEx) return refuse(kApi, CUDNN_STATUS_NOT_SUPPORTED, fn);
  LegacyDescs d(*st.table);
  cudnnTensorDescriptor_t xd, yd, bd;
  cudnnStatus_t s = d.make(x.desc, &xd);
  if (s == CUDNN_STATUS_SUCCESS) s = d.make(y.desc, &yd);
  if (s == CUDNN_STATUS_SUCCESS) s = d.make(bn, &bd);
  if (s == CUDNN_STATUS_SUCCESS) {
    s = st.table->cudnnBatchNormalizationForwardTrainingEx(
        st.handle, cudnnBatchNormMode_t(mode), cudnnBatchNormOps_t(ops), alpha.for_type(x.desc.dtype),
        beta.for_type(x.desc.dtype), xd, dev(x.ptr), nullptr, nullptr, yd, dev(y.ptr), bd, dev(scale), dev(bias),
        factor, dev(rm), dev(rv), eps, dev(sm), dev(siv), nullptr, dev(ws), ws_n, dev(rs), rs_n);
  }
  return status(s, fn, "the library refused");
}

InvokeOutcome run_bn_forward_inference(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cudnnBatchNormalizationForwardInference";
  ArgReader rd(args);
  uint64_t h = 0, scale = 0, bias = 0, mean = 0, var = 0;
  uint32_t mode = 0;
  Scalar alpha, beta;
  double eps = 0;
  Tensor x, y;
  cw::LegacyTensor bn;
  rd.u64(&h);
  read_enum(rd, CUDNN_BATCHNORM_SPATIAL_PERSISTENT, &mode);
  read_scalar(rd, &alpha);
  read_scalar(rd, &beta);
  read_tensor_ptr(rd, &x);
  read_tensor_ptr(rd, &y);
  cw::read_tensor(rd, &bn);
  rd.u64(&scale), rd.u64(&bias), rd.u64(&mean), rd.u64(&var), rd.scalar(&eps);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  if (!in_memory(env, x.desc, x.ptr, false) || !in_memory(env, y.desc, y.ptr, false) ||
      !in_memory(env, bn, scale, false) || !in_memory(env, bn, bias, false) || !in_memory(env, bn, mean, false) ||
      !in_memory(env, bn, var, false)) {
    return bad(fn, "an operand outside device memory");
  }
  Start st = start(env, h, fn);
  if (!st.ok()) return st.refusal;
  if (!st.table->cudnnBatchNormalizationForwardInference) return refuse(kApi, CUDNN_STATUS_NOT_SUPPORTED, fn);
  LegacyDescs d(*st.table);
  cudnnTensorDescriptor_t xd, yd, bd;
  cudnnStatus_t s = d.make(x.desc, &xd);
  if (s == CUDNN_STATUS_SUCCESS) s = d.make(y.desc, &yd);
  if (s == CUDNN_STATUS_SUCCESS) s = d.make(bn, &bd);
  if (s == CUDNN_STATUS_SUCCESS) {
    s = st.table->cudnnBatchNormalizationForwardInference(
        st.handle, cudnnBatchNormMode_t(mode), alpha.for_type(x.desc.dtype), beta.for_type(x.desc.dtype), xd,
        dev(x.ptr), yd, dev(y.ptr), bd, dev(scale), dev(bias), dev(mean), dev(var), eps);
  }
  return status(s, fn, "the library refused");
}

InvokeOutcome run_bn_backward(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cudnnBatchNormalizationBackwardEx";
  ArgReader rd(args);
  uint64_t h = 0, scale = 0, bias = 0, dscale = 0, dbias = 0, sm = 0, siv = 0, ws = 0, ws_n = 0, rs = 0, rs_n = 0;
  uint32_t mode = 0, ops = 0;
  Scalar ad, bd_, ap, bp;
  double eps = 0;
  Tensor x, dy, dx;
  cw::LegacyTensor bn;
  rd.u64(&h);
  read_enum(rd, CUDNN_BATCHNORM_SPATIAL_PERSISTENT, &mode);
  read_enum(rd, CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION, &ops);
  read_scalar(rd, &ad), read_scalar(rd, &bd_), read_scalar(rd, &ap), read_scalar(rd, &bp);
  read_tensor_ptr(rd, &x);
  read_tensor_ptr(rd, &dy);
  read_tensor_ptr(rd, &dx);
  cw::read_tensor(rd, &bn);
  rd.u64(&scale), rd.u64(&bias), rd.u64(&dscale), rd.u64(&dbias), rd.scalar(&eps), rd.u64(&sm), rd.u64(&siv);
  rd.u64(&ws), rd.u64(&ws_n), rd.u64(&rs), rd.u64(&rs_n);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  if (ops != CUDNN_BATCHNORM_OPS_BN) return refuse(kApi, CUDNN_STATUS_NOT_SUPPORTED, std::string(fn) + ": ops");
  if (!in_memory(env, x.desc, x.ptr, false) || !in_memory(env, dy.desc, dy.ptr, false) ||
      !in_memory(env, dx.desc, dx.ptr, false) || !in_memory(env, bn, scale, false) ||
      !in_memory(env, bn, bias, true) || !in_memory(env, bn, dscale, false) || !in_memory(env, bn, dbias, false) ||
      !in_memory(env, bn, sm, true) || !in_memory(env, bn, siv, true) || (ws_n > 0 && !env.device_range(ws, ws_n)) ||
      (rs_n > 0 && !env.device_range(rs, rs_n))) {
    return bad(fn, "an operand outside device memory");
  }
  Start st = start(env, h, fn);
  if (!st.ok()) return st.refusal;
  if (!st.table->cudnnBatchNormalizationBackwardEx) return refuse(kApi, CUDNN_STATUS_NOT_SUPPORTED, fn);
  LegacyDescs d(*st.table);
  cudnnTensorDescriptor_t xd, dyd, dxd, bnd;
  cudnnStatus_t s = d.make(x.desc, &xd);
  if (s == CUDNN_STATUS_SUCCESS) s = d.make(dy.desc, &dyd);
  if (s == CUDNN_STATUS_SUCCESS) s = d.make(dx.desc, &dxd);
  if (s == CUDNN_STATUS_SUCCESS) s = d.make(bn, &bnd);
  if (s == CUDNN_STATUS_SUCCESS) {
    const int32_t dt = x.desc.dtype;
    s = st.table->cudnnBatchNormalizationBackwardEx(
        st.handle, cudnnBatchNormMode_t(mode), cudnnBatchNormOps_t(ops), ad.for_type(dt), bd_.for_type(dt),
        ap.for_type(dt), bp.for_type(dt), xd, dev(x.ptr), xd, nullptr, dyd, dev(dy.ptr), nullptr, nullptr, dxd,
        dev(dx.ptr), bnd, dev(scale), dev(bias), dev(dscale), dev(dbias), eps, dev(sm), dev(siv), nullptr, dev(ws),
        ws_n, dev(rs), rs_n);
  }
  return status(s, fn, "the library refused");
}

// which: 0 forward training workspace (x, y, bn), 1 backward workspace
// (x, y, dy, dx, bn), 2 training reserve space (x).
InvokeOutcome run_bn_sizes(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cudnnGetBatchNormalization*Size";
  ArgReader rd(args);
  uint64_t which = 0, h = 0;
  uint32_t mode = 0, ops = 0;
  rd.u64(&which);
  rd.u64(&h);
  read_enum(rd, CUDNN_BATCHNORM_SPATIAL_PERSISTENT, &mode);
  read_enum(rd, CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION, &ops);
  const int count = which == 0 ? 3 : which == 1 ? 5 : which == 2 ? 1 : 0;
  if (count == 0) return bad(fn, "unknown size");
  cw::LegacyTensor t[5];
  for (int i = 0; i < count; ++i) cw::read_tensor(rd, &t[i]);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  Start st = start(env, h, fn);
  if (!st.ok()) return st.refusal;
  const CudnnTable& tb = *st.table;
  LegacyDescs d(tb);
  cudnnTensorDescriptor_t td[5] = {};
  cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
  for (int i = 0; i < count && s == CUDNN_STATUS_SUCCESS; ++i) s = d.make(t[i], &td[i]);
  size_t size = 0;
  const auto m = cudnnBatchNormMode_t(mode);
  const auto o = cudnnBatchNormOps_t(ops);
  if (s == CUDNN_STATUS_SUCCESS) {
    if (which == 0 && tb.cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize) {
      s = tb.cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(st.handle, m, o, td[0], nullptr, td[1], td[2],
                                                                      nullptr, &size);
    } else if (which == 1 && tb.cudnnGetBatchNormalizationBackwardExWorkspaceSize) {
      s = tb.cudnnGetBatchNormalizationBackwardExWorkspaceSize(st.handle, m, o, td[0], td[1], td[2], nullptr, td[3],
                                                               td[4], nullptr, &size);
    } else if (which == 2 && tb.cudnnGetBatchNormalizationTrainingExReserveSpaceSize) {
      s = tb.cudnnGetBatchNormalizationTrainingExReserveSpaceSize(st.handle, m, o, nullptr, td[0], &size);
    } else {
      s = CUDNN_STATUS_NOT_SUPPORTED;
    }
  }
  InvokeOutcome out = status(s, fn, "the library refused");
  if (s != CUDNN_STATUS_SUCCESS) return out;
  ArgWriter w;
  w.u64(size);
  out.out = w.take();
  return out;
}

InvokeOutcome run_version(CallEnv& env, std::span<const std::byte> args) {
  ArgReader rd(args);
  if (!rd.finish()) return bad("cudnnGetVersion", "undecodable arguments");
  const auto* t = library_table<CudnnTable>(env);
  if (!t || !t->cudnnGetVersion) return refuse(kApi, CUDNN_STATUS_NOT_SUPPORTED, "cudnn: not on this server");
  InvokeOutcome out = status(0, "", "");
  ArgWriter w;
  w.u64(t->cudnnGetVersion());
  out.out = w.take();
  return out;
}

const DispatchRow kRows[] = {
    {"cudnnBackendFinalize(heuristics)", kApi, cw::kHeuristics, true, false, &run_heuristics},
    {"cudnnBackendGetAttribute(engine count)", kApi, cw::kGlobalCount, true, false, &run_global_count},
    {"cudnnBackendFinalize(plan)", kApi, cw::kPlanCreate, true, false, &run_plan_create},
    {"cudnnBackendDestroyDescriptor(plan)", kApi, cw::kPlanDestroy, false, false, &run_plan_destroy},
    {"cudnnBackendExecute", kApi, cw::kPlanExecute, false, false, &run_plan_execute},
    {"cudnnBatchNormalizationForwardTrainingEx", kApi, cw::kBnForwardTraining, false, false, &run_bn_forward_training},
    {"cudnnBatchNormalizationForwardInference", kApi, cw::kBnForwardInference, false, false, &run_bn_forward_inference},
    {"cudnnBatchNormalizationBackwardEx", kApi, cw::kBnBackward, false, false, &run_bn_backward},
    {"cudnnGetBatchNormalization*Size", kApi, cw::kBnSizes, true, false, &run_bn_sizes},
    {"cudnnGetVersion", kApi, cw::kVersion, true, true, &run_version},
};

}  // namespace

const DispatchRow* find_cudnn_hand_row(uint32_t function) {
  for (const DispatchRow& r : kRows) {
    if (r.function == function) return &r;
  }
  return find_cudnn_rnn_row(function);
}

}  // namespace rgpu::server
