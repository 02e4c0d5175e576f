// cuDNN's backend descriptors on the server: a Graph a client sent
// (rgpu/protocol/cudnn_wire.h) rebuilt as the library's own descriptors
// through the table, and the plans kept for later executes.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "library_tables.h"
#include "rgpu/protocol/cudnn_wire.h"

namespace rgpu::server {

// The library's descriptors of one graph, created, set and finalized in the
// graph's order, destroyed through the table in reverse when this goes.
// Not thread-safe.
class CudnnDescriptors {
 public:
  explicit CudnnDescriptors(const CudnnTable& table) : table_(table) {}
  ~CudnnDescriptors();
  CudnnDescriptors(const CudnnDescriptors&) = delete;
  CudnnDescriptors& operator=(const CudnnDescriptors&) = delete;

  // Rebuilds every node; the handle stands in for handle-typed attributes.
  // The library's status on failure (and `why`), CUDNN_STATUS_SUCCESS else.
  cudnnStatus_t build(const protocol::cudnn::Graph& g, cudnnHandle_t handle, std::string* why);
  // A descriptor made here (not from a graph), destroyed with the rest.
  cudnnStatus_t make(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* out);
  cudnnBackendDescriptor_t root() const { return descs_.empty() ? nullptr : descs_.back(); }
  const CudnnTable& table() const { return table_; }

 private:
  const CudnnTable& table_;
  std::vector<cudnnBackendDescriptor_t> descs_;  // graph's, in order
  std::vector<cudnnBackendDescriptor_t> extra_;
};

// A finalized execution plan a session keeps under its client handle: the
// library's descriptors, the tensors a variant pack must give (non-virtual,
// by uid) with their extents, and the workspace it needs.
struct CudnnPlan {
  explicit CudnnPlan(const CudnnTable& table) : descs(table) {}
  CudnnDescriptors descs;
  std::map<int64_t, uint64_t> tensor_bytes;  // uid -> bytes from its address
  int64_t workspace = 0;
};

// Whether every node of `g` is a descriptor type the server passes on, and
// each plan's tensors can be sized. CUDNN_STATUS_NOT_SUPPORTED otherwise.
cudnnStatus_t cudnn_check_graph(const protocol::cudnn::Graph& g, std::string* why);

}  // namespace rgpu::server
