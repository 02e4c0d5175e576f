// Loading of the CPU stand-in for cuDNN for the tests.
#include "dnn_lib.h"

#include <dlfcn.h>

namespace rgpu::cpudnn::test {

DnnLib& dnn() {
  static DnnLib* shared = [] {
    cpudev::test::lib();  // the CPU device first: the stand-in's DT_NEEDED resolves to it
    auto* l = new DnnLib();  // lives for the process, like the loaded library
    l->handle = dlopen(RGPU_CPU_CUDNN_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (l->handle) {
#define RGPU_DNN_RESOLVE(name)                                                 \
  l->name = reinterpret_cast<decltype(l->name)>(dlsym(l->handle, #name));      \
  if (!l->name) l->missing += #name " ";
      RGPU_CUDNN_TEST_FUNCTIONS(RGPU_DNN_RESOLVE)
#undef RGPU_DNN_RESOLVE
    }
    return l;
  }();
  return *shared;
}

void DnnTest::SetUp() {
  CpuDeviceTest::SetUp();
  ASSERT_NE(nullptr, d.handle) << dlerror();
  ASSERT_EQ("", d.missing);
  DNN_OK(d.cudnnCreate(&h));
}

void DnnTest::TearDown() {
  for (auto it = descs_.rbegin(); it != descs_.rend(); ++it) d.cudnnBackendDestroyDescriptor(*it);
  if (ctx) {
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSynchronize());
  }
  if (h) {
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnDestroy(h));
  }
  for (CUdeviceptr p : allocations_) cu.cuMemFree(p);
  CpuDeviceTest::TearDown();
}

CUdeviceptr DnnTest::upload(const std::vector<float>& v) {
  CUdeviceptr p = 0;
  EXPECT_EQ(CUDA_SUCCESS, cu.cuMemAlloc(&p, v.size() * 4));
  if (!p) return 0;
  allocations_.push_back(p);
  EXPECT_EQ(CUDA_SUCCESS, cu.cuMemcpyHtoD(p, v.data(), v.size() * 4));
  return p;
}

std::vector<float> DnnTest::download(CUdeviceptr p, size_t n) {
  std::vector<float> v(n);
  EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSynchronize());
  EXPECT_EQ(CUDA_SUCCESS, cu.cuMemcpyDtoH(v.data(), p, n * 4));
  return v;
}

cudnnBackendDescriptor_t DnnTest::make(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t out = nullptr;
  EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnBackendCreateDescriptor(type, &out));
  descs_.push_back(out);
  return out;
}

void DnnTest::set(cudnnBackendDescriptor_t desc, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                  int64_t n, const void* v) {
  EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnBackendSetAttribute(desc, name, type, n, v)) << "attribute " << name;
}

void DnnTest::finalize(cudnnBackendDescriptor_t desc) {
  EXPECT_EQ(CUDNN_STATUS_SUCCESS, d.cudnnBackendFinalize(desc));
}

cudnnBackendDescriptor_t DnnTest::tensor(int64_t uid, const std::vector<int64_t>& dims,
                                         const std::vector<int64_t>& strides, cudnnDataType_t dtype) {
  auto t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const int64_t align = 16;
  set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dtype);
  set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, int64_t(dims.size()), dims.data());
  set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, int64_t(strides.size()), strides.data());
  set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  finalize(t);
  return t;
}

std::vector<int64_t> packed(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) s[i - 1] = s[i] * dims[i];
  return s;
}

std::vector<int64_t> channels_last(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size());
  int64_t acc = dims[1];
  s[1] = 1;
  for (size_t i = dims.size() - 1; i >= 2; --i) {
    s[i] = acc;
    acc *= dims[i];
  }
  s[0] = acc;
  return s;
}

}  // namespace rgpu::cpudnn::test
