// cudnnRNNForward, cudnnRNNBackwardData_v8 and cudnnRNNBackwardWeights_v8:
// each checks its descriptors, queues one job whose operands are copied
// into host buffers, and computes with rnn_math.h in stream order. The
// reserve space holds float32 values of the stand-in's own layout
// (rnn_math.cpp), whatever the data type.
#include <cstring>
#include <memory>
#include <vector>

#include "handle.h"
#include "job.h"
#include "layout.h"
#include "rnn_common.h"
#include "tensor_desc.h"

namespace rgpu::cpudnn {
namespace {

uint64_t tensor_bytes(const Strided& s) {
  uint64_t last = 0;
  for (int i = 0; i < s.nd; ++i) last += uint64_t(s.dims[i] - 1) * uint64_t(s.strides[i]);
  return (last + 1) * elem_bytes(cudnnDataType_t(s.dtype));
}

// A state tensor {a, b, c}, possibly padded with trailing dims of 1 (PyTorch
// describes them in 5-D).
bool dims_are(const Strided* t, cudnnDataType_t dtype, int64_t a, int64_t b, int64_t c) {
  if (!t || t->nd < 3 || t->dtype != dtype || t->dims[0] != a || t->dims[1] != b || t->dims[2] != c) return false;
  for (int i = 3; i < t->nd; ++i) {
    if (t->dims[i] != 1) return false;
  }
  return true;
}

bool same_batches(const RnnData& a, const RnnData& b) {
  return a.dtype == b.dtype && a.layout == b.layout && a.max_seq == b.max_seq && a.batch == b.batch &&
         a.lens == b.lens;
}

// One call's descriptors, copied and checked against each other.
struct Call {
  RnnDesc r;
  rnn::Config c;
  RnnData x, y;
  Strided h, cell;
  uint64_t weight_bytes = 0, reserve_bytes = 0;
  rnn::Batch batch() const {
    rnn::Batch s;
    s.T = x.max_seq, s.B = x.batch, s.len = x.lens;
    return s;
  }
};

cudnnStatus_t prepare(cudnnHandle_t handle, cudnnRNNDescriptor_t rd, cudnnRNNDataDescriptor_t xd,
                      cudnnRNNDataDescriptor_t yd, cudnnTensorDescriptor_t hd, cudnnTensorDescriptor_t cd,
                      size_t weight_space, Call* call) {
  const RnnDesc* r = rnn_of(rd);
  const RnnData *x = data_of(xd), *y = data_of(yd);
  if (!handle || !r || !x || !y) return CUDNN_STATUS_BAD_PARAM;
  call->r = *r;
  call->c = config_of(*r);
  call->x = *x, call->y = *y;
  const rnn::Config& c = call->c;
  if (x->dtype != r->dtype || !same_batches(*x, *y) || x->vector != c.input || y->vector != c.proj * c.dirs) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  const int64_t states = int64_t(c.layers) * c.dirs;
  if (!dims_are(strided(hd), dtype_of(*r), states, x->batch, c.proj)) return CUDNN_STATUS_BAD_PARAM;
  call->h = *strided(hd);
  if (c.cell == rnn::kLstm) {
    if (!dims_are(strided(cd), dtype_of(*r), states, x->batch, c.hidden)) return CUDNN_STATUS_BAD_PARAM;
    call->cell = *strided(cd);
  }
  call->weight_bytes = uint64_t(rnn::weight_elems(c)) * elem_bytes(r->dtype);
  if (weight_space < call->weight_bytes) return CUDNN_STATUS_BAD_PARAM;
  return reserve_bytes(*r, *x, &call->reserve_bytes);
}

// An optional operand: its index in the job, or -1 when absent.
long add_opt(Job& job, const void* p, uint64_t bytes, bool read, bool write) {
  if (!p) return -1;
  return long(job.add({CUdeviceptr(p), bytes, read, write}));
}

std::vector<float> load_state(Job& j, long i, const Strided& t) {
  std::vector<float> v(t.count());
  gather(t, j.host(size_t(i)), v.data());
  return v;
}

std::vector<float> load_weights(Job& j, size_t i, cudnnDataType_t dtype, int64_t n) {
  Strided t;
  t.dtype = dtype, t.nd = 1, t.dims[0] = n, t.strides[0] = 1;
  std::vector<float> v(static_cast<size_t>(n));
  gather(t, j.host(i), v.data());
  return v;
}

cudnnStatus_t queue(cudnnHandle_t handle, std::unique_ptr<Job> job) {
  job->usage = handle->usage;
  ContextGuard guard(handle->ctx);
  if (!guard.ok()) return CUDNN_STATUS_EXECUTION_FAILED;
  return submit(std::move(job), handle->stream);
}

}  // namespace
}  // namespace rgpu::cpudnn

