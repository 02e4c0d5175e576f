// cuDNN's recurrent networks on the client: dropout, RNN and RNN data
// descriptors as client objects; seeding a dropout state one one-way
// message; the size queries and each pseudo-layer's weight layout one
// round trip per distinct question, then answered from memory; forward and
// both backward calls one one-way message each, with every descriptor
// inside (rgpu/protocol/cudnn_wire.h).
#include <cstring>
#include <new>

#include "api_common.h"
#include "cudnn_client.h"
#include "legacy_tensor.h"
#include "rgpu/protocol/cudnn_rnn_objects.h"

namespace cw = rgpu::protocol::cudnn;

namespace rgpu::shim::cudnn {
namespace {

template <class T>
cudnnStatus_t create(T** out) {
  if (!out) return CUDNN_STATUS_BAD_PARAM;
  *out = new (std::nothrow) T();
  return *out ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}

template <class T>
cudnnStatus_t destroy(T* d) {
  if (!d) return CUDNN_STATUS_SUCCESS;
  if (d->magic != T::kMagic) return CUDNN_STATUS_BAD_PARAM;
  d->magic = 0;
  delete d;
  return CUDNN_STATUS_SUCCESS;
}

using cw::live;
const cw::RnnDesc* rnn(cudnnRNNDescriptor_t d) { return cw::rnn_of(d); }
const cw::RnnData* data(cudnnRNNDataDescriptor_t d) { return cw::rnn_data_of(d); }

uint64_t dev(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// One question's answer: the memo's, or a round trip that fills it. The
// key is the request itself (its handle included: answers are the
// library's, per server).
cudnnStatus_t ask(uint32_t fn, const protocol::ArgWriter& request, std::vector<std::byte>* reply) {
  Shim* shim = nullptr;
  uint64_t ctx = 0;
  if (!enter(&shim, &ctx)) return CUDNN_STATUS_EXECUTION_FAILED;
  protocol::ArgWriter key;
  key.u64(fn);
  key.buffer(request.bytes().data(), request.bytes().size());
  if (shim->memo_get(key.bytes(), reply)) return CUDNN_STATUS_SUCCESS;
  if (cudnnStatus_t s = send_sync(shim, ctx, fn, request, reply); s != CUDNN_STATUS_SUCCESS) return s;
  shim->memo_put(key.take(), *reply);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t send(uint32_t fn, const protocol::ArgWriter& w) {
  Shim* shim = nullptr;
  uint64_t ctx = 0;
  if (!enter(&shim, &ctx)) return CUDNN_STATUS_EXECUTION_FAILED;
  send_async(shim, ctx, fn, w);
  return CUDNN_STATUS_SUCCESS;
}

void write_states(protocol::ArgWriter& w, const cw::LegacyTensor& h, const cw::LegacyTensor* c) {
  cw::write_tensor(w, h);
  w.scalar(uint32_t(c != nullptr));
  if (c) cw::write_tensor(w, *c);
}

template <class F>
cudnnStatus_t guard(F&& body) {
  try {
    return body();
  } catch (...) {
    return CUDNN_STATUS_EXECUTION_FAILED;
  }
}

}  // namespace
}  // namespace rgpu::shim::cudnn

using namespace rgpu::shim::cudnn;

// --- dropout -----------------------------------------------------------------

RGPU_EXPORT cudnnStatus_t cudnnCreateDropoutDescriptor(cudnnDropoutDescriptor_t* d) { return create(d); }
RGPU_EXPORT cudnnStatus_t cudnnDestroyDropoutDescriptor(cudnnDropoutDescriptor_t d) { return destroy(d); }

RGPU_EXPORT cudnnStatus_t cudnnDropoutGetStatesSize(cudnnHandle_t handle, size_t* sizeInBytes) {
  return guard([&]() -> cudnnStatus_t {
    if (!handle || !sizeInBytes) return CUDNN_STATUS_BAD_PARAM;
    rgpu::protocol::ArgWriter w;
    w.u64(wire_handle(handle));
    std::vector<std::byte> reply;
    if (cudnnStatus_t s = ask(cw::kDropoutStatesSize, w, &reply); s != CUDNN_STATUS_SUCCESS) return s;
    rgpu::protocol::ArgReader rd(reply);
    uint64_t n = 0;
    if (!rd.u64(&n) || !rd.finish()) return CUDNN_STATUS_EXECUTION_FAILED;
    *sizeInBytes = n;
    return CUDNN_STATUS_SUCCESS;
  });
}

// With a state, its initialisation runs on the server, in stream order.
RGPU_EXPORT cudnnStatus_t cudnnSetDropoutDescriptor(cudnnDropoutDescriptor_t d, cudnnHandle_t handle, float dropout,
                                                    void* states, size_t stateSizeInBytes, unsigned long long seed) {
  return guard([&]() -> cudnnStatus_t {
    if (cudnnStatus_t s = cw::check_dropout(d, handle, dropout, states, stateSizeInBytes, 0, false);
        s != CUDNN_STATUS_SUCCESS) {
      return s;
    }
    if (states) {
      rgpu::protocol::ArgWriter w;
      w.u64(wire_handle(handle));
      w.scalar(dropout);
      w.u64(dev(states));
      w.u64(stateSizeInBytes);
      w.u64(seed);
      if (cudnnStatus_t s = send(cw::kDropoutSeed, w); s != CUDNN_STATUS_SUCCESS) return s;
    }
    cw::set_dropout(d, dropout, states, stateSizeInBytes, seed);
    return CUDNN_STATUS_SUCCESS;
  });
}

RGPU_EXPORT cudnnStatus_t cudnnRestoreDropoutDescriptor(cudnnDropoutDescriptor_t d, cudnnHandle_t handle,
                                                        float dropout, void* states, size_t stateSizeInBytes,
                                                        unsigned long long seed) {
  if (cudnnStatus_t s = cw::check_dropout(d, handle, dropout, states, stateSizeInBytes, 0, true);
      s != CUDNN_STATUS_SUCCESS) {
    return s;
  }
  cw::set_dropout(d, dropout, states, stateSizeInBytes, seed);
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnGetDropoutDescriptor(cudnnDropoutDescriptor_t d, cudnnHandle_t handle, float* dropout,
                                                    void** states, unsigned long long* seed) {
  return cw::get_dropout(d, handle, dropout, states, seed);
}

// --- RNN and RNN data descriptors ----------------------------------------------

RGPU_EXPORT cudnnStatus_t cudnnCreateRNNDescriptor(cudnnRNNDescriptor_t* d) { return create(d); }
RGPU_EXPORT cudnnStatus_t cudnnDestroyRNNDescriptor(cudnnRNNDescriptor_t d) { return destroy(d); }

RGPU_EXPORT cudnnStatus_t cudnnSetRNNDescriptor_v8(cudnnRNNDescriptor_t d, cudnnRNNAlgo_t algo,
                                                   cudnnRNNMode_t cellMode, cudnnRNNBiasMode_t biasMode,
                                                   cudnnDirectionMode_t dirMode, cudnnRNNInputMode_t inputMode,
                                                   cudnnDataType_t dataType, cudnnDataType_t mathPrec,
                                                   cudnnMathType_t mathType, int32_t inputSize, int32_t hiddenSize,
                                                   int32_t projSize, int32_t numLayers,
                                                   cudnnDropoutDescriptor_t dropoutDesc, uint32_t auxFlags) {
  cw::RnnDesc r;
  if (cudnnStatus_t st = cw::rnn_value(d, algo, cellMode, biasMode, dirMode, inputMode, dataType, mathPrec, mathType,
                                       inputSize, hiddenSize, projSize, numLayers, dropoutDesc, auxFlags, &r);
      st != CUDNN_STATUS_SUCCESS) {
    return st;
  }
  d->d = r;
  d->dropout = dropoutDesc;
  d->set = true;
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnGetRNNDescriptor_v8(cudnnRNNDescriptor_t d, cudnnRNNAlgo_t* algo,
                                                   cudnnRNNMode_t* cellMode, cudnnRNNBiasMode_t* biasMode,
                                                   cudnnDirectionMode_t* dirMode, cudnnRNNInputMode_t* inputMode,
                                                   cudnnDataType_t* dataType, cudnnDataType_t* mathPrec,
                                                   cudnnMathType_t* mathType, int32_t* inputSize,
                                                   int32_t* hiddenSize, int32_t* projSize, int32_t* numLayers,
                                                   cudnnDropoutDescriptor_t* dropoutDesc, uint32_t* auxFlags) {
  return cw::get_rnn(d, algo, cellMode, biasMode, dirMode, inputMode, dataType, mathPrec, mathType, inputSize,
                     hiddenSize, projSize, numLayers, dropoutDesc, auxFlags);
}

RGPU_EXPORT cudnnStatus_t cudnnCreateRNNDataDescriptor(cudnnRNNDataDescriptor_t* d) { return create(d); }
RGPU_EXPORT cudnnStatus_t cudnnDestroyRNNDataDescriptor(cudnnRNNDataDescriptor_t d) { return destroy(d); }

RGPU_EXPORT cudnnStatus_t cudnnSetRNNDataDescriptor(cudnnRNNDataDescriptor_t d, cudnnDataType_t dataType,
                                                    cudnnRNNDataLayout_t layout, int maxSeqLength, int batchSize,
                                                    int vectorSize, const int seqLengthArray[], void* paddingFill) {
  return guard([&]() -> cudnnStatus_t {
    if (!d || d->magic != cudnnRNNDataStruct::kMagic || !seqLengthArray || batchSize < 1 ||
        batchSize > cw::kMaxRnnSeq) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    cw::RnnData r;
    r.dtype = dataType, r.layout = layout, r.max_seq = maxSeqLength, r.batch = batchSize, r.vector = vectorSize;
    r.lens.assign(seqLengthArray, seqLengthArray + batchSize);
    if (paddingFill) {
      r.has_fill = true;
      if (dataType == CUDNN_DATA_DOUBLE) {
        std::memcpy(&r.fill, paddingFill, 8);
      } else if (dataType == CUDNN_DATA_FLOAT) {
        float f;
        std::memcpy(&f, paddingFill, 4);
        r.fill = f;
      } else {
        uint16_t bits;
        std::memcpy(&bits, paddingFill, 2);
        if (bits != 0) return CUDNN_STATUS_NOT_SUPPORTED;  // rgpu carries a 16-bit fill only when it is +0
      }
    }
    if (cw::check_rnn_data(r)[0] != '\0') return CUDNN_STATUS_BAD_PARAM;
    d->d = std::move(r);
    d->set = true;
    return CUDNN_STATUS_SUCCESS;
  });
}

RGPU_EXPORT cudnnStatus_t cudnnGetRNNDataDescriptor(cudnnRNNDataDescriptor_t d, cudnnDataType_t* dataType,
                                                    cudnnRNNDataLayout_t* layout, int* maxSeqLength, int* batchSize,
                                                    int* vectorSize, int arrayLengthRequested, int seqLengthArray[],
                                                    void* paddingFill) {
  if (cudnnStatus_t s = cw::get_rnn_data(d, dataType, layout, maxSeqLength, batchSize, vectorSize, arrayLengthRequested,
                                         seqLengthArray);
      s != CUDNN_STATUS_SUCCESS) {
    return s;
  }
  const cw::RnnData* r = data(d);
  if (paddingFill) {
    if (r->dtype == CUDNN_DATA_DOUBLE) {
      std::memcpy(paddingFill, &r->fill, 8);
    } else if (r->dtype == CUDNN_DATA_FLOAT) {
      const float f = float(r->fill);
      std::memcpy(paddingFill, &f, 4);
    } else {
      std::memset(paddingFill, 0, 2);
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

// --- sizes and the weight layout ---------------------------------------------

RGPU_EXPORT cudnnStatus_t cudnnGetRNNWeightSpaceSize(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                                     size_t* weightSpaceSize) {
  return guard([&]() -> cudnnStatus_t {
    const cw::RnnDesc* r = rnn(rnnDesc);
    if (!handle || !r || !weightSpaceSize) return CUDNN_STATUS_BAD_PARAM;
    rgpu::protocol::ArgWriter w;
    w.u64(wire_handle(handle));
    cw::write_rnn(w, *r);
    std::vector<std::byte> reply;
    if (cudnnStatus_t s = ask(cw::kRnnWeightSpace, w, &reply); s != CUDNN_STATUS_SUCCESS) return s;
    rgpu::protocol::ArgReader rd(reply);
    uint64_t n = 0;
    if (!rd.u64(&n) || !rd.finish()) return CUDNN_STATUS_EXECUTION_FAILED;
    *weightSpaceSize = n;
    return CUDNN_STATUS_SUCCESS;
  });
}

RGPU_EXPORT cudnnStatus_t cudnnGetRNNTempSpaceSizes(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                                    cudnnForwardMode_t fwdMode, cudnnRNNDataDescriptor_t xDesc,
                                                    size_t* workSpaceSize, size_t* reserveSpaceSize) {
  return guard([&]() -> cudnnStatus_t {
    const cw::RnnDesc* r = rnn(rnnDesc);
    const cw::RnnData* x = data(xDesc);
    if (!handle || !r || !x || (fwdMode != CUDNN_FWD_MODE_INFERENCE && fwdMode != CUDNN_FWD_MODE_TRAINING)) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    rgpu::protocol::ArgWriter w;
    w.u64(wire_handle(handle));
    cw::write_rnn(w, *r);
    w.scalar(uint32_t(fwdMode));
    cw::write_rnn_data(w, *x);
    std::vector<std::byte> reply;
    if (cudnnStatus_t s = ask(cw::kRnnTempSizes, w, &reply); s != CUDNN_STATUS_SUCCESS) return s;
    rgpu::protocol::ArgReader rd(reply);
    uint64_t work = 0, reserve = 0;
    if (!rd.u64(&work) || !rd.u64(&reserve) || !rd.finish()) return CUDNN_STATUS_EXECUTION_FAILED;
    if (workSpaceSize) *workSpaceSize = work;
    if (reserveSpaceSize) *reserveSpaceSize = reserve;
    return CUDNN_STATUS_SUCCESS;
  });
}

// PyTorch asks for every matrix and bias of every pseudo-layer, many times
// over: one round trip per pseudo-layer, the rest from memory.
RGPU_EXPORT cudnnStatus_t cudnnGetRNNWeightParams(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                                  int32_t pseudoLayer, size_t weightSpaceSize,
                                                  const void* weightSpace, int32_t linLayerID,
                                                  cudnnTensorDescriptor_t mDesc, void** mAddr,
                                                  cudnnTensorDescriptor_t bDesc, void** bAddr) {
  return guard([&]() -> cudnnStatus_t {
    const cw::RnnDesc* r = rnn(rnnDesc);
    if (!handle || !r || pseudoLayer < 0 || pseudoLayer >= r->layers * r->dirs()) return CUDNN_STATUS_BAD_PARAM;
    if ((mDesc && mDesc->magic != cudnnTensorStruct::kMagic) || (bDesc && bDesc->magic != cudnnTensorStruct::kMagic)) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    rgpu::protocol::ArgWriter w;
    w.u64(wire_handle(handle));
    cw::write_rnn(w, *r);
    w.scalar(pseudoLayer);
    std::vector<std::byte> reply;
    if (cudnnStatus_t s = ask(cw::kRnnWeightParams, w, &reply); s != CUDNN_STATUS_SUCCESS) return s;
    rgpu::protocol::ArgReader rd(reply);
    std::vector<cw::WeightParam> params;
    if (!cw::read_weight_params(rd, &params) || !rd.finish()) return CUDNN_STATUS_EXECUTION_FAILED;
    const cw::WeightParam* e = nullptr;
    for (const cw::WeightParam& p : params) {
      if (p.lin == linLayerID) e = &p;
    }
    if (!e) return CUDNN_STATUS_BAD_PARAM;
    if ((e->has_matrix && e->matrix_offset > weightSpaceSize) || (e->has_bias && e->bias_offset > weightSpaceSize)) {
      return CUDNN_STATUS_BAD_PARAM;  // a weight space smaller than the library's
    }
    const auto* base = static_cast<const char*>(weightSpace);
    auto put = [](cudnnTensorDescriptor_t d, const cw::LegacyTensor& t) {
      return set_tensor(d, cudnnDataType_t(t.dtype), t.nd, t.dims, t.strides);
    };
    if (mAddr) *mAddr = e->has_matrix ? const_cast<char*>(base) + e->matrix_offset : nullptr;
    if (bAddr) *bAddr = e->has_bias ? const_cast<char*>(base) + e->bias_offset : nullptr;
    if (mDesc && e->has_matrix) {
      if (cudnnStatus_t s = put(mDesc, e->matrix); s != CUDNN_STATUS_SUCCESS) return s;
    }
    if (bDesc && e->has_bias) {
      if (cudnnStatus_t s = put(bDesc, e->bias); s != CUDNN_STATUS_SUCCESS) return s;
    }
    return CUDNN_STATUS_SUCCESS;
  });
}

// --- forward and backward ------------------------------------------------------

RGPU_EXPORT cudnnStatus_t cudnnRNNForward(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                          cudnnForwardMode_t fwdMode, const int32_t devSeqLengths[],
                                          cudnnRNNDataDescriptor_t xDesc, const void* x, cudnnRNNDataDescriptor_t yDesc,
                                          void* y, cudnnTensorDescriptor_t hDesc, const void* hx, void* hy,
                                          cudnnTensorDescriptor_t cDesc, const void* cx, void* cy,
                                          size_t weightSpaceSize, const void* weightSpace, size_t workSpaceSize,
                                          void* workSpace, size_t reserveSpaceSize, void* reserveSpace) {
  return guard([&]() -> cudnnStatus_t {
    const cw::RnnDesc* r = rnn(rnnDesc);
    const cw::RnnData *xd = data(xDesc), *yd = data(yDesc);
    const cw::LegacyTensor* h = tensor(hDesc);
    const cw::LegacyTensor* c = cDesc ? tensor(cDesc) : nullptr;
    if (!handle || !r || !xd || !yd || !h || (cDesc && !c)) return CUDNN_STATUS_BAD_PARAM;
    if (fwdMode != CUDNN_FWD_MODE_INFERENCE && fwdMode != CUDNN_FWD_MODE_TRAINING) return CUDNN_STATUS_BAD_PARAM;
    rgpu::protocol::ArgWriter w;
    w.u64(wire_handle(handle));
    cw::write_rnn(w, *r);
    w.scalar(uint32_t(fwdMode));
    w.u64(dev(devSeqLengths));
    cw::write_rnn_data(w, *xd), w.u64(dev(x));
    cw::write_rnn_data(w, *yd), w.u64(dev(y));
    write_states(w, *h, c);
    w.u64(dev(hx)), w.u64(dev(hy)), w.u64(dev(cx)), w.u64(dev(cy));
    w.u64(weightSpaceSize), w.u64(dev(weightSpace)), w.u64(workSpaceSize), w.u64(dev(workSpace));
    w.u64(reserveSpaceSize), w.u64(dev(reserveSpace));
    return send(cw::kRnnForward, w);
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
  return guard([&]() -> cudnnStatus_t {
    const cw::RnnDesc* r = rnn(rnnDesc);
    const cw::RnnData *xd = data(xDesc), *yd = data(yDesc);
    const cw::LegacyTensor* h = tensor(hDesc);
    const cw::LegacyTensor* c = cDesc ? tensor(cDesc) : nullptr;
    if (!handle || !r || !xd || !yd || !h || (cDesc && !c)) return CUDNN_STATUS_BAD_PARAM;
    rgpu::protocol::ArgWriter w;
    w.u64(wire_handle(handle));
    cw::write_rnn(w, *r);
    w.u64(dev(devSeqLengths));
    cw::write_rnn_data(w, *yd), w.u64(dev(y)), w.u64(dev(dy));
    cw::write_rnn_data(w, *xd), w.u64(dev(dx));
    write_states(w, *h, c);
    w.u64(dev(hx)), w.u64(dev(dhy)), w.u64(dev(dhx)), w.u64(dev(cx)), w.u64(dev(dcy)), w.u64(dev(dcx));
    w.u64(weightSpaceSize), w.u64(dev(weightSpace)), w.u64(workSpaceSize), w.u64(dev(workSpace));
    w.u64(reserveSpaceSize), w.u64(dev(reserveSpace));
    return send(cw::kRnnBackwardData, w);
  });
}

RGPU_EXPORT cudnnStatus_t cudnnRNNBackwardWeights_v8(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                                     cudnnWgradMode_t addGrad, const int32_t devSeqLengths[],
                                                     cudnnRNNDataDescriptor_t xDesc, const void* x,
                                                     cudnnTensorDescriptor_t hDesc, const void* hx,
                                                     cudnnRNNDataDescriptor_t yDesc, const void* y,
                                                     size_t weightSpaceSize, void* dweightSpace, size_t workSpaceSize,
                                                     void* workSpace, size_t reserveSpaceSize, void* reserveSpace) {
  return guard([&]() -> cudnnStatus_t {
    const cw::RnnDesc* r = rnn(rnnDesc);
    const cw::RnnData *xd = data(xDesc), *yd = data(yDesc);
    const cw::LegacyTensor* h = tensor(hDesc);
    if (!handle || !r || !xd || !yd || !h) return CUDNN_STATUS_BAD_PARAM;
    if (addGrad != CUDNN_WGRAD_MODE_ADD && addGrad != CUDNN_WGRAD_MODE_SET) return CUDNN_STATUS_BAD_PARAM;
    rgpu::protocol::ArgWriter w;
    w.u64(wire_handle(handle));
    cw::write_rnn(w, *r);
    w.scalar(uint32_t(addGrad));
    w.u64(dev(devSeqLengths));
    cw::write_rnn_data(w, *xd), w.u64(dev(x));
    cw::write_tensor(w, *h), w.u64(dev(hx));
    cw::write_rnn_data(w, *yd), w.u64(dev(y));
    w.u64(weightSpaceSize), w.u64(dev(dweightSpace)), w.u64(workSpaceSize), w.u64(dev(workSpace));
    w.u64(reserveSpaceSize), w.u64(dev(reserveSpace));
    return send(cw::kRnnBackwardWeights, w);
  });
}
