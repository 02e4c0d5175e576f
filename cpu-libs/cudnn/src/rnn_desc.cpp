// Dropout, RNN and RNN data descriptors, and the RNN size and weight-layout
// queries (answered from the descriptor alone, rnn_math.h's layout).
#include "rnn_desc.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "handle.h"
#include "job.h"
#include "rnn_common.h"
#include "tensor_desc.h"

using namespace rgpu::cpudnn;

namespace {

template <class T>
cudnnStatus_t create(T** out) {
  if (!out) return CUDNN_STATUS_BAD_PARAM;
  *out = new T();
  return CUDNN_STATUS_SUCCESS;
}

template <class T>
cudnnStatus_t destroy(T* d) {
  if (d && d->magic == T::kMagic) {
    d->magic = 0;
    delete d;
  }
  return CUDNN_STATUS_SUCCESS;
}

using rgpu::protocol::cudnn::check_dropout;
using rgpu::protocol::cudnn::get_dropout;
using rgpu::protocol::cudnn::live;
using rgpu::protocol::cudnn::set_dropout;

// Writes a fresh generator state (seed, counter 0) into `states`, in stream order.
cudnnStatus_t seed_states(cudnnHandle_t handle, void* states, unsigned long long seed) {
  auto job = std::make_unique<Job>();
  const size_t i = job->add({CUdeviceptr(states), kDropoutStateBytes, false, true});
  job->compute = [i, seed](Job& j) {
    const uint64_t v[2] = {seed, 0};
    std::memcpy(j.host(i), v, sizeof v);
  };
  job->usage = handle->usage;
  ContextGuard guard(handle->ctx);
  if (!guard.ok()) return CUDNN_STATUS_EXECUTION_FAILED;
  return submit(std::move(job), handle->stream);
}

void set_matrix_desc(cudnnTensorDescriptor_t d, cudnnDataType_t dtype, int64_t rows, int64_t cols) {
  Strided t;
  t.dtype = dtype;
  t.nd = 3;
  t.dims[0] = 1, t.dims[1] = rows, t.dims[2] = cols;
  t.strides[0] = rows * cols, t.strides[1] = cols, t.strides[2] = 1;
  d->t = t;
  d->set = true;
}

}  // namespace

// --- dropout -----------------------------------------------------------------

RGPU_EXPORT cudnnStatus_t cudnnCreateDropoutDescriptor(cudnnDropoutDescriptor_t* d) {
  return guarded("cudnnCreateDropoutDescriptor", [&] { return create(d); });
}
RGPU_EXPORT cudnnStatus_t cudnnDestroyDropoutDescriptor(cudnnDropoutDescriptor_t d) { return destroy(d); }

