// Batch normalization (the legacy cudnnBatchNormalization* calls PyTorch
// makes) with oneDNN's batch normalization primitive on the operands' dense
// float32 form, in stream order. Each call makes its primitives on the
// thread that runs them (oneDNN's own process-wide cache makes that cheap,
// conv.cpp). Spatial mode normalises each channel over N and the spatial
// dims; per-activation mode each C x spatial element over N (computed as
// channels of a 1x1 image). Activations and the z input of the
// Ex forms (CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION, ...) are not supported.
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "handle.h"
#include "job.h"
#include "tensor_desc.h"

namespace rgpu::cpudnn {
namespace {

uint64_t span_bytes(const Strided& s) {
  uint64_t last = 0;
  for (int i = 0; i < s.nd; ++i) last += uint64_t(s.dims[i] - 1) * uint64_t(s.strides[i]);
  return (last + 1) * (s.dtype == 0 ? 4 : s.dtype == 1 ? 8 : 2);
}

// The shape oneDNN normalises: N x channels x spatial.
struct Shape {
  int64_t n = 0, c = 0, spatial = 1;
};

bool shape_of(const Strided& x, cudnnBatchNormMode_t mode, const Strided& param, Shape* s) {
  if (x.nd < 2) return false;
  s->n = x.dims[0];
  int64_t rest = 1;
  for (int i = 2; i < x.nd; ++i) rest *= x.dims[i];
  if (mode == CUDNN_BATCHNORM_PER_ACTIVATION) {
    s->c = x.dims[1] * rest;
    s->spatial = 1;
  } else {
    s->c = x.dims[1];
    s->spatial = rest;
  }
  return int64_t(param.count()) == s->c;
}

double host_scalar(const void* p, int32_t dtype) {
  if (dtype == CUDNN_DATA_DOUBLE) {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

// The data as oneDNN sees it: 4-D {N, C, spatial, 1} in plain (nchw) order,
// the same bytes as any dense NC... tensor. 4-D rather than {N, C, spatial}:
// oneDNN 2.6 picks its optimized plain-layout kernel (`ncsp_bnorm`) for a
// 4-D (or 5-D) tensor but falls back to the reference one (`bnorm_ref`) for
// this 3-D one, about ten times slower (16x8x32x32 float: 1.7 ms against
// 0.17 ms forward on 2 cores). The results may differ in the last bits (it
// sums in another order); the statistics PyTorch sees (saved mean and
// inverse variance, running averages) are derived from them below as cuDNN
// defines them, whatever the kernel. A blocked layout (nChw16c, the jit
// kernels') would need a reorder each way.
dnnl::memory::desc data_md(const Shape& s) {
  return dnnl::memory::desc({s.n, s.c, s.spatial, 1}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::abcd);
}
dnnl::memory::desc param_md(const Shape& s) {
  return dnnl::memory::desc({s.c}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
}

// An operand: its device span and its layout (a copy: the caller may
// destroy its descriptor before the stream runs the work).
struct Operand {
  Strided t;
  CUdeviceptr ptr = 0;
  size_t index = 0;
};

size_t add(Job& job, Operand& op, bool write) {
  op.index = job.add({op.ptr, span_bytes(op.t), true, write});
  return op.index;
}

std::vector<float> load(Job& j, const Operand& op) {
  std::vector<float> v(op.t.count());
  gather(op.t, j.host(op.index), v.data());
  return v;
}

cudnnStatus_t queue(cudnnHandle_t handle, std::unique_ptr<Job> job) {
  job->usage = handle->usage;
  ContextGuard guard(handle->ctx);
  if (!guard.ok()) return CUDNN_STATUS_EXECUTION_FAILED;
  return submit(std::move(job), handle->stream);
}

bool same_shape(const Strided& a, const Strided& b) {
  if (a.nd != b.nd) return false;
  for (int i = 0; i < a.nd; ++i) {
    if (a.dims[i] != b.dims[i]) return false;
  }
  return true;
}

}  // namespace
}  // namespace rgpu::cpudnn

using namespace rgpu::cpudnn;

RGPU_EXPORT cudnnStatus_t cudnnBatchNormalizationForwardTrainingEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t xDesc, const void* xData, const cudnnTensorDescriptor_t zDesc, const void* zData,
    const cudnnTensorDescriptor_t yDesc, void* yData, const cudnnTensorDescriptor_t bnDesc, const void* bnScale,
    const void* bnBias, double factor, void* runningMean, void* runningVar, double epsilon, void* saveMean,
    void* saveInvVariance, cudnnActivationDescriptor_t activationDesc, void* workspace, size_t workSpaceSizeInBytes,
    void* reserveSpace, size_t reserveSpaceSizeInBytes) {
  (void)zDesc, (void)workspace, (void)workSpaceSizeInBytes, (void)reserveSpace, (void)reserveSpaceSizeInBytes;
  return guarded("cudnnBatchNormalizationForwardTrainingEx", [&]() -> cudnnStatus_t {
    const Strided *x = strided(xDesc), *y = strided(yDesc), *p = strided(bnDesc);
    if (!handle || !alpha || !beta || !x || !y || !p || !xData || !yData || !bnScale || !bnBias ||
        !same_shape(*x, *y) || (runningMean == nullptr) != (runningVar == nullptr) ||
        (saveMean == nullptr) != (saveInvVariance == nullptr)) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    if (bnOps != CUDNN_BATCHNORM_OPS_BN || zData || activationDesc) return CUDNN_STATUS_NOT_SUPPORTED;
    Shape s;
    if (!shape_of(*x, mode, *p, &s)) return CUDNN_STATUS_BAD_PARAM;
    const double a = host_scalar(alpha, x->dtype), b = host_scalar(beta, x->dtype);
    auto job = std::make_unique<Job>();
    Operand ox{*x, CUdeviceptr(xData)}, oy{*y, CUdeviceptr(yData)}, osc{*p, CUdeviceptr(bnScale)},
        obi{*p, CUdeviceptr(bnBias)}, orm{*p, CUdeviceptr(runningMean)}, orv{*p, CUdeviceptr(runningVar)},
        osm{*p, CUdeviceptr(saveMean)}, osv{*p, CUdeviceptr(saveInvVariance)};
    add(*job, ox, false);
    add(*job, oy, true);
    add(*job, osc, false);
    add(*job, obi, false);
    const bool running = runningMean != nullptr, save = saveMean != nullptr;
    if (running) add(*job, orm, true), add(*job, orv, true);
    if (save) add(*job, osm, true), add(*job, osv, true);
    dnnl::engine engine = handle->engine;
    job->compute = [=](Job& j) {
      DenseF32 xv(ox.t, j.host(ox.index), DenseF32::kInput), yv(oy.t, j.host(oy.index), DenseF32::kOutput, a, b);
      std::vector<float> sc = load(j, osc), bi = load(j, obi), mean(size_t(s.c)), var(size_t(s.c));
      using F = dnnl::normalization_flags;
      const F flags = F::use_scale | F::use_shift;
      using BN = dnnl::batch_normalization_forward;
      const BN prim(BN::primitive_desc(BN::desc(dnnl::prop_kind::forward_training, data_md(s), float(epsilon), flags),
                                       engine));
      dnnl::stream st(engine);
      dnnl::memory xm(data_md(s), engine, xv.data()), ym(data_md(s), engine, yv.data()),
          scm(param_md(s), engine, sc.data()), bim(param_md(s), engine, bi.data()),
          mm(param_md(s), engine, mean.data()), vm(param_md(s), engine, var.data());
      prim.execute(st, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}, {DNNL_ARG_SCALE, scm},
                        {DNNL_ARG_SHIFT, bim}, {DNNL_ARG_MEAN, mm}, {DNNL_ARG_VARIANCE, vm}});
      st.wait();
      yv.store();
      if (running) {
        // cuDNN's running variance is the unbiased one.
        const double m = double(s.n) * double(s.spatial), unbias = m > 1 ? m / (m - 1) : 1.0;
        std::vector<float> v(var.size());
        for (size_t i = 0; i < var.size(); ++i) v[i] = float(var[i] * unbias);
        scatter(orm.t, mean.data(), j.host(orm.index), factor, 1.0 - factor);
        scatter(orv.t, v.data(), j.host(orv.index), factor, 1.0 - factor);
      }
      if (save) {
        std::vector<float> inv(var.size());
        for (size_t i = 0; i < var.size(); ++i) inv[i] = float(1.0 / std::sqrt(double(var[i]) + epsilon));
        scatter(osm.t, mean.data(), j.host(osm.index), 1.0, 0.0);
        scatter(osv.t, inv.data(), j.host(osv.index), 1.0, 0.0);
      }
    };
    return queue(handle, std::move(job));
  });
}

