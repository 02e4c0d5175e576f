// The stand-in's dropout, RNN and RNN data descriptors: the bag the client
// library uses too (rgpu/protocol/cudnn_rnn_objects.h). A call copies the
// value it needs, so queued work never points back at a descriptor.
#pragma once

#include <cudnn.h>

#include "rgpu/protocol/cudnn_rnn_objects.h"
#include "rnn_math.h"

namespace rgpu::cpudnn {

// What a set RNN or RNN data descriptor holds (cudnn_rnn_objects.h), and
// the largest sizes (cuDNN's own limits are lower for most; these keep
// every size below 2^63 bytes).
using RnnDesc = rgpu::protocol::cudnn::RnnDesc;
using RnnData = rgpu::protocol::cudnn::RnnData;
using rgpu::protocol::cudnn::kMaxRnnLayers;
using rgpu::protocol::cudnn::kMaxRnnSeq;
using rgpu::protocol::cudnn::kMaxRnnVector;

}  // namespace rgpu::cpudnn