using namespace rgpu::cpudnn;

RGPU_EXPORT cudnnStatus_t cudnnRNNForward(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                          cudnnForwardMode_t fwdMode, const int32_t devSeqLengths[],
                                          cudnnRNNDataDescriptor_t xDesc, const void* x, cudnnRNNDataDescriptor_t yDesc,
                                          void* y, cudnnTensorDescriptor_t hDesc, const void* hx, void* hy,
                                          cudnnTensorDescriptor_t cDesc, const void* cx, void* cy,
                                          size_t weightSpaceSize, const void* weightSpace, size_t workSpaceSize,
                                          void* workSpace, size_t reserveSpaceSize, void* reserveSpace) {
  (void)devSeqLengths, (void)workSpaceSize, (void)workSpace;  // the lengths come from xDesc; no workspace is used
  return guarded("cudnnRNNForward", [&]() -> cudnnStatus_t {
    Call call;
    if (cudnnStatus_t s = prepare(handle, rnnDesc, xDesc, yDesc, hDesc, cDesc, weightSpaceSize, &call);
        s != CUDNN_STATUS_SUCCESS) {
      return s;
    }
    if (fwdMode != CUDNN_FWD_MODE_INFERENCE && fwdMode != CUDNN_FWD_MODE_TRAINING) return CUDNN_STATUS_BAD_PARAM;
    const bool training = fwdMode == CUDNN_FWD_MODE_TRAINING;
    if (!x || !y || !weightSpace) return CUDNN_STATUS_BAD_PARAM;
    if (training && (!reserveSpace || reserveSpaceSize < call.reserve_bytes)) return CUDNN_STATUS_BAD_PARAM;
    const bool lstm = call.c.cell == rnn::kLstm, dropout = training && call.c.dropout > 0;
    auto job = std::make_unique<Job>();
    const size_t ix = job->add({CUdeviceptr(x), data_bytes(call.x), true, false});
    const size_t iy = job->add({CUdeviceptr(y), data_bytes(call.y), true, true});
    const long ihx = add_opt(*job, hx, tensor_bytes(call.h), true, false);
    const long ihy = add_opt(*job, hy, tensor_bytes(call.h), false, true);
    const long icx = lstm ? add_opt(*job, cx, tensor_bytes(call.cell), true, false) : -1;
    const long icy = lstm ? add_opt(*job, cy, tensor_bytes(call.cell), false, true) : -1;
    const size_t iw = job->add({CUdeviceptr(weightSpace), call.weight_bytes, true, false});
    const long ir = training ? add_opt(*job, reserveSpace, call.reserve_bytes, false, true) : -1;
    const long is = dropout ? add_opt(*job, reinterpret_cast<const void*>(call.r.states), kDropoutStateBytes, true, true) : -1;
    job->compute = [=](Job& j) {
      const rnn::Batch s = call.batch();
      const rnn::Config& c = call.c;
      std::vector<float> xs(size_t(s.T * s.B * c.input)), ys(size_t(s.T * s.B * c.proj * c.dirs));
      to_dense(call.x, j.host(ix), xs.data());
      std::vector<float> h0 = ihx >= 0 ? load_state(j, ihx, call.h) : std::vector<float>();
      std::vector<float> c0 = icx >= 0 ? load_state(j, icx, call.cell) : std::vector<float>();
      std::vector<float> h1(call.h.count()), c1(lstm ? call.cell.count() : 0);
      const std::vector<float> w = load_weights(j, iw, dtype_of(call.r), rnn::weight_elems(c));
      std::vector<float> scratch;
      float* reserve = nullptr;
      if (ir >= 0) {
        reserve = static_cast<float*>(j.host(size_t(ir)));
      } else {
        scratch.resize(size_t(call.reserve_bytes / sizeof(float)));
        reserve = scratch.data();
      }
      rnn::Rng rng;
      if (is >= 0) std::memcpy(&rng, j.host(size_t(is)), sizeof rng);
      rnn::forward(c, s, xs.data(), h0.empty() ? nullptr : h0.data(), c0.empty() ? nullptr : c0.data(), w.data(),
                   ys.data(), h1.data(), lstm ? c1.data() : nullptr, reserve, training, &rng);
      if (is >= 0) std::memcpy(j.host(size_t(is)), &rng, sizeof rng);
      from_dense(call.y, ys.data(), j.host(iy), call.y.has_fill);
      if (ihy >= 0) scatter(call.h, h1.data(), j.host(size_t(ihy)), 1.0, 0.0);
      if (icy >= 0) scatter(call.cell, c1.data(), j.host(size_t(icy)), 1.0, 0.0);
    };
    return queue(handle, std::move(job));
  });
}