RGPU_EXPORT cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t xDesc, const void* x_, const cudnnTensorDescriptor_t yDesc, void* y_,
    const cudnnTensorDescriptor_t bnDesc, const void* bnScale, const void* bnBias, const void* estimatedMean,
    const void* estimatedVariance, double epsilon) {
  return guarded("cudnnBatchNormalizationForwardInference", [&]() -> cudnnStatus_t {
    const Strided *x = strided(xDesc), *y = strided(yDesc), *p = strided(bnDesc);
    if (!handle || !alpha || !beta || !x || !y || !p || !x_ || !y_ || !bnScale || !bnBias || !estimatedMean ||
        !estimatedVariance || !same_shape(*x, *y)) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    Shape s;
    if (!shape_of(*x, mode, *p, &s)) return CUDNN_STATUS_BAD_PARAM;
    const double a = host_scalar(alpha, x->dtype), b = host_scalar(beta, x->dtype);
    auto job = std::make_unique<Job>();
    Operand ox{*x, CUdeviceptr(x_)}, oy{*y, CUdeviceptr(y_)}, osc{*p, CUdeviceptr(bnScale)},
        obi{*p, CUdeviceptr(bnBias)}, om{*p, CUdeviceptr(estimatedMean)}, ov{*p, CUdeviceptr(estimatedVariance)};
    add(*job, ox, false);
    add(*job, oy, true);
    add(*job, osc, false);
    add(*job, obi, false);
    add(*job, om, false);
    add(*job, ov, false);
    dnnl::engine engine = handle->engine;
    job->compute = [=](Job& j) {
      DenseF32 xv(ox.t, j.host(ox.index), DenseF32::kInput), yv(oy.t, j.host(oy.index), DenseF32::kOutput, a, b);
      std::vector<float> sc = load(j, osc), bi = load(j, obi), mean = load(j, om), var = load(j, ov);
      using F = dnnl::normalization_flags;
      const F flags = F::use_global_stats | F::use_scale | F::use_shift;
      using BN = dnnl::batch_normalization_forward;
      const BN prim(BN::primitive_desc(
          BN::desc(dnnl::prop_kind::forward_inference, data_md(s), float(epsilon), flags), engine));
      dnnl::stream st(engine);
      dnnl::memory xm(data_md(s), engine, xv.data()), ym(data_md(s), engine, yv.data()),
          scm(param_md(s), engine, sc.data()), bim(param_md(s), engine, bi.data()),
          mm(param_md(s), engine, mean.data()), vm(param_md(s), engine, var.data());
      prim.execute(st, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}, {DNNL_ARG_SCALE, scm},
                        {DNNL_ARG_SHIFT, bim}, {DNNL_ARG_MEAN, mm}, {DNNL_ARG_VARIANCE, vm}});
      st.wait();
      yv.store();
    };
    return queue(handle, std::move(job));
  });
}

