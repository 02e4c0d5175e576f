// cuDNN's legacy calls on the client: versions and strings; tensor, filter,
// convolution and activation descriptors as client objects (no round trip);
// the batch norm calls, each one one-way message with its tensor
// descriptors inside (rgpu/protocol/cudnn_wire.h); their size queries one
// round trip per distinct question, then answered from memory.
#include <cstring>
#include <new>

#include "api_common.h"
#include "cudnn_client.h"
#include "legacy_tensor.h"
#include "unimplemented.h"

namespace cw = rgpu::protocol::cudnn;

struct cudnnFilterStruct {
  static constexpr uint32_t kMagic = 0x66636e64;
  uint32_t magic = kMagic;
  bool set = false;
  int32_t dtype = 0, format = 0, nd = 0;
  int32_t dims[8] = {};
};
struct cudnnConvolutionStruct {
  static constexpr uint32_t kMagic = 0x63636e64;
  uint32_t magic = kMagic;
  int32_t nd = 0, mode = 0, compute = 0, groups = 1, math = 0;
  int32_t pads[6] = {}, strides[6] = {}, dilations[6] = {};
};
struct cudnnActivationStruct {
  static constexpr uint32_t kMagic = 0x61636e64;
  uint32_t magic = kMagic;
  int32_t mode = 0, nan = 0;
  double coef = 0;
};

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

template <class T>
T* live(T* d) {
  return d && d->magic == T::kMagic ? d : nullptr;
}

}  // namespace

const cw::LegacyTensor* tensor(cudnnTensorDescriptor_t d) {
  return live(d) && d->set ? &d->t : nullptr;
}

cudnnStatus_t set_tensor(cudnnTensorDescriptor_t d, cudnnDataType_t dtype, int nd, const int* dims,
                         const int* strides) {
  if (!live(d) || nd < 1 || nd > 8 || !dims || !strides) return CUDNN_STATUS_BAD_PARAM;
  if (cw::dtype_bytes(dtype) == 0) return CUDNN_STATUS_NOT_SUPPORTED;
  cw::LegacyTensor t;
  t.dtype = dtype;
  t.nd = nd;
  for (int i = 0; i < nd; ++i) {
    if (dims[i] < 1 || strides[i] < 0) return CUDNN_STATUS_BAD_PARAM;
    t.dims[i] = dims[i];
    t.strides[i] = strides[i];
  }
  d->t = t;
  d->set = true;
  return CUDNN_STATUS_SUCCESS;
}

