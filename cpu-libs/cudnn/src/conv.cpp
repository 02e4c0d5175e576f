// Convolutions of execution plans: derived from the operation graph at
// finalize, computed at execute with oneDNN's convolution primitives on the
// operands' dense float32 form (layout.h), in stream order (job.h).
#include "conv.h"

#include <cstring>
#include <memory>
#include <vector>

#include "backend.h"
#include "handle.h"
#include "job.h"

namespace rgpu::cpudnn {

namespace {

bool int64s(const Desc& d, int name, int64_t* out, int max, int* n) {
  const Desc::Value* v = d.find(name);
  if (!v || v->type != CUDNN_TYPE_INT64 || v->count < 1 || v->count > max) return false;
  std::memcpy(out, v->bytes.data(), size_t(v->count) * 8);
  *n = int(v->count);
  return true;
}

bool tensor(const Desc* t, Strided* s, int64_t* uid) {
  if (!t || t->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR) return false;
  int nd = 0, ns = 0, nu = 0;
  if (!int64s(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, s->dims, 8, &nd) ||
      !int64s(*t, CUDNN_ATTR_TENSOR_STRIDES, s->strides, 8, &ns) || nd != ns ||
      !int64s(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, uid, 1, &nu)) {
    return false;
  }
  const Desc::Value* dt = t->find(CUDNN_ATTR_TENSOR_DATA_TYPE);
  if (!dt || dt->bytes.size() != 4) return false;
  std::memcpy(&s->dtype, dt->bytes.data(), 4);
  s->nd = nd;
  for (int i = 0; i < nd; ++i) {
    if (s->dims[i] < 1 || s->strides[i] < 0) return false;
  }
  return supported_dtype(s->dtype);
}

bool scale(const Desc& op, int name, double* out) {
  const Desc::Value* v = op.find(name);
  if (!v) return true;  // cuDNN's defaults: alpha 1, beta 0 (set by the caller's initial value)
  if (v->type == CUDNN_TYPE_FLOAT && v->bytes.size() == 4) {
    float f;
    std::memcpy(&f, v->bytes.data(), 4);
    *out = f;
    return true;
  }
  if (v->type == CUDNN_TYPE_DOUBLE && v->bytes.size() == 8) {
    std::memcpy(out, v->bytes.data(), 8);
    return true;
  }
  return false;
}

uint64_t span_bytes(const Strided& s) {
  uint64_t last = 0;
  for (int i = 0; i < s.nd; ++i) last += uint64_t(s.dims[i] - 1) * uint64_t(s.strides[i]);
  return (last + 1) * (s.dtype == 0 ? 4 : s.dtype == 1 ? 8 : 2);
}

// Mirrors every filter's spatial extent (CUDNN_CONVOLUTION against oneDNN's
// cross-correlation). `w` is dense [K, C, k0, k1, ...], `n` elements.
void mirror(float* w, size_t n, const Strided& s) {
  size_t inner = 1;
  for (int i = 2; i < s.nd; ++i) inner *= size_t(s.dims[i]);
  const size_t filters = n / inner;
  std::vector<float> tmp(inner);
  for (size_t f = 0; f < filters; ++f) {
    float* p = w + f * inner;
    for (size_t i = 0; i < inner; ++i) tmp[i] = p[inner - 1 - i];  // every spatial axis reversed
    std::memcpy(p, tmp.data(), inner * 4);
  }
}

dnnl::memory::format_tag plain(size_t n) {
  using tag = dnnl::memory::format_tag;
  return n == 3 ? tag::abc : n == 4 ? tag::abcd : n == 5 ? tag::abcde : tag::abcdef;
}

}  // namespace

cudnnStatus_t derive_conv(const Desc& graph, ConvPlan* out, std::string* why) {
  const Desc::Value* ops = graph.find(CUDNN_ATTR_OPERATIONGRAPH_OPS);
  if (!ops || ops->refs.size() != 1) {
    *why = "not one operation";
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  const Desc& op = *ops->refs[0];
  ConvPlan p;
  int xa, wa, ya, ca, al, be;
  switch (op.type) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
      p.kind = ConvPlan::kForward;
      xa = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, wa = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W;
      ya = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, ca = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC;
      al = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, be = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA;
      break;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
      p.kind = ConvPlan::kBackwardData;
      xa = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, wa = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W;
      ya = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, ca = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC;
      al = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, be = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA;
      break;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
      p.kind = ConvPlan::kBackwardFilter;
      xa = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, wa = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW;
      ya = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, ca = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC;
      al = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, be = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA;
      break;
    default:
      *why = "not a convolution";
      return CUDNN_STATUS_NOT_SUPPORTED;
  }
  if (!tensor(op.ref(xa), &p.x, &p.x_uid) || !tensor(op.ref(wa), &p.w, &p.w_uid) ||
      !tensor(op.ref(ya), &p.y, &p.y_uid)) {
    *why = "a tensor without dims, strides, uid or a supported type";
    return CUDNN_STATUS_BAD_PARAM;
  }
  if (!scale(op, al, &p.alpha) || !scale(op, be, &p.beta)) {
    *why = "alpha or beta";
    return CUDNN_STATUS_BAD_PARAM;
  }
  const Desc* conv = op.ref(ca);
  int64_t spatial = 0, mode = 0;
  int n = 0, np = 0, nq = 0, ns = 0, nd = 0;
  const Desc::Value* m = conv ? conv->find(CUDNN_ATTR_CONVOLUTION_CONV_MODE) : nullptr;
  if (!conv || !int64s(*conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, &spatial, 1, &n) || !m || m->bytes.size() != 4 ||
      !int64s(*conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, p.pre_pad, 3, &np) ||
      !int64s(*conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, p.post_pad, 3, &nq) ||
      !int64s(*conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, p.stride, 3, &ns) ||
      !int64s(*conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, p.dilation, 3, &nd)) {
    *why = "an incomplete convolution descriptor";
    return CUDNN_STATUS_BAD_PARAM;
  }
  std::memcpy(&mode, m->bytes.data(), 4);
  p.spatial = int(spatial);
  p.flip = int32_t(mode) == CUDNN_CONVOLUTION;
  if (p.spatial < 1 || p.spatial > 3 || np != p.spatial || nq != p.spatial || ns != p.spatial || nd != p.spatial ||
      p.x.nd != p.spatial + 2 || p.w.nd != p.x.nd || p.y.nd != p.x.nd) {
    *why = "dimensions that disagree";
    return CUDNN_STATUS_BAD_PARAM;
  }
  const int64_t c = p.x.dims[1], k = p.w.dims[0], cg = p.w.dims[1];
  if (c % cg != 0 || k % (c / cg) != 0 || p.y.dims[1] != k || p.y.dims[0] != p.x.dims[0]) {
    *why = "channels that disagree";
    return CUDNN_STATUS_BAD_PARAM;
  }
  p.groups = c / cg;
  for (int i = 0; i < p.spatial; ++i) {
    const int64_t in = p.x.dims[2 + i], kk = p.w.dims[2 + i];
    if (p.stride[i] < 1 || p.dilation[i] < 1 || p.pre_pad[i] < 0 || p.post_pad[i] < 0) {
      *why = "a stride, dilation or padding out of range";
      return CUDNN_STATUS_BAD_PARAM;
    }
    const int64_t span = in + p.pre_pad[i] + p.post_pad[i] - p.dilation[i] * (kk - 1) - 1;
    if (span < 0 || span / p.stride[i] + 1 != p.y.dims[2 + i]) {
      *why = "an output size the convolution does not give";
      return CUDNN_STATUS_BAD_PARAM;
    }
  }
  *out = p;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t run_conv(cudnnContext* handle, const ConvPlan& plan, const Desc& pack) {
  const Desc::Value* uids = pack.find(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  const Desc::Value* ptrs = pack.find(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  if (!uids || !ptrs || uids->count != ptrs->count) return CUDNN_STATUS_BAD_PARAM;
  auto pointer = [&](int64_t uid) -> CUdeviceptr {
    for (int64_t i = 0; i < uids->count; ++i) {
      int64_t u;
      std::memcpy(&u, uids->bytes.data() + i * 8, 8);
      if (u == uid) {
        CUdeviceptr p;
        std::memcpy(&p, ptrs->bytes.data() + i * 8, 8);
        return p;
      }
    }
    return 0;
  };
  const CUdeviceptr px = pointer(plan.x_uid), pw = pointer(plan.w_uid), py = pointer(plan.y_uid);
  if (!px || !pw || !py) return CUDNN_STATUS_BAD_PARAM;

  auto job = std::make_unique<Job>();
  const bool out_x = plan.kind == ConvPlan::kBackwardData, out_w = plan.kind == ConvPlan::kBackwardFilter,
             out_y = plan.kind == ConvPlan::kForward;
  // Outputs are read too: only their elements are written back, and beta
  // may blend the old values in.
  const size_t ix = job->add({px, span_bytes(plan.x), true, out_x});
  const size_t iw = job->add({pw, span_bytes(plan.w), true, out_w});
  const size_t iy = job->add({py, span_bytes(plan.y), true, out_y});
  dnnl::engine engine = handle->engine;
  job->compute = [plan, engine, ix, iw, iy](Job& j) {
    using dnnl::memory;
    using Use = DenseF32::Use;
    const auto kind = plan.kind;
    // Dense float32 operands; oneDNN reads and writes a job's host copy in
    // place where it already is one. A mirrored filter is always a copy.
    DenseF32 x(plan.x, j.host(ix), kind == ConvPlan::kBackwardData ? Use::kOutput : Use::kInput, plan.alpha,
               plan.beta);
    DenseF32 w(plan.w, j.host(iw), kind == ConvPlan::kBackwardFilter ? Use::kOutput : Use::kInput, plan.alpha,
               plan.beta, !plan.flip);
    DenseF32 y(plan.y, j.host(iy), kind == ConvPlan::kForward ? Use::kOutput : Use::kInput, plan.alpha, plan.beta);
    if (plan.flip && kind != ConvPlan::kBackwardFilter) mirror(w.data(), w.count(), plan.w);

    memory::dims xd(plan.x.dims, plan.x.dims + plan.x.nd), yd(plan.y.dims, plan.y.dims + plan.y.nd), wd;
    if (plan.groups > 1) {
      wd.push_back(plan.groups);
      wd.push_back(plan.w.dims[0] / plan.groups);
      wd.insert(wd.end(), plan.w.dims + 1, plan.w.dims + plan.w.nd);
    } else {
      wd.assign(plan.w.dims, plan.w.dims + plan.w.nd);
    }
    const memory::desc xm(xd, memory::data_type::f32, plain(xd.size()));
    const memory::desc wm(wd, memory::data_type::f32, plain(wd.size()));
    const memory::desc ym(yd, memory::data_type::f32, plain(yd.size()));
    memory::dims strides, dilates, pad_l, pad_r;
    for (int i = 0; i < plan.spatial; ++i) {
      strides.push_back(plan.stride[i]);
      dilates.push_back(plan.dilation[i] - 1);  // oneDNN counts the gaps
      pad_l.push_back(plan.pre_pad[i]);
      pad_r.push_back(plan.post_pad[i]);
    }
    // Each call makes its primitives here, on the thread that executes them:
    // oneDNN's default (library-managed) scratchpad belongs to the creating
    // thread, and a job runs on whichever host-function thread its stream
    // gives it. Making one again is cheap: oneDNN keeps a process-wide cache
    // of primitive implementations (1024 by default; the variable
    // ONEDNN_PRIMITIVE_CACHE_CAPACITY), so a repeated shape costs a
    // descriptor and a lookup, tens of microseconds, and no kernel generation.
    //
    // Layouts: oneDNN chooses them (format_tag::any), and the operands are
    // reordered from and to the plain dense form around the convolution. On
    // plain nchw it can only run im2col and SGEMM (`gemm:jit`); given the
    // choice it takes channel-blocked layouts (nChw16c, its `jit:avx512_core`
    // and `jit:avx2` kernels), which with the reorders counted take 0.4 to
    // 0.95 of the time forward, 0.15 to 0.75 for the filter gradient and
    // 0.45 to 0.6 for the data gradient (3x3 convolutions of 16 images,
    // 3 to 64 channels at 8x8 to 32x32, one thread, medians). Backward data
    // keeps the plain layout when the data has fewer than 16 channels per
    // group: padded to a block of 16, it is slower there (1.2x at 8
    // channels, 3x at 3).
    using namespace dnnl;
    const bool blocked = kind != ConvPlan::kBackwardData || plan.x.dims[1] / plan.groups >= 16;
    const memory::desc xc = blocked ? memory::desc(xd, memory::data_type::f32, memory::format_tag::any) : xm;
    const memory::desc wc = blocked ? memory::desc(wd, memory::data_type::f32, memory::format_tag::any) : wm;
    const memory::desc yc = blocked ? memory::desc(yd, memory::data_type::f32, memory::format_tag::any) : ym;
    convolution_forward::desc fd(prop_kind::forward_training, algorithm::convolution_direct, xc, wc, yc, strides,
                                 dilates, pad_l, pad_r);
    const convolution_forward::primitive_desc fpd(fd, engine);
    memory xmem(xm, engine, x.data()), wmem(wm, engine, w.data()), ymem(ym, engine, y.data());
    stream s(engine);
    // An operand in the layout `want`: the dense one itself, or a copy
    // (reordered from it when it is an input).
    auto as = [&](memory& dense, const memory::desc& want, bool input) {
      if (want == dense.get_desc()) return dense;
      memory m(want, engine);
      if (input) reorder(dense, m).execute(s, dense, m);
      return m;
    };
    memory out, out_dense;  // an output computed in another layout, and where it goes
    if (kind == ConvPlan::kForward) {
      memory xi = as(xmem, fpd.src_desc(), true), wi = as(wmem, fpd.weights_desc(), true);
      out = as(ymem, fpd.dst_desc(), false), out_dense = ymem;
      convolution_forward(fpd).execute(s, {{DNNL_ARG_SRC, xi}, {DNNL_ARG_WEIGHTS, wi}, {DNNL_ARG_DST, out}});
    } else if (kind == ConvPlan::kBackwardData) {
      convolution_backward_data::desc bd(algorithm::convolution_direct, xc, wc, yc, strides, dilates, pad_l, pad_r);
      const convolution_backward_data::primitive_desc pd(bd, engine, fpd);
      memory yi = as(ymem, pd.diff_dst_desc(), true), wi = as(wmem, pd.weights_desc(), true);
      out = as(xmem, pd.diff_src_desc(), false), out_dense = xmem;
      convolution_backward_data(pd).execute(
          s, {{DNNL_ARG_DIFF_DST, yi}, {DNNL_ARG_WEIGHTS, wi}, {DNNL_ARG_DIFF_SRC, out}});
    } else {
      convolution_backward_weights::desc bd(algorithm::convolution_direct, xc, wc, yc, strides, dilates, pad_l,
                                            pad_r);
      const convolution_backward_weights::primitive_desc pd(bd, engine, fpd);
      memory xi = as(xmem, pd.src_desc(), true), yi = as(ymem, pd.diff_dst_desc(), true);
      out = as(wmem, pd.diff_weights_desc(), false), out_dense = wmem;
      convolution_backward_weights(pd).execute(
          s, {{DNNL_ARG_SRC, xi}, {DNNL_ARG_DIFF_DST, yi}, {DNNL_ARG_DIFF_WEIGHTS, out}});
    }
    if (out.get(true) != out_dense.get(true)) reorder(out, out_dense).execute(s, out, out_dense);
    s.wait();
    if (kind == ConvPlan::kForward) y.store();
    if (kind == ConvPlan::kBackwardData) x.store();
    if (kind == ConvPlan::kBackwardFilter) {
      if (plan.flip) mirror(w.data(), w.count(), plan.w);
      w.store();
    }
  };
  job->usage = handle->usage;
  ContextGuard guard(handle->ctx);
  if (!guard.ok()) return CUDNN_STATUS_EXECUTION_FAILED;
  return submit(std::move(job), handle->stream);
}

}  // namespace rgpu::cpudnn
