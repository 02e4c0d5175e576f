// One convolution of an execution plan (forward, backward data or backward
// filter), as the stand-in derives it from the plan's operation graph and
// computes it with oneDNN.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <string>

#include "layout.h"

struct cudnnContext;

namespace rgpu::cpudnn {

struct Desc;

struct ConvPlan {
  enum Kind { kForward, kBackwardData, kBackwardFilter } kind = kForward;
  // x: the input image (dx for backward data), w: the filter (dw for
  // backward filter), y: the output (dy for either backward).
  Strided x, w, y;
  int64_t x_uid = 0, w_uid = 0, y_uid = 0;
  int spatial = 0;
  int64_t pre_pad[3] = {}, post_pad[3] = {}, stride[3] = {}, dilation[3] = {};
  bool flip = false;  // CUDNN_CONVOLUTION: the filter is mirrored
  int64_t groups = 1;
  double alpha = 1.0, beta = 0.0;
};

// The convolution an operation graph holds, or a status with `why`.
cudnnStatus_t derive_conv(const Desc& op_graph, ConvPlan* out, std::string* why);

// Queues the plan on the handle's stream with the variant pack's pointers.
cudnnStatus_t run_conv(cudnnContext* handle, const ConvPlan& plan, const Desc& variant_pack);

}  // namespace rgpu::cpudnn