namespace {

uint64_t dev(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// A host scalar as cuDNN reads it: double for double data, float otherwise.
double scalar(const void* p, int32_t dtype) {
  if (dtype == CUDNN_DATA_DOUBLE) {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

// One size query: the memo's answer, or a round trip that fills it.
cudnnStatus_t bn_size(uint64_t which, cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
                      std::initializer_list<const cw::LegacyTensor*> tensors, size_t* out) {
  if (!handle || !out) return CUDNN_STATUS_BAD_PARAM;
  protocol::ArgWriter key;
  key.u64(which);
  key.scalar(uint32_t(mode));
  key.scalar(uint32_t(ops));
  for (const cw::LegacyTensor* t : tensors) {
    if (!t) return CUDNN_STATUS_BAD_PARAM;
    cw::write_tensor(key, *t);
  }
  Shim* shim = nullptr;
  uint64_t ctx = 0;
  if (!enter(&shim, &ctx)) return CUDNN_STATUS_EXECUTION_FAILED;
  std::vector<std::byte> reply;
  if (!shim->memo_get(key.bytes(), &reply)) {
    protocol::ArgWriter w;
    w.u64(which);
    w.u64(wire_handle(handle));
    w.scalar(uint32_t(mode));
    w.scalar(uint32_t(ops));
    for (const cw::LegacyTensor* t : tensors) cw::write_tensor(w, *t);
    if (cudnnStatus_t s = send_sync(shim, ctx, cw::kBnSizes, w, &reply); s != CUDNN_STATUS_SUCCESS) return s;
    shim->memo_put(key.take(), reply);
  }
  protocol::ArgReader rd(reply);
  uint64_t size = 0;
  if (!rd.u64(&size) || !rd.finish()) return CUDNN_STATUS_EXECUTION_FAILED;
  *out = size;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace
}  // namespace rgpu::shim::cudnn

using namespace rgpu::shim::cudnn;
using rgpu::shim::report_unimplemented;

// --- versions and strings ----------------------------------------------------

// The server's library's version, asked once per process (PyTorch checks it
// against the version it was built with).
RGPU_EXPORT size_t cudnnGetVersion(void) {
  try {
    rgpu::shim::Shim* shim = nullptr;
    uint64_t ctx = 0;
    if (!enter(&shim, &ctx)) return 0;
    rgpu::protocol::ArgWriter key;
    key.u64(cw::kVersion);
    std::vector<std::byte> reply;
    if (!shim->memo_get(key.bytes(), &reply)) {
      rgpu::protocol::ArgWriter w;
      if (send_sync(shim, ctx, cw::kVersion, w, &reply) != CUDNN_STATUS_SUCCESS) return 0;
      shim->memo_put(key.take(), reply);
    }
    rgpu::protocol::ArgReader rd(reply);
    uint64_t v = 0;
    return rd.u64(&v) && rd.finish() ? size_t(v) : 0;
  } catch (...) {
    return 0;
  }
}

RGPU_EXPORT cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int* value) {
  if (!value) return CUDNN_STATUS_BAD_PARAM;
  const size_t v = cudnnGetVersion();  // major * 10000 + minor * 100 + patch (cuDNN 9)
  if (v == 0) return CUDNN_STATUS_NOT_INITIALIZED;
  switch (type) {
    case MAJOR_VERSION: *value = int(v / 10000); return CUDNN_STATUS_SUCCESS;
    case MINOR_VERSION: *value = int(v / 100 % 100); return CUDNN_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = int(v % 100); return CUDNN_STATUS_SUCCESS;
  }
  return CUDNN_STATUS_BAD_PARAM;
}

// The runtime rgpu provides to a CUDA 12 build (libcudart.so.12's version).
RGPU_EXPORT size_t cudnnGetCudartVersion(void) { return 12040; }

RGPU_EXPORT const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status / 1000) {
    case 0: return "CUDNN_STATUS_SUCCESS";
    case 1: return "CUDNN_STATUS_NOT_INITIALIZED";
    case 2: return "CUDNN_STATUS_BAD_PARAM";
    case 3: return "CUDNN_STATUS_NOT_SUPPORTED";
    case 4: return "CUDNN_STATUS_INTERNAL_ERROR";
    case 5: return "CUDNN_STATUS_EXECUTION_FAILED";
    default: return "CUDNN_STATUS_UNKNOWN";
  }
}

RGPU_EXPORT void cudnnGetLastErrorString(char* message, size_t max_size) {
  // rgpud logs a refusal's detail; the client keeps none.
  if (message && max_size > 0) message[0] = '\0';
}

// --- descriptors -------------------------------------------------------------

RGPU_EXPORT cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* d) { return create(d); }
RGPU_EXPORT cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) { return destroy(d); }

RGPU_EXPORT cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t d, cudnnDataType_t dtype, int nbDims,
                                                     const int dimA[], const int strideA[]) {
  return set_tensor(d, dtype, nbDims, dimA, strideA);
}

RGPU_EXPORT cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t d, cudnnDataType_t dtype, int n,
                                                       int c, int h, int w, int ns, int cs, int hs, int ws) {
  const int dims[4] = {n, c, h, w}, strides[4] = {ns, cs, hs, ws};
  return set_tensor(d, dtype, 4, dims, strides);
}

RGPU_EXPORT cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
                                                     cudnnDataType_t dtype, int n, int c, int h, int w) {
  if (format == CUDNN_TENSOR_NCHW) return cudnnSetTensor4dDescriptorEx(d, dtype, n, c, h, w, c * h * w, h * w, w, 1);
  if (format == CUDNN_TENSOR_NHWC) return cudnnSetTensor4dDescriptorEx(d, dtype, n, c, h, w, c * h * w, 1, w * c, c);
  return CUDNN_STATUS_NOT_SUPPORTED;
}

