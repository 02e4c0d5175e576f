// Legacy tensor descriptors.
#include "tensor_desc.h"

#include "handle.h"

using namespace rgpu::cpudnn;

RGPU_EXPORT cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* desc) {
  return guarded("cudnnCreateTensorDescriptor", [&] {
    if (!desc) return CUDNN_STATUS_BAD_PARAM;
    *desc = new cudnnTensorStruct();
    return CUDNN_STATUS_SUCCESS;
  });
}

RGPU_EXPORT cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t desc) {
  if (desc && desc->magic == cudnnTensorStruct::kMagic) {
    desc->magic = 0;
    delete desc;
  }
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t desc, cudnnDataType_t dtype,
                                                     int nbDims, const int dimA[], const int strideA[]) {
  if (!desc || desc->magic != cudnnTensorStruct::kMagic || nbDims < 1 || nbDims > 8 || !dimA || !strideA) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  if (!supported_dtype(dtype)) return CUDNN_STATUS_NOT_SUPPORTED;
  Strided t;
  t.dtype = dtype;
  t.nd = nbDims;
  for (int i = 0; i < nbDims; ++i) {
    if (dimA[i] < 1 || strideA[i] < 0) return CUDNN_STATUS_BAD_PARAM;
    t.dims[i] = dimA[i];
    t.strides[i] = strideA[i];
  }
  desc->t = t;
  desc->set = true;
  return CUDNN_STATUS_SUCCESS;
}

RGPU_EXPORT cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t desc, int nbDimsRequested,
                                                     cudnnDataType_t* dtype, int* nbDims, int dimA[],
                                                     int strideA[]) {
  const Strided* t = strided(desc);
  if (!t || !dtype || !nbDims || nbDimsRequested < 0) return CUDNN_STATUS_BAD_PARAM;
  *dtype = static_cast<cudnnDataType_t>(t->dtype);
  *nbDims = t->nd;
  for (int i = 0; i < t->nd && i < nbDimsRequested; ++i) {
    if (dimA) dimA[i] = int(t->dims[i]);
    if (strideA) strideA[i] = int(t->strides[i]);
  }
  return CUDNN_STATUS_SUCCESS;
}