RGPU_EXPORT cudnnStatus_t cudnnRNNBackwardData_v8(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                                  const int32_t devSeqLengths[], cudnnRNNDataDescriptor_t yDesc,
                                                  const void* y, const void* dy, cudnnRNNDataDescriptor_t xDesc,
                                                  void* dx, cudnnTensorDescriptor_t hDesc, const void* hx,
                                                  const void* dhy, void* dhx, cudnnTensorDescriptor_t cDesc,
                                                  const void* cx, const void* dcy, void* dcx, size_t weightSpaceSize,
                                                  const void* weightSpace, size_t workSpaceSize, void* workSpace,
                                                  size_t reserveSpaceSize, void* reserveSpace) {
  // The forward's own values are in the reserve space: y, hx and cx are not read.
  (void)devSeqLengths, (void)y, (void)hx, (void)cx, (void)workSpaceSize, (void)workSpace;
  return guarded("cudnnRNNBackwardData_v8", [&]() -> cudnnStatus_t {
    Call call;
    if (cudnnStatus_t s = prepare(handle, rnnDesc, xDesc, yDesc, hDesc, cDesc, weightSpaceSize, &call);
        s != CUDNN_STATUS_SUCCESS) {
      return s;
    }
    if (!dy || !dx || !weightSpace || !reserveSpace || reserveSpaceSize < call.reserve_bytes) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    const bool lstm = call.c.cell == rnn::kLstm;
    auto job = std::make_unique<Job>();
    const size_t idy = job->add({CUdeviceptr(dy), data_bytes(call.y), true, false});
    const size_t idx = job->add({CUdeviceptr(dx), data_bytes(call.x), true, true});
    const long idhy = add_opt(*job, dhy, tensor_bytes(call.h), true, false);
    const long idhx = add_opt(*job, dhx, tensor_bytes(call.h), false, true);
    const long idcy = lstm ? add_opt(*job, dcy, tensor_bytes(call.cell), true, false) : -1;
    const long idcx = lstm ? add_opt(*job, dcx, tensor_bytes(call.cell), false, true) : -1;
    const size_t iw = job->add({CUdeviceptr(weightSpace), call.weight_bytes, true, false});
    const size_t ir = job->add({CUdeviceptr(reserveSpace), call.reserve_bytes, true, true});
    job->compute = [=](Job& j) {
      const rnn::Batch s = call.batch();
      const rnn::Config& c = call.c;
      std::vector<float> dys(size_t(s.T * s.B * c.proj * c.dirs)), dxs(size_t(s.T * s.B * c.input));
      to_dense(call.y, j.host(idy), dys.data());
      std::vector<float> g_h = idhy >= 0 ? load_state(j, idhy, call.h) : std::vector<float>();
      std::vector<float> g_c = idcy >= 0 ? load_state(j, idcy, call.cell) : std::vector<float>();
      std::vector<float> g_h0(call.h.count()), g_c0(lstm ? call.cell.count() : 0);
      const std::vector<float> w = load_weights(j, iw, dtype_of(call.r), rnn::weight_elems(c));
      rnn::backward_data(c, s, dys.data(), g_h.empty() ? nullptr : g_h.data(), g_c.empty() ? nullptr : g_c.data(),
                         w.data(), dxs.data(), g_h0.data(), lstm ? g_c0.data() : nullptr,
                         static_cast<float*>(j.host(ir)), true);
      from_dense(call.x, dxs.data(), j.host(idx), false);
      if (idhx >= 0) scatter(call.h, g_h0.data(), j.host(size_t(idhx)), 1.0, 0.0);
      if (idcx >= 0) scatter(call.cell, g_c0.data(), j.host(size_t(idcx)), 1.0, 0.0);
    };
    return queue(handle, std::move(job));
  });
}