RGPU_EXPORT cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t d, int nbDimsRequested,
                                                     cudnnDataType_t* dtype, int* nbDims, int dimA[], int strideA[]) {
  const cw::LegacyTensor* t = tensor(d);
  if (!t || !dtype || !nbDims || nbDimsRequested < 0) return CUDNN_STATUS_BAD_PARAM;
  *dtype = cudnnDataType_t(t->dtype);
  *nbDims = t->nd;
  for (int i = 0; i < t->nd && i < nbDimsRequested; ++i) {
    if (dimA) dimA[i] = t->dims[i];
    if (strideA) strideA[i] = t->strides[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* d) { return create(d); }
RGPU_EXPORT cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) { return destroy(d); }

RGPU_EXPORT cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t dtype,
                                                     cudnnTensorFormat_t format, int nbDims, const int dims[]) {
  if (!live(d) || nbDims < 1 || nbDims > 8 || !dims) return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < nbDims; ++i) {
    if (dims[i] < 1) return CUDNN_STATUS_BAD_PARAM;
    d->dims[i] = dims[i];
  }
  d->dtype = dtype;
  d->format = format;
  d->nd = nbDims;
  d->set = true;
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t d, int nbDimsRequested,
                                                     cudnnDataType_t* dtype, cudnnTensorFormat_t* format,
                                                     int* nbDims, int dims[]) {
  if (!live(d) || !d->set || !dtype || !format || !nbDims || nbDimsRequested < 0) return CUDNN_STATUS_BAD_PARAM;
  *dtype = cudnnDataType_t(d->dtype);
  *format = cudnnTensorFormat_t(d->format);
  *nbDims = d->nd;
  for (int i = 0; i < d->nd && i < nbDimsRequested && dims; ++i) dims[i] = d->dims[i];
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* d) { return create(d); }
RGPU_EXPORT cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) { return destroy(d); }

RGPU_EXPORT cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t d, int n, const int pads[],
                                                          const int strides[], const int dilations[],
                                                          cudnnConvolutionMode_t mode, cudnnDataType_t compute) {
  if (!live(d) || n < 1 || n > 6 || !pads || !strides || !dilations) return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < n; ++i) {
    d->pads[i] = pads[i];
    d->strides[i] = strides[i];
    d->dilations[i] = dilations[i];
  }
  d->nd = n;
  d->mode = mode;
  d->compute = compute;
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups) {
  if (!live(d) || groups < 1) return CUDNN_STATUS_BAD_PARAM;
  d->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t math) {
  if (!live(d)) return CUDNN_STATUS_BAD_PARAM;
  d->math = math;
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* d) { return create(d); }
RGPU_EXPORT cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t d) { return destroy(d); }

RGPU_EXPORT cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d, cudnnActivationMode_t mode,
                                                       cudnnNanPropagation_t nan, double coef) {
  if (!live(d)) return CUDNN_STATUS_BAD_PARAM;
  d->mode = mode;
  d->nan = nan;
  d->coef = coef;
  return CUDNN_STATUS_SUCCESS;
}

// --- batch norm --------------------------------------------------------------

