// The hand-written part of the dispatch of generated calls: which row runs
// a call, the per-API status codes, and the helpers the generated rows use.
#include "dispatch.h"

#include <cuda.h>

#include "cudnn_rows.h"
#include "error_slot.h"
#include "cufft_rows.h"
#include "cusparse_rows.h"
#include "library_rows.h"
#include "rgpu/protocol/cudnn_wire.h"
#include "rgpu/protocol/cufft_wire.h"
#include "rgpu/protocol/cusparse_wire.h"

namespace rgpu::server {

const DispatchRow* find_row(wire::Api api, uint32_t function) {
  switch (api) {
    case wire::Api::DRIVER:
      return find_driver_row(function);
    case wire::Api::CUDNN:
      if (function > protocol::cudnn::kFirstHandFn) return find_cudnn_hand_row(function);
      return find_library_row(api, function);
    case wire::Api::CUFFT:
      if (function > protocol::cufft::kFirstHandFn) return find_cufft_hand_row(function);
      return find_library_row(api, function);
    case wire::Api::CUSPARSE:
      if (function > protocol::cusparse::kFirstHandFn) return find_cusparse_hand_row(function);
      return find_library_row(api, function);
    default:
      return find_library_row(api, function);  // null for an API with no generated calls
  }
}

// 801/1 and their equivalents: the values of each library's status enum
// (cuda.h, driver_types.h, cublas_api.h, cudnn.h, cusparse.h, cufft.h,
// curand.h, cusolver_common.h, nvml.h).
uint32_t not_supported_code(wire::Api api) {
  switch (api) {
    case wire::Api::DRIVER: return CUDA_ERROR_NOT_SUPPORTED;         // 801
    case wire::Api::RUNTIME: return 801;                            // cudaErrorNotSupported
    case wire::Api::CUBLAS:
    case wire::Api::CUBLAS_LT: return 15;                           // CUBLAS_STATUS_NOT_SUPPORTED
    case wire::Api::CUDNN: return 3000;                             // CUDNN_STATUS_NOT_SUPPORTED
    case wire::Api::CUSPARSE: return 10;                            // CUSPARSE_STATUS_NOT_SUPPORTED
    case wire::Api::CUFFT: return 16;                               // CUFFT_NOT_SUPPORTED
    case wire::Api::CURAND: return 103;                             // CURAND_STATUS_TYPE_ERROR (no "not supported")
    case wire::Api::CUSOLVER: return 9;                             // CUSOLVER_STATUS_NOT_SUPPORTED
    case wire::Api::NVML: return 3;                                 // NVML_ERROR_NOT_SUPPORTED
    default: return CUDA_ERROR_NOT_SUPPORTED;                       // rgpu's own codes are CUresults
  }
}

uint32_t invalid_value_code(wire::Api api) {
  switch (api) {
    case wire::Api::DRIVER: return CUDA_ERROR_INVALID_VALUE;         // 1
    case wire::Api::RUNTIME: return 1;                              // cudaErrorInvalidValue
    case wire::Api::CUBLAS:
    case wire::Api::CUBLAS_LT: return 7;                            // CUBLAS_STATUS_INVALID_VALUE
    case wire::Api::CUDNN: return 2000;                             // CUDNN_STATUS_BAD_PARAM
    case wire::Api::CUSPARSE: return 3;                             // CUSPARSE_STATUS_INVALID_VALUE
    case wire::Api::CUFFT: return 4;                                // CUFFT_INVALID_VALUE
    case wire::Api::CURAND: return 104;                             // CURAND_STATUS_OUT_OF_RANGE
    case wire::Api::CUSOLVER: return 3;                             // CUSOLVER_STATUS_INVALID_VALUE
    case wire::Api::NVML: return 2;                                 // NVML_ERROR_INVALID_ARGUMENT
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

namespace dispatch {

InvokeOutcome refuse(wire::Api api, uint32_t code, std::string message) {
  // What the server cannot do (a library or function it does not have) is
  // the user's to know; a refused argument stays a detail for the log.
  if (code == not_supported_code(api)) note_reason(code, message);
  InvokeOutcome out;
  out.api = api;
  out.code = code;
  out.message = std::move(message);
  return out;
}

}  // namespace dispatch
}  // namespace rgpu::server
