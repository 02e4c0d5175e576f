// The stand-in's backend (graph) API descriptors: attribute bags, plus what
// finalizing one derives (a heuristics' engine configs, a plan's
// convolution). cudnnBackendDescriptor_t points at one of these.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "conv.h"

namespace rgpu::cpudnn {

struct Desc {
  static constexpr uint32_t kMagic = 0x6e6e6463;  // "cdnn"
  uint32_t magic = kMagic;
  cudnnBackendDescriptorType_t type{};
  bool finalized = false;
  struct Value {
    cudnnBackendAttributeType_t type{};
    int64_t count = 0;
    std::vector<char> bytes;     // everything but descriptors
    // Descriptors: copies taken when the attribute was set, as cuDNN's
    // are (the caller may destroy its own right after).
    std::vector<std::shared_ptr<const Desc>> refs;
  };
  std::map<int, Value> attrs;
  std::vector<std::shared_ptr<const Desc>> results;  // a heuristics' engine configs
  std::shared_ptr<const ConvPlan> plan;      // an execution plan's, once finalized
  cudnnHandle_t handle = nullptr;            // a plan's

  const Value* find(int name) const {
    auto it = attrs.find(name);
    return it == attrs.end() ? nullptr : &it->second;
  }
  const Desc* ref(int name) const {
    const Value* v = find(name);
    return v && v->type == CUDNN_TYPE_BACKEND_DESCRIPTOR && v->count == 1 ? v->refs[0].get() : nullptr;
  }
};

Desc* desc_of(cudnnBackendDescriptor_t d);

}  // namespace rgpu::cpudnn