RGPU_EXPORT cudnnStatus_t cudnnRNNBackwardWeights_v8(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                                     cudnnWgradMode_t addGrad, const int32_t devSeqLengths[],
                                                     cudnnRNNDataDescriptor_t xDesc, const void* x,
                                                     cudnnTensorDescriptor_t hDesc, const void* hx,
                                                     cudnnRNNDataDescriptor_t yDesc, const void* y,
                                                     size_t weightSpaceSize, void* dweightSpace, size_t workSpaceSize,
                                                     void* workSpace, size_t reserveSpaceSize, void* reserveSpace) {
  // The layers' inputs and states are in the reserve space: x, hx and y are not read.
  (void)devSeqLengths, (void)x, (void)hx, (void)y, (void)workSpaceSize, (void)workSpace;
  return guarded("cudnnRNNBackwardWeights_v8", [&]() -> cudnnStatus_t {
    Call call;
    // hDesc and cDesc are checked as a forward's; cDesc is not passed here.
    const rnn::Config probe = rnn_of(rnnDesc) ? config_of(*rnn_of(rnnDesc)) : rnn::Config{};
    cudnnTensorStruct cell;
    if (probe.cell == rnn::kLstm && strided(hDesc) && rnn_of(rnnDesc)) {
      Strided t = *strided(hDesc);
      t.dims[2] = probe.hidden;
      t.strides[1] = probe.hidden, t.strides[0] = t.dims[1] * probe.hidden, t.strides[2] = 1;
      cell.t = t;
      cell.set = true;
    }
    if (cudnnStatus_t s = prepare(handle, rnnDesc, xDesc, yDesc, hDesc, &cell, weightSpaceSize, &call);
        s != CUDNN_STATUS_SUCCESS) {
      return s;
    }
    if (addGrad != CUDNN_WGRAD_MODE_ADD && addGrad != CUDNN_WGRAD_MODE_SET) return CUDNN_STATUS_BAD_PARAM;
    if (!dweightSpace || !reserveSpace || reserveSpaceSize < call.reserve_bytes) return CUDNN_STATUS_BAD_PARAM;
    auto job = std::make_unique<Job>();
    const size_t idw = job->add({CUdeviceptr(dweightSpace), call.weight_bytes, true, true});
    const size_t ir = job->add({CUdeviceptr(reserveSpace), call.reserve_bytes, true, false});
    const bool add = addGrad == CUDNN_WGRAD_MODE_ADD;
    job->compute = [=](Job& j) {
      const int64_t n = rnn::weight_elems(call.c);
      std::vector<float> dw = add ? load_weights(j, idw, dtype_of(call.r), n) : std::vector<float>(size_t(n));
      rnn::backward_weights(call.c, call.batch(), static_cast<const float*>(j.host(ir)), dw.data());
      Strided t;
      t.dtype = dtype_of(call.r), t.nd = 1, t.dims[0] = n, t.strides[0] = 1;
      scatter(t, dw.data(), j.host(idw), 1.0, 0.0);
    };
    return queue(handle, std::move(job));
  });
}