RGPU_EXPORT cudnnStatus_t cudnnBatchNormalizationForwardTrainingEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t xDesc, const void* xData, const cudnnTensorDescriptor_t zDesc, const void* zData,
    const cudnnTensorDescriptor_t yDesc, void* yData, const cudnnTensorDescriptor_t bnDesc, const void* bnScale,
    const void* bnBias, double factor, void* runningMean, void* runningVar, double epsilon, void* saveMean,
    void* saveInvVariance, cudnnActivationDescriptor_t activationDesc, void* workspace, size_t workSpaceSizeInBytes,
    void* reserveSpace, size_t reserveSpaceSizeInBytes) {
  try {
    const cw::LegacyTensor *x = tensor(xDesc), *y = tensor(yDesc), *bn = tensor(bnDesc);
    if (!handle || !alpha || !beta || !x || !y || !bn) return CUDNN_STATUS_BAD_PARAM;
    (void)zDesc;
    if (bnOps != CUDNN_BATCHNORM_OPS_BN || zData || activationDesc) {
      return static_cast<cudnnStatus_t>(report_unimplemented("cudnnBatchNormalizationForwardTrainingEx(fused ops)",
                                                             CUDNN_STATUS_NOT_SUPPORTED, "CUDNN_STATUS_NOT_SUPPORTED"));
    }
    rgpu::shim::Shim* shim = nullptr;
    uint64_t ctx = 0;
    if (!enter(&shim, &ctx)) return CUDNN_STATUS_EXECUTION_FAILED;
    rgpu::protocol::ArgWriter w;
    w.u64(wire_handle(handle));
    w.scalar(uint32_t(mode));
    w.scalar(uint32_t(bnOps));
    w.scalar(scalar(alpha, x->dtype));
    w.scalar(scalar(beta, x->dtype));
    cw::write_tensor(w, *x);
    w.u64(dev(xData));
    cw::write_tensor(w, *y);
    w.u64(dev(yData));
    cw::write_tensor(w, *bn);
    w.u64(dev(bnScale)), w.u64(dev(bnBias)), w.scalar(factor), w.u64(dev(runningMean)), w.u64(dev(runningVar));
    w.scalar(epsilon), w.u64(dev(saveMean)), w.u64(dev(saveInvVariance)), w.u64(dev(workspace));
    w.u64(workSpaceSizeInBytes), w.u64(dev(reserveSpace)), w.u64(reserveSpaceSizeInBytes);
    send_async(shim, ctx, cw::kBnForwardTraining, w);
    return CUDNN_STATUS_SUCCESS;
  } catch (...) {
    return CUDNN_STATUS_EXECUTION_FAILED;
  }
}

RGPU_EXPORT cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t xDesc, const void* x_, const cudnnTensorDescriptor_t yDesc, void* y_,
    const cudnnTensorDescriptor_t bnDesc, const void* bnScale, const void* bnBias, const void* estimatedMean,
    const void* estimatedVariance, double epsilon) {
  try {
    const cw::LegacyTensor *x = tensor(xDesc), *y = tensor(yDesc), *bn = tensor(bnDesc);
    if (!handle || !alpha || !beta || !x || !y || !bn) return CUDNN_STATUS_BAD_PARAM;
    rgpu::shim::Shim* shim = nullptr;
    uint64_t ctx = 0;
    if (!enter(&shim, &ctx)) return CUDNN_STATUS_EXECUTION_FAILED;
    rgpu::protocol::ArgWriter w;
    w.u64(wire_handle(handle));
    w.scalar(uint32_t(mode));
    w.scalar(scalar(alpha, x->dtype));
    w.scalar(scalar(beta, x->dtype));
    cw::write_tensor(w, *x);
    w.u64(dev(x_));
    cw::write_tensor(w, *y);
    w.u64(dev(y_));
    cw::write_tensor(w, *bn);
    w.u64(dev(bnScale)), w.u64(dev(bnBias)), w.u64(dev(estimatedMean)), w.u64(dev(estimatedVariance));
    w.scalar(epsilon);
    send_async(shim, ctx, cw::kBnForwardInference, w);
    return CUDNN_STATUS_SUCCESS;
  } catch (...) {
    return CUDNN_STATUS_EXECUTION_FAILED;
  }
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
  try {
    (void)yDesc, (void)yData;
    const cw::LegacyTensor *x = tensor(xDesc), *dy = tensor(dyDesc), *dx = tensor(dxDesc), *bn = tensor(dBnDesc);
    if (!handle || !alphaDataDiff || !betaDataDiff || !alphaParamDiff || !betaParamDiff || !x || !dy || !dx || !bn) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    (void)dzDesc;
    if (bnOps != CUDNN_BATCHNORM_OPS_BN || dzData || activationDesc) {
      return static_cast<cudnnStatus_t>(report_unimplemented("cudnnBatchNormalizationBackwardEx(fused ops)",
                                                             CUDNN_STATUS_NOT_SUPPORTED, "CUDNN_STATUS_NOT_SUPPORTED"));
    }
    rgpu::shim::Shim* shim = nullptr;
    uint64_t ctx = 0;
    if (!enter(&shim, &ctx)) return CUDNN_STATUS_EXECUTION_FAILED;
    rgpu::protocol::ArgWriter w;
    w.u64(wire_handle(handle));
    w.scalar(uint32_t(mode));
    w.scalar(uint32_t(bnOps));
    w.scalar(scalar(alphaDataDiff, x->dtype));
    w.scalar(scalar(betaDataDiff, x->dtype));
    w.scalar(scalar(alphaParamDiff, x->dtype));
    w.scalar(scalar(betaParamDiff, x->dtype));
    cw::write_tensor(w, *x);
    w.u64(dev(xData));
    cw::write_tensor(w, *dy);
    w.u64(dev(dyData));
    cw::write_tensor(w, *dx);
    w.u64(dev(dxData));
    cw::write_tensor(w, *bn);
    w.u64(dev(bnScaleData)), w.u64(dev(bnBiasData)), w.u64(dev(dBnScaleData)), w.u64(dev(dBnBiasData));
    w.scalar(epsilon), w.u64(dev(savedMean)), w.u64(dev(savedInvVariance));
    w.u64(dev(workSpace)), w.u64(workSpaceSizeInBytes), w.u64(dev(reserveSpace)), w.u64(reserveSpaceSizeInBytes);
    send_async(shim, ctx, cw::kBnBackward, w);
    return CUDNN_STATUS_SUCCESS;
  } catch (...) {
    return CUDNN_STATUS_EXECUTION_FAILED;
  }
}