RGPU_EXPORT cudnnStatus_t cudnnDropoutGetStatesSize(cudnnHandle_t handle, size_t* sizeInBytes) {
  if (!handle || !sizeInBytes) return CUDNN_STATUS_BAD_PARAM;
  *sizeInBytes = kDropoutStateBytes;
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnSetDropoutDescriptor(cudnnDropoutDescriptor_t d, cudnnHandle_t handle, float dropout,
                                                    void* states, size_t stateSizeInBytes, unsigned long long seed) {
  return guarded("cudnnSetDropoutDescriptor", [&]() -> cudnnStatus_t {
    if (cudnnStatus_t s = check_dropout(d, handle, dropout, states, stateSizeInBytes, kDropoutStateBytes, false);
        s != CUDNN_STATUS_SUCCESS) {
      return s;
    }
    if (states) {
      if (cudnnStatus_t s = seed_states(handle, states, seed); s != CUDNN_STATUS_SUCCESS) return s;
    }
    set_dropout(d, dropout, states, stateSizeInBytes, seed);
    return CUDNN_STATUS_SUCCESS;
  });
}

RGPU_EXPORT cudnnStatus_t cudnnRestoreDropoutDescriptor(cudnnDropoutDescriptor_t d, cudnnHandle_t handle,
                                                        float dropout, void* states, size_t stateSizeInBytes,
                                                        unsigned long long seed) {
  if (cudnnStatus_t s = check_dropout(d, handle, dropout, states, stateSizeInBytes, kDropoutStateBytes, true);
      s != CUDNN_STATUS_SUCCESS) {
    return s;
  }
  set_dropout(d, dropout, states, stateSizeInBytes, seed);
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnGetDropoutDescriptor(cudnnDropoutDescriptor_t d, cudnnHandle_t handle, float* dropout,
                                                    void** states, unsigned long long* seed) {
  return get_dropout(d, handle, dropout, states, seed);
}

// --- RNN descriptor ----------------------------------------------------------

RGPU_EXPORT cudnnStatus_t cudnnCreateRNNDescriptor(cudnnRNNDescriptor_t* d) {
  return guarded("cudnnCreateRNNDescriptor", [&] { return create(d); });
}
RGPU_EXPORT cudnnStatus_t cudnnDestroyRNNDescriptor(cudnnRNNDescriptor_t d) { return destroy(d); }

RGPU_EXPORT cudnnStatus_t cudnnSetRNNDescriptor_v8(cudnnRNNDescriptor_t d, cudnnRNNAlgo_t algo,
                                                   cudnnRNNMode_t cellMode, cudnnRNNBiasMode_t biasMode,
                                                   cudnnDirectionMode_t dirMode, cudnnRNNInputMode_t inputMode,
                                                   cudnnDataType_t dataType, cudnnDataType_t mathPrec,
                                                   cudnnMathType_t mathType, int32_t inputSize, int32_t hiddenSize,
                                                   int32_t projSize, int32_t numLayers,
                                                   cudnnDropoutDescriptor_t dropoutDesc, uint32_t auxFlags) {
  RnnDesc r;
  if (cudnnStatus_t st = rgpu::protocol::cudnn::rnn_value(d, algo, cellMode, biasMode, dirMode, inputMode, dataType,
                                                          mathPrec, mathType, inputSize, hiddenSize, projSize,
                                                          numLayers, dropoutDesc, auxFlags, &r);
      st != CUDNN_STATUS_SUCCESS) {
    return st;
  }
  if (cudnnStatus_t st = rgpu::cpudnn::check_rnn(r); st != CUDNN_STATUS_SUCCESS) return st;
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
  return rgpu::protocol::cudnn::get_rnn(d, algo, cellMode, biasMode, dirMode, inputMode, dataType, mathPrec, mathType,
                                       inputSize, hiddenSize, projSize, numLayers, dropoutDesc, auxFlags);
}

// --- RNN data descriptor -----------------------------------------------------

RGPU_EXPORT cudnnStatus_t cudnnCreateRNNDataDescriptor(cudnnRNNDataDescriptor_t* d) {
  return guarded("cudnnCreateRNNDataDescriptor", [&] { return create(d); });
}
RGPU_EXPORT cudnnStatus_t cudnnDestroyRNNDataDescriptor(cudnnRNNDataDescriptor_t d) { return destroy(d); }

RGPU_EXPORT cudnnStatus_t cudnnSetRNNDataDescriptor(cudnnRNNDataDescriptor_t d, cudnnDataType_t dataType,
                                                    cudnnRNNDataLayout_t layout, int maxSeqLength, int batchSize,
                                                    int vectorSize, const int seqLengthArray[], void* paddingFill) {
  return guarded("cudnnSetRNNDataDescriptor", [&]() -> cudnnStatus_t {
    if (!d || d->magic != cudnnRNNDataStruct::kMagic || !seqLengthArray) return CUDNN_STATUS_BAD_PARAM;
    if (batchSize < 1 || batchSize > kMaxRnnSeq) return CUDNN_STATUS_BAD_PARAM;  // before the lengths are read
    if (dataType != CUDNN_DATA_FLOAT && dataType != CUDNN_DATA_HALF && dataType != CUDNN_DATA_BFLOAT16) {
      return CUDNN_STATUS_NOT_SUPPORTED;
    }
    RnnData r;
    r.dtype = dataType, r.layout = layout, r.max_seq = maxSeqLength, r.batch = batchSize, r.vector = vectorSize;
    r.lens.assign(seqLengthArray, seqLengthArray + batchSize);
    // The packed layout keeps the sequences sorted, longest first.
    if (layout == CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED && !std::is_sorted(r.lens.rbegin(), r.lens.rend())) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    r.has_fill = paddingFill != nullptr;
    if (paddingFill) {
      Strided one;
      one.dtype = dataType, one.nd = 1, one.dims[0] = 1, one.strides[0] = 1;
      float fill = 0;
      gather(one, paddingFill, &fill);
      r.fill = fill;
    }
    if (rgpu::protocol::cudnn::check_rnn_data(r)[0] != '\0') return CUDNN_STATUS_BAD_PARAM;
    d->d = std::move(r);
    d->set = true;
    return CUDNN_STATUS_SUCCESS;
  });
}

RGPU_EXPORT cudnnStatus_t cudnnGetRNNDataDescriptor(cudnnRNNDataDescriptor_t d, cudnnDataType_t* dataType,
                                                    cudnnRNNDataLayout_t* layout, int* maxSeqLength, int* batchSize,
                                                    int* vectorSize, int arrayLengthRequested, int seqLengthArray[],
                                                    void* paddingFill) {
  if (cudnnStatus_t s = rgpu::protocol::cudnn::get_rnn_data(d, dataType, layout, maxSeqLength, batchSize, vectorSize,
                                                             arrayLengthRequested, seqLengthArray);
      s != CUDNN_STATUS_SUCCESS) {
    return s;
  }
  const RnnData* r = data_of(d);
  if (paddingFill) {
    Strided one;
    one.dtype = cudnnDataType_t(r->dtype), one.nd = 1, one.dims[0] = 1, one.strides[0] = 1;
    const float fill = float(r->fill);
    scatter(one, &fill, paddingFill, 1.0, 0.0);
  }
  return CUDNN_STATUS_SUCCESS;
}

// --- sizes and the weight layout ---------------------------------------------

RGPU_EXPORT cudnnStatus_t cudnnGetRNNWeightSpaceSize(cudnnHandle_t handle, cudnnRNNDescriptor_t d, size_t* size) {
  const RnnDesc* r = rnn_of(d);
  if (!handle || !r || !size) return CUDNN_STATUS_BAD_PARAM;
  *size = size_t(rnn::weight_elems(config_of(*r))) * elem_bytes(r->dtype);
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnGetRNNTempSpaceSizes(cudnnHandle_t handle, cudnnRNNDescriptor_t d,
                                                    cudnnForwardMode_t fwdMode, cudnnRNNDataDescriptor_t xDesc,
                                                    size_t* workSpaceSize, size_t* reserveSpaceSize) {
  const RnnDesc* r = rnn_of(d);
  const RnnData* x = data_of(xDesc);
  if (!handle || !r || !x || (fwdMode != CUDNN_FWD_MODE_INFERENCE && fwdMode != CUDNN_FWD_MODE_TRAINING)) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  uint64_t reserve = 0;
  if (cudnnStatus_t s = reserve_bytes(*r, *x, &reserve); s != CUDNN_STATUS_SUCCESS) return s;
  // The stand-in computes in host buffers of its own: no workspace.
  if (workSpaceSize) *workSpaceSize = 0;
  if (reserveSpaceSize) *reserveSpaceSize = fwdMode == CUDNN_FWD_MODE_TRAINING ? size_t(reserve) : 0;
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnGetRNNWeightParams(cudnnHandle_t handle, cudnnRNNDescriptor_t d, int32_t pseudoLayer,
                                                  size_t weightSpaceSize, const void* weightSpace, int32_t linLayerID,
                                                  cudnnTensorDescriptor_t mDesc, void** mAddr,
                                                  cudnnTensorDescriptor_t bDesc, void** bAddr) {
  const RnnDesc* r = rnn_of(d);
  if (!handle || !r) return CUDNN_STATUS_BAD_PARAM;
  if ((mDesc && mDesc->magic != cudnnTensorStruct::kMagic) || (bDesc && bDesc->magic != cudnnTensorStruct::kMagic)) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  const rnn::Config c = config_of(*r);
  const size_t elem = elem_bytes(r->dtype);
  if (weightSpaceSize < size_t(rnn::weight_elems(c)) * elem) return CUDNN_STATUS_BAD_PARAM;
  const int g = c.gates();
  const bool known = (linLayerID >= 0 && linLayerID < 2 * g) || (linLayerID == 8 && c.projects());
  if (pseudoLayer < 0 || pseudoLayer >= c.layers * c.dirs || !known) return CUDNN_STATUS_BAD_PARAM;
  const auto* base = static_cast<const char*>(weightSpace);
  rnn::Block b;
  if (mAddr) *mAddr = nullptr;
  if (bAddr) *bAddr = nullptr;
  if ((mDesc || mAddr) && rnn::matrix_block(c, pseudoLayer, linLayerID, &b)) {
    if (mDesc) set_matrix_desc(mDesc, dtype_of(*r), b.rows, b.cols);
    if (mAddr) *mAddr = const_cast<char*>(base) + b.offset * int64_t(elem);
  }
  if ((bDesc || bAddr) && rnn::bias_block(c, pseudoLayer, linLayerID, &b)) {
    if (bDesc) set_matrix_desc(bDesc, dtype_of(*r), b.rows, 1);
    if (bAddr) *bAddr = const_cast<char*>(base) + b.offset * int64_t(elem);
  }
  return CUDNN_STATUS_SUCCESS;
}