RGPU_EXPORT cudnnStatus_t cudnnBatchNormalizationBackwardEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const void* alphaDataDiff,
    const void* betaDataDiff, const void* alphaParamDiff, const void* betaParamDiff,
    const cudnnTensorDescriptor_t xDesc, const void* xData, const cudnnTensorDescriptor_t yDesc, const void* yData,
    const cudnnTensorDescriptor_t dyDesc, const void* dyData, const cudnnTensorDescriptor_t dzDesc, void* dzData,
    const cudnnTensorDescriptor_t dxDesc, void* dxData, const cudnnTensorDescriptor_t dBnDesc,
    const void* bnScaleData, const void* bnBiasData, void* dBnScaleData, void* dBnBiasData, double epsilon,
    const void* savedMean, const void* savedInvVariance, cudnnActivationDescriptor_t activationDesc,
    void* workSpace, size_t workSpaceSizeInBytes, void* reserveSpace, size_t reserveSpaceSizeInBytes) {
  (void)yDesc, (void)yData, (void)dzDesc, (void)workSpace, (void)workSpaceSizeInBytes;
  (void)reserveSpace, (void)reserveSpaceSizeInBytes;
  return guarded("cudnnBatchNormalizationBackwardEx", [&]() -> cudnnStatus_t {
    const Strided *x = strided(xDesc), *dy = strided(dyDesc), *dx = strided(dxDesc), *p = strided(dBnDesc);
    if (!handle || !alphaDataDiff || !betaDataDiff || !alphaParamDiff || !betaParamDiff || !x || !dy || !dx || !p ||
        !xData || !dyData || !dxData || !bnScaleData || !dBnScaleData || !dBnBiasData || !same_shape(*x, *dy) ||
        !same_shape(*x, *dx) || (savedMean == nullptr) != (savedInvVariance == nullptr)) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    if (bnOps != CUDNN_BATCHNORM_OPS_BN || dzData || activationDesc) return CUDNN_STATUS_NOT_SUPPORTED;
    Shape s;
    if (!shape_of(*x, mode, *p, &s)) return CUDNN_STATUS_BAD_PARAM;
    const double ad = host_scalar(alphaDataDiff, x->dtype), bd = host_scalar(betaDataDiff, x->dtype),
                 ap = host_scalar(alphaParamDiff, x->dtype), bp = host_scalar(betaParamDiff, x->dtype);
    auto job = std::make_unique<Job>();
    Operand ox{*x, CUdeviceptr(xData)}, ody{*dy, CUdeviceptr(dyData)}, odx{*dx, CUdeviceptr(dxData)},
        osc{*p, CUdeviceptr(bnScaleData)}, obi{*p, CUdeviceptr(bnBiasData)}, odsc{*p, CUdeviceptr(dBnScaleData)},
        odbi{*p, CUdeviceptr(dBnBiasData)}, osm{*p, CUdeviceptr(savedMean)}, osv{*p, CUdeviceptr(savedInvVariance)};
    add(*job, ox, false);
    add(*job, ody, false);
    add(*job, odx, true);
    add(*job, osc, false);
    add(*job, odsc, true);
    add(*job, odbi, true);
    const bool saved = savedMean != nullptr, has_bias = bnBiasData != nullptr;
    if (saved) add(*job, osm, false), add(*job, osv, false);
    if (has_bias) add(*job, obi, false);
    dnnl::engine engine = handle->engine;
    job->compute = [=](Job& j) {
      DenseF32 xv(ox.t, j.host(ox.index), DenseF32::kInput), dyv(ody.t, j.host(ody.index), DenseF32::kInput),
          dxv(odx.t, j.host(odx.index), DenseF32::kOutput, ad, bd);
      std::vector<float> sc = load(j, osc), bi = has_bias ? load(j, obi) : std::vector<float>(size_t(s.c), 0.f),
                         dsc(size_t(s.c)), dbi(size_t(s.c)), mean(size_t(s.c)), var(size_t(s.c));
      using F = dnnl::normalization_flags;
      const F flags = F::use_scale | F::use_shift;
      using BNF = dnnl::batch_normalization_forward;
      using BNB = dnnl::batch_normalization_backward;
      const BNF::desc fd(dnnl::prop_kind::forward_training, data_md(s), float(epsilon), flags);
      const BNF::primitive_desc fpd(fd, engine);
      dnnl::stream st(engine);
      if (saved) {
        mean = load(j, osm);
        std::vector<float> inv = load(j, osv);
        for (size_t i = 0; i < var.size(); ++i) var[i] = float(1.0 / (double(inv[i]) * inv[i]) - epsilon);
      }
      dnnl::memory xm(data_md(s), engine, xv.data()), dym(data_md(s), engine, dyv.data()),
          dxm(data_md(s), engine, dxv.data()), scm(param_md(s), engine, sc.data()),
          bim(param_md(s), engine, bi.data()), dscm(param_md(s), engine, dsc.data()),
          dbim(param_md(s), engine, dbi.data()), mm(param_md(s), engine, mean.data()),
          vm(param_md(s), engine, var.data());
      if (!saved) {  // recompute the batch statistics
        const BNF fwd(fpd);
        std::vector<float> scratch(xv.count());
        dnnl::memory ym(data_md(s), engine, scratch.data());
        fwd.execute(st, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}, {DNNL_ARG_SCALE, scm},
                         {DNNL_ARG_SHIFT, bim}, {DNNL_ARG_MEAN, mm}, {DNNL_ARG_VARIANCE, vm}});
      }
      const BNB bwd(BNB::primitive_desc(
          BNB::desc(dnnl::prop_kind::backward, data_md(s), data_md(s), float(epsilon), flags), engine, fpd));
      // oneDNN 2.x's backward pass asks for the shift too, though it does not read it.
      bwd.execute(st, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DIFF_DST, dym}, {DNNL_ARG_MEAN, mm},
                       {DNNL_ARG_VARIANCE, vm}, {DNNL_ARG_SCALE, scm}, {DNNL_ARG_SHIFT, bim},
                       {DNNL_ARG_DIFF_SRC, dxm}, {DNNL_ARG_DIFF_SCALE, dscm}, {DNNL_ARG_DIFF_SHIFT, dbim}});
      st.wait();
      dxv.store();
      scatter(odsc.t, dsc.data(), j.host(odsc.index), ap, bp);
      scatter(odbi.t, dbi.data(), j.host(odbi.index), ap, bp);
    };
    return queue(handle, std::move(job));
  });
}

// The stand-in needs no device scratch space: every size is 0.
RGPU_EXPORT cudnnStatus_t cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t, cudnnBatchNormOps_t, const cudnnTensorDescriptor_t,
    const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnActivationDescriptor_t, size_t* sizeInBytes) {
  if (!handle || !sizeInBytes) return CUDNN_STATUS_BAD_PARAM;
  *sizeInBytes = 0;
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnGetBatchNormalizationBackwardExWorkspaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t, cudnnBatchNormOps_t, const cudnnTensorDescriptor_t,
    const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t, const cudnnActivationDescriptor_t,
    size_t* sizeInBytes) {
  if (!handle || !sizeInBytes) return CUDNN_STATUS_BAD_PARAM;
  *sizeInBytes = 0;
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t, cudnnBatchNormOps_t, const cudnnActivationDescriptor_t,
    const cudnnTensorDescriptor_t, size_t* sizeInBytes) {
  if (!handle || !sizeInBytes) return CUDNN_STATUS_BAD_PARAM;
  *sizeInBytes = 0;
  return CUDNN_STATUS_SUCCESS;
}
