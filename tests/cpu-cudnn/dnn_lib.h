// Test helper: loads the CPU stand-in for cuDNN next to the CPU device and
// resolves its entry points by name, as rgpud does; device buffers, and the
// backend descriptors of one convolution built as cuDNN's frontend builds them.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <vector>

#include "../cpu-device/cuda_lib.h"

namespace rgpu::cpudnn::test {

#define RGPU_CUDNN_TEST_FUNCTIONS(X)                                                                      \
  X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream) X(cudnnGetStream) X(cudnnGetVersion)                   \
  X(cudnnBackendCreateDescriptor) X(cudnnBackendDestroyDescriptor) X(cudnnBackendSetAttribute)            \
  X(cudnnBackendGetAttribute) X(cudnnBackendFinalize) X(cudnnBackendExecute)                              \
  X(cudnnCreateTensorDescriptor) X(cudnnDestroyTensorDescriptor) X(cudnnSetTensorNdDescriptor)            \
  X(cudnnBatchNormalizationForwardTrainingEx) X(cudnnBatchNormalizationForwardInference)                  \
  X(cudnnBatchNormalizationBackwardEx)                                                                     \
  X(cudnnCreateDropoutDescriptor) X(cudnnDestroyDropoutDescriptor) X(cudnnDropoutGetStatesSize)           \
  X(cudnnSetDropoutDescriptor) X(cudnnRestoreDropoutDescriptor) X(cudnnCreateRNNDescriptor)               \
  X(cudnnDestroyRNNDescriptor) X(cudnnSetRNNDescriptor_v8) X(cudnnCreateRNNDataDescriptor)                \
  X(cudnnDestroyRNNDataDescriptor) X(cudnnSetRNNDataDescriptor) X(cudnnGetRNNWeightSpaceSize)             \
  X(cudnnGetRNNTempSpaceSizes) X(cudnnGetRNNWeightParams) X(cudnnRNNForward) X(cudnnRNNBackwardData_v8)   \
  X(cudnnRNNBackwardWeights_v8) X(cudnnGetTensorNdDescriptor)

// The loaded stand-in. Lifetime: the process. Thread-compatible.
struct DnnLib {
#define RGPU_DNN_MEMBER(name) decltype(&::name) name = nullptr;
  RGPU_CUDNN_TEST_FUNCTIONS(RGPU_DNN_MEMBER)
#undef RGPU_DNN_MEMBER
  void* handle = nullptr;
  std::string missing;
};

DnnLib& dnn();

#define DNN_OK(expr) ASSERT_EQ(CUDNN_STATUS_SUCCESS, (expr))

// A CPU device test with a cuDNN handle on the context's legacy stream.
class DnnTest : public cpudev::test::CpuDeviceTest {
 protected:
  void SetUp() override;
  void TearDown() override;
  CUdeviceptr upload(const std::vector<float>& v);
  std::vector<float> download(CUdeviceptr p, size_t n);

  // A finalized backend descriptor, destroyed at TearDown.
  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type);
  void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
           int64_t n, const void* v);
  void finalize(cudnnBackendDescriptor_t d);
  // A backend tensor descriptor (dims, strides in elements), finalized.
  cudnnBackendDescriptor_t tensor(int64_t uid, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                                  cudnnDataType_t dtype = CUDNN_DATA_FLOAT);

  DnnLib& d = dnn();
  cudnnHandle_t h = nullptr;

 private:
  std::vector<CUdeviceptr> allocations_;
  std::vector<cudnnBackendDescriptor_t> descs_;
};

// Packed (row-major) strides of dims.
std::vector<int64_t> packed(const std::vector<int64_t>& dims);
// Channels-last strides of N, C, spatial... dims.
std::vector<int64_t> channels_last(const std::vector<int64_t>& dims);

}  // namespace rgpu::cpudnn::test