RGPU_EXPORT cudnnStatus_t cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops, const cudnnTensorDescriptor_t xDesc,
    const cudnnTensorDescriptor_t zDesc, const cudnnTensorDescriptor_t yDesc, const cudnnTensorDescriptor_t bnDesc,
    const cudnnActivationDescriptor_t activationDesc, size_t* sizeInBytes) {
  try {
    (void)zDesc;  // read only by the fused ops, which are refused
    if (activationDesc) return CUDNN_STATUS_NOT_SUPPORTED;
    return bn_size(0, handle, mode, ops, {tensor(xDesc), tensor(yDesc), tensor(bnDesc)}, sizeInBytes);
  } catch (...) {
    return CUDNN_STATUS_EXECUTION_FAILED;
  }
}

RGPU_EXPORT cudnnStatus_t cudnnGetBatchNormalizationBackwardExWorkspaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops, const cudnnTensorDescriptor_t xDesc,
    const cudnnTensorDescriptor_t yDesc, const cudnnTensorDescriptor_t dyDesc, const cudnnTensorDescriptor_t dzDesc,
    const cudnnTensorDescriptor_t dxDesc, const cudnnTensorDescriptor_t dBnDesc,
    const cudnnActivationDescriptor_t activationDesc, size_t* sizeInBytes) {
  try {
    (void)dzDesc;  // read only by the fused ops, which are refused
    if (activationDesc) return CUDNN_STATUS_NOT_SUPPORTED;
    // yDesc is optional (only fused activations read y): x's stands in.
    const cw::LegacyTensor* y = yDesc ? tensor(yDesc) : tensor(xDesc);
    return bn_size(1, handle, mode, ops, {tensor(xDesc), y, tensor(dyDesc), tensor(dxDesc), tensor(dBnDesc)},
                   sizeInBytes);
  } catch (...) {
    return CUDNN_STATUS_EXECUTION_FAILED;
  }
}

RGPU_EXPORT cudnnStatus_t cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
    const cudnnActivationDescriptor_t activationDesc, const cudnnTensorDescriptor_t xDesc, size_t* sizeInBytes) {
  try {
    if (activationDesc) return CUDNN_STATUS_NOT_SUPPORTED;
    return bn_size(2, handle, mode, ops, {tensor(xDesc)}, sizeInBytes);
  } catch (...) {
    return CUDNN_STATUS_EXECUTION_FAILED;
  }
}
