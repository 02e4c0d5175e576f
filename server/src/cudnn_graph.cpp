// cuDNN graphs rebuilt through the table (cudnn_graph.h).
#include "cudnn_graph.h"

namespace rgpu::server {

CudnnDescriptors::~CudnnDescriptors() {
  if (!table_.cudnnBackendDestroyDescriptor) return;
  for (auto it = extra_.rbegin(); it != extra_.rend(); ++it) table_.cudnnBackendDestroyDescriptor(*it);
  for (auto it = descs_.rbegin(); it != descs_.rend(); ++it) table_.cudnnBackendDestroyDescriptor(*it);
}

cudnnStatus_t CudnnDescriptors::make(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* out) {
  if (!table_.cudnnBackendCreateDescriptor) return CUDNN_STATUS_NOT_SUPPORTED;
  *out = nullptr;
  cudnnStatus_t s = table_.cudnnBackendCreateDescriptor(type, out);
  if (s == CUDNN_STATUS_SUCCESS) extra_.push_back(*out);
  return s;
}

cudnnStatus_t CudnnDescriptors::build(const protocol::cudnn::Graph& g, cudnnHandle_t handle, std::string* why) {
  const CudnnTable& t = table_;
  if (!t.cudnnBackendCreateDescriptor || !t.cudnnBackendSetAttribute || !t.cudnnBackendFinalize ||
      !t.cudnnBackendDestroyDescriptor) {
    *why = "the library lacks the backend API";
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  for (const protocol::cudnn::Node& n : g) {
    cudnnBackendDescriptor_t d = nullptr;
    cudnnStatus_t s = t.cudnnBackendCreateDescriptor(static_cast<cudnnBackendDescriptorType_t>(n.type), &d);
    if (s != CUDNN_STATUS_SUCCESS) {
      *why = "create of descriptor type " + std::to_string(n.type);
      return s;
    }
    descs_.push_back(d);
    for (const protocol::cudnn::Attr& a : n.attrs) {
      const auto name = static_cast<cudnnBackendAttributeName_t>(a.name);
      const auto type = static_cast<cudnnBackendAttributeType_t>(a.type);
      if (a.type == protocol::cudnn::kTypeDescriptor) {
        std::vector<cudnnBackendDescriptor_t> refs;
        for (uint32_t r : a.refs) refs.push_back(descs_[r]);
        s = t.cudnnBackendSetAttribute(d, name, type, a.count, refs.data());
      } else if (a.type == protocol::cudnn::kTypeHandle) {
        s = t.cudnnBackendSetAttribute(d, name, type, 1, &handle);
      } else {
        s = t.cudnnBackendSetAttribute(d, name, type, a.count, a.data.data());
      }
      if (s != CUDNN_STATUS_SUCCESS) {
        *why = "attribute " + std::to_string(a.name) + " of descriptor type " + std::to_string(n.type);
        return s;
      }
    }
    s = t.cudnnBackendFinalize(d);
    if (s != CUDNN_STATUS_SUCCESS) {
      *why = "finalize of descriptor type " + std::to_string(n.type);
      return s;
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnn_check_graph(const protocol::cudnn::Graph& g, std::string* why) {
  for (const protocol::cudnn::Node& n : g) {
    switch (n.type) {
      // What PyTorch's convolutions build, and what carries no pointer: a
      // variant pack (device addresses) or a kernel cache travel otherwise
      // or not at all.
      case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
      case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
      case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
      case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
      case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
      case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
      case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR:
      case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
      case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
      case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
      case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
      case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
      case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
        break;
      default:
        *why = "descriptor type " + std::to_string(n.type) + " is not passed on";
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    if (n.type == CUDNN_BACKEND_TENSOR_DESCRIPTOR) {
      protocol::cudnn::TensorFacts f;
      if (!protocol::cudnn::tensor_facts(n, &f)) {
        *why = "a tensor without dims, strides, type or uid";
        return CUDNN_STATUS_BAD_PARAM;
      }
      if (!f.is_virtual && protocol::cudnn::tensor_bytes(f.dtype, f.nd, f.dims, f.strides) == kNoExtent) {
        *why = "a tensor rgpud cannot size";
        return CUDNN_STATUS_NOT_SUPPORTED;
      }
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace rgpu::server
