// The RNN rows of cuDNN (cudnn_rnn_rows.h). rgpud rebuilds the library's
// dropout, RNN and RNN data descriptors from the wire's (one set per call,
// destroyed with it) and asks the library itself for the weight space,
// workspace and reserve sizes it checks the operands against, so the same
// rows serve NVIDIA's cuDNN and the CPU stand-in.
#include "cudnn_rnn_rows.h"

#include <cudnn.h>

#include <span>
#include <string>
#include <vector>

#include "cudnn_row_kit.h"

namespace rgpu::server {
namespace {

namespace cw = ::rgpu::protocol::cudnn;
using ::rgpu::protocol::ArgReader;
using ::rgpu::protocol::ArgWriter;
using dispatch::refuse;
using namespace cudnn_rows;
constexpr auto kApi = wire::Api::CUDNN;

InvokeOutcome unsupported(const char* fn) {
  return refuse(kApi, CUDNN_STATUS_NOT_SUPPORTED, std::string(fn) + ": not in this server's cudnn");
}

// The library's answer. "Not supported" (an RNN the library cannot run, such
// as the CPU stand-in's refusals) is the user's to know, as a reason; any
// other failure stays a detail for the log.
InvokeOutcome library(cudnnStatus_t s, const char* fn, const std::string& what) {
  if (s == CUDNN_STATUS_NOT_SUPPORTED) {
    return refuse(kApi, s, std::string(fn) + ": the server's cudnn does not support this rnn (its log says why)");
  }
  return status(s, fn, what);
}

// The library's descriptors of one call, destroyed with it. Lifetime: one
// row's call; not thread-safe.
class RnnDescs {
 public:
  explicit RnnDescs(const CudnnTable& t) : t_(t) {}
  ~RnnDescs() {
    for (cudnnRNNDataDescriptor_t d : datas_) t_.cudnnDestroyRNNDataDescriptor(d);
    for (cudnnRNNDescriptor_t d : rnns_) t_.cudnnDestroyRNNDescriptor(d);
    for (cudnnDropoutDescriptor_t d : dropouts_) t_.cudnnDestroyDropoutDescriptor(d);
  }
  RnnDescs(const RnnDescs&) = delete;
  RnnDescs& operator=(const RnnDescs&) = delete;

  bool available() const {
    return t_.cudnnCreateDropoutDescriptor && t_.cudnnDestroyDropoutDescriptor && t_.cudnnSetDropoutDescriptor &&
           t_.cudnnRestoreDropoutDescriptor && t_.cudnnCreateRNNDescriptor && t_.cudnnDestroyRNNDescriptor &&
           t_.cudnnSetRNNDescriptor_v8 && t_.cudnnCreateRNNDataDescriptor && t_.cudnnDestroyRNNDataDescriptor &&
           t_.cudnnSetRNNDataDescriptor;
  }

  // The dropout state's range has been checked by the caller.
  cudnnStatus_t rnn(cudnnHandle_t h, const cw::RnnDesc& d, cudnnRNNDescriptor_t* out) {
    cudnnDropoutDescriptor_t dd = nullptr;
    cudnnStatus_t s = t_.cudnnCreateDropoutDescriptor(&dd);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    dropouts_.push_back(dd);
    if (d.states != 0) {
      s = t_.cudnnRestoreDropoutDescriptor(dd, h, d.dropout, dev(d.states), d.states_bytes, 0);
    } else {
      s = t_.cudnnSetDropoutDescriptor(dd, h, 0.0f, nullptr, 0, 0);
    }
    if (s != CUDNN_STATUS_SUCCESS) return s;
    if ((s = t_.cudnnCreateRNNDescriptor(out)) != CUDNN_STATUS_SUCCESS) return s;
    rnns_.push_back(*out);
    return t_.cudnnSetRNNDescriptor_v8(
        *out, cudnnRNNAlgo_t(d.algo), cudnnRNNMode_t(d.cell), cudnnRNNBiasMode_t(d.bias), cudnnDirectionMode_t(d.dir),
        cudnnRNNInputMode_t(d.input_mode), cudnnDataType_t(d.dtype), cudnnDataType_t(d.math_prec),
        cudnnMathType_t(d.math_type), d.input, d.hidden, d.proj, d.layers, dd, d.aux);
  }

  cudnnStatus_t data(const cw::RnnData& d, cudnnRNNDataDescriptor_t* out) {
    cudnnStatus_t s = t_.cudnnCreateRNNDataDescriptor(out);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    datas_.push_back(*out);
    // The fill symbol in the data's type (float for float and the 16-bit
    // types' callers pass their own type; cuDNN reads dtype-sized bytes).
    float f = static_cast<float>(d.fill);
    double g = d.fill;
    uint16_t half_bits = 0;
    void* fill = nullptr;
    if (d.has_fill) {
      if (d.dtype == CUDNN_DATA_DOUBLE) {
        fill = &g;
      } else if (d.dtype == CUDNN_DATA_FLOAT) {
        fill = &f;
      } else if (f == 0.0f) {
        fill = &half_bits;  // +0 in half and bfloat16
      } else {
        return CUDNN_STATUS_NOT_SUPPORTED;
      }
    }
    return t_.cudnnSetRNNDataDescriptor(*out, cudnnDataType_t(d.dtype), cudnnRNNDataLayout_t(d.layout), d.max_seq,
                                        d.batch, d.vector, d.lens.data(), fill);
  }

 private:
  const CudnnTable& t_;
  std::vector<cudnnDropoutDescriptor_t> dropouts_;
  std::vector<cudnnRNNDescriptor_t> rnns_;
  std::vector<cudnnRNNDataDescriptor_t> datas_;
};

bool states_ok(const CallEnv& env, const cw::RnnDesc& d) {
  return d.states == 0 || env.device_range(d.states, d.states_bytes);
}

// A state tensor (hx, cx, ...) as the RNN reads it: {a, b, c}, fully
// packed, possibly padded with trailing dims of 1 (PyTorch describes states
// in 5-D).
bool state_shape(const cw::LegacyTensor& t, int32_t dtype, int32_t a, int32_t b, int32_t c) {
  if (t.nd < 3 || t.dtype != dtype || t.dims[0] != a || t.dims[1] != b || t.dims[2] != c) return false;
  if (t.strides[0] != b * c || t.strides[1] != c || t.strides[2] != 1) return false;
  for (int i = 3; i < t.nd; ++i) {
    if (t.dims[i] != 1) return false;
  }
  return true;
}

// What forward and both backward calls share: the RNN, the sequence
// operands' descriptors and the state descriptors, checked against each
// other so that the extents rgpud checks are the ones the library uses.
struct Shapes {
  cw::RnnDesc r;
  cw::RnnData x, y;
  cw::LegacyTensor h, c;
  bool has_c = false;
  const char* check() const {
    if (x.vector != r.input) return "x's vector size is not the input size";
    if (y.vector != r.proj * r.dirs()) return "y's vector size is not the output size";
    if (x.dtype != r.dtype || y.dtype != r.dtype) return "a data type differs from the rnn's";
    if (x.layout != y.layout || x.max_seq != y.max_seq || x.batch != y.batch || x.lens != y.lens) {
      return "x and y describe different batches";
    }
    const int32_t states = r.layers * r.dirs();
    // Below 2^31: layers * dirs <= 128, batch and sizes <= 2^20 -> check the product first.
    if (int64_t(states) * x.batch * r.hidden > (int64_t(1) << 31) - 1) return "states too large";
    if (!state_shape(h, r.dtype, states, x.batch, r.proj)) return "hDesc is not {layers*dirs, batch, proj}, packed";
    if (r.cell == CUDNN_LSTM) {
      if (!has_c || !state_shape(c, r.dtype, states, x.batch, r.hidden)) {
        return "cDesc is not {layers*dirs, batch, hidden}, packed";
      }
    }
    return nullptr;
  }
};

// The sizes the library asks for: weight space, workspace and reserve.
struct Needs {
  size_t weights = 0, work = 0, reserve = 0;
};

cudnnStatus_t needs(const CudnnTable& t, cudnnHandle_t h, cudnnRNNDescriptor_t rd, cudnnForwardMode_t mode,
                    cudnnRNNDataDescriptor_t xd, Needs* n) {
  if (!t.cudnnGetRNNWeightSpaceSize || !t.cudnnGetRNNTempSpaceSizes) return CUDNN_STATUS_NOT_SUPPORTED;
  cudnnStatus_t s = t.cudnnGetRNNWeightSpaceSize(h, rd, &n->weights);
  if (s == CUDNN_STATUS_SUCCESS) s = t.cudnnGetRNNTempSpaceSizes(h, rd, mode, xd, &n->work, &n->reserve);
  return s;
}

// A buffer the call names with its size: at least `need`, inside memory.
bool buffer_ok(const CallEnv& env, uint64_t ptr, uint64_t size, uint64_t need) {
  if (size < need) return false;
  if (size == 0) return true;
  return ptr != 0 && env.device_range(ptr, size);
}

// The library's descriptors of one forward or backward call (made through
// the table, destroyed with `descs` and `tensors`), and what it needs.
struct Built {
  cudnnRNNDescriptor_t rnn = nullptr;
  cudnnRNNDataDescriptor_t x = nullptr, y = nullptr;
  cudnnTensorDescriptor_t h = nullptr, c = nullptr;
  Needs n;
};

cudnnStatus_t build(const CudnnTable& t, cudnnHandle_t handle, RnnDescs& descs, LegacyDescs& tensors,
                    const Shapes& sh, bool with_c, cudnnForwardMode_t mode, Built* b) {
  cudnnStatus_t s = descs.rnn(handle, sh.r, &b->rnn);
  if (s == CUDNN_STATUS_SUCCESS) s = descs.data(sh.x, &b->x);
  if (s == CUDNN_STATUS_SUCCESS) s = descs.data(sh.y, &b->y);
  if (s == CUDNN_STATUS_SUCCESS) s = tensors.make(sh.h, &b->h);
  if (s == CUDNN_STATUS_SUCCESS && with_c && sh.has_c) s = tensors.make(sh.c, &b->c);
  if (s == CUDNN_STATUS_SUCCESS) s = needs(t, handle, b->rnn, mode, b->x, &b->n);
  return s;
}

// Why the weight, work or reserve space a call names cannot serve it, or null.
const char* spaces_short(CallEnv& env, const Needs& n, uint64_t w, uint64_t w_n, uint64_t ws, uint64_t ws_n,
                         uint64_t rs, uint64_t rs_n, bool reserve) {
  if (!buffer_ok(env, w, w_n, n.weights)) return "weight space smaller than the rnn's or outside memory";
  if (!buffer_ok(env, ws, ws_n, n.work)) return "workspace smaller than needed or outside memory";
  if (!buffer_ok(env, rs, rs_n, reserve ? n.reserve : 0)) return "reserve space smaller than needed or outside memory";
  return nullptr;
}

bool data_ok(const CallEnv& env, const cw::RnnData& d, uint64_t ptr) {
  const uint64_t bytes = cw::rnn_data_bytes(d);
  return ptr != 0 && bytes != kNoExtent && env.device_range(ptr, bytes);
}

bool seq_lengths_ok(const CallEnv& env, uint64_t ptr, int32_t batch) {
  return ptr == 0 || env.device_range(ptr, uint64_t(batch) * sizeof(int32_t));
}

// --- dropout -----------------------------------------------------------------

InvokeOutcome run_dropout_states_size(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cudnnDropoutGetStatesSize";
  ArgReader rd(args);
  uint64_t h = 0;
  rd.u64(&h);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  Start st = start(env, h, fn);
  if (!st.ok()) return st.refusal;
  if (!st.table->cudnnDropoutGetStatesSize) return unsupported(fn);
  size_t bytes = 0;
  const cudnnStatus_t s = st.table->cudnnDropoutGetStatesSize(st.handle, &bytes);
  InvokeOutcome out = library(s, fn, "the library refused");
  if (s != CUDNN_STATUS_SUCCESS) return out;
  ArgWriter w;
  w.u64(bytes);
  out.out = w.take();
  return out;
}

InvokeOutcome run_dropout_seed(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cudnnSetDropoutDescriptor";
  ArgReader rd(args);
  uint64_t h = 0, states = 0, bytes = 0, seed = 0;
  float p = 0;
  rd.u64(&h), rd.scalar(&p), rd.u64(&states), rd.u64(&bytes), rd.u64(&seed);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  if (!(p >= 0.0f && p < 1.0f)) return bad(fn, "dropout outside [0, 1)");
  if (states == 0 || bytes == 0 || bytes > cw::kMaxDropoutState || !env.device_range(states, bytes)) {
    return bad(fn, "states outside device memory");
  }
  Start st = start(env, h, fn);
  if (!st.ok()) return st.refusal;
  const CudnnTable& t = *st.table;
  if (!t.cudnnCreateDropoutDescriptor || !t.cudnnDestroyDropoutDescriptor || !t.cudnnSetDropoutDescriptor ||
      !t.cudnnDropoutGetStatesSize) {
    return unsupported(fn);
  }
  size_t need = 0;
  cudnnStatus_t s = t.cudnnDropoutGetStatesSize(st.handle, &need);
  if (s != CUDNN_STATUS_SUCCESS) return status(s, fn, "the library refused the state size");
  if (bytes < need) return bad(fn, "states smaller than the library's state");
  cudnnDropoutDescriptor_t d = nullptr;
  if ((s = t.cudnnCreateDropoutDescriptor(&d)) != CUDNN_STATUS_SUCCESS) return status(s, fn, "create");
  s = t.cudnnSetDropoutDescriptor(d, st.handle, p, dev(states), bytes, seed);
  t.cudnnDestroyDropoutDescriptor(d);
  return library(s, fn, "the library refused");
}

// --- sizes and the weight layout ---------------------------------------------

InvokeOutcome run_weight_space(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cudnnGetRNNWeightSpaceSize";
  ArgReader rd(args);
  uint64_t h = 0;
  cw::RnnDesc r;
  rd.u64(&h);
  cw::read_rnn(rd, &r);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  if (!states_ok(env, r)) return bad(fn, "dropout state outside device memory");
  Start st = start(env, h, fn);
  if (!st.ok()) return st.refusal;
  RnnDescs descs(*st.table);
  if (!descs.available() || !st.table->cudnnGetRNNWeightSpaceSize) return unsupported(fn);
  cudnnRNNDescriptor_t rdesc = nullptr;
  cudnnStatus_t s = descs.rnn(st.handle, r, &rdesc);
  size_t bytes = 0;
  if (s == CUDNN_STATUS_SUCCESS) s = st.table->cudnnGetRNNWeightSpaceSize(st.handle, rdesc, &bytes);
  InvokeOutcome out = library(s, fn, "the library refused");
  if (s != CUDNN_STATUS_SUCCESS) return out;
  ArgWriter w;
  w.u64(bytes);
  out.out = w.take();
  return out;
}

InvokeOutcome run_temp_sizes(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cudnnGetRNNTempSpaceSizes";
  ArgReader rd(args);
  uint64_t h = 0;
  uint32_t mode = 0;
  cw::RnnDesc r;
  cw::RnnData x;
  rd.u64(&h);
  cw::read_rnn(rd, &r);
  read_enum(rd, CUDNN_FWD_MODE_TRAINING, &mode);
  cw::read_rnn_data(rd, &x);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  if (!states_ok(env, r)) return bad(fn, "dropout state outside device memory");
  Start st = start(env, h, fn);
  if (!st.ok()) return st.refusal;
  RnnDescs descs(*st.table);
  if (!descs.available() || !st.table->cudnnGetRNNTempSpaceSizes) return unsupported(fn);
  cudnnRNNDescriptor_t rdesc = nullptr;
  cudnnRNNDataDescriptor_t xdesc = nullptr;
  cudnnStatus_t s = descs.rnn(st.handle, r, &rdesc);
  if (s == CUDNN_STATUS_SUCCESS) s = descs.data(x, &xdesc);
  size_t work = 0, reserve = 0;
  if (s == CUDNN_STATUS_SUCCESS) {
    s = st.table->cudnnGetRNNTempSpaceSizes(st.handle, rdesc, cudnnForwardMode_t(mode), xdesc, &work, &reserve);
  }
  InvokeOutcome out = library(s, fn, "the library refused");
  if (s != CUDNN_STATUS_SUCCESS) return out;
  ArgWriter w;
  w.u64(work);
  w.u64(reserve);
  out.out = w.take();
  return out;
}

// Every matrix and bias of one pseudo-layer, as offsets from the weight
// space's start: the library is asked with a stand-in base address (it
// computes addresses, it reads nothing).
InvokeOutcome run_weight_params(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cudnnGetRNNWeightParams";
  ArgReader rd(args);
  uint64_t h = 0;
  int32_t pseudo = 0;
  cw::RnnDesc r;
  rd.u64(&h);
  cw::read_rnn(rd, &r);
  rd.scalar(&pseudo);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  if (pseudo < 0 || pseudo >= r.layers * r.dirs()) return bad(fn, "pseudo-layer out of range");
  if (!states_ok(env, r)) return bad(fn, "dropout state outside device memory");
  Start st = start(env, h, fn);
  if (!st.ok()) return st.refusal;
  const CudnnTable& t = *st.table;
  RnnDescs descs(t);
  LegacyDescs tensors(t);
  if (!descs.available() || !t.cudnnGetRNNWeightParams || !t.cudnnGetRNNWeightSpaceSize ||
      !t.cudnnGetTensorNdDescriptor) {
    return unsupported(fn);
  }
  cudnnRNNDescriptor_t rdesc = nullptr;
  cudnnStatus_t s = descs.rnn(st.handle, r, &rdesc);
  size_t bytes = 0;
  if (s == CUDNN_STATUS_SUCCESS) s = t.cudnnGetRNNWeightSpaceSize(st.handle, rdesc, &bytes);
  if (s != CUDNN_STATUS_SUCCESS) return library(s, fn, "the library refused");
  cw::LegacyTensor probe;
  probe.dtype = r.dtype, probe.nd = 3;
  probe.dims[0] = probe.dims[1] = probe.dims[2] = 1;
  probe.strides[0] = probe.strides[1] = probe.strides[2] = 1;
  cudnnTensorDescriptor_t md = nullptr, bd = nullptr;
  if ((s = tensors.make(probe, &md)) != CUDNN_STATUS_SUCCESS) return status(s, fn, "tensor descriptors");
  if ((s = tensors.make(probe, &bd)) != CUDNN_STATUS_SUCCESS) return status(s, fn, "tensor descriptors");
  auto read_back = [&](cudnnTensorDescriptor_t d, cw::LegacyTensor* out) {
    cudnnDataType_t dt;
    int nd = 0;
    const cudnnStatus_t rs = t.cudnnGetTensorNdDescriptor(d, 8, &dt, &nd, out->dims, out->strides);
    out->dtype = dt;
    out->nd = nd;
    return rs == CUDNN_STATUS_SUCCESS && nd >= 1 && nd <= 8;
  };
  constexpr uintptr_t kBase = uintptr_t(1) << 40;  // aligned for any element type; never dereferenced
  std::vector<cw::WeightParam> params;
  const int32_t ids = 2 * r.gates();
  for (int32_t lin = 0; lin < ids + 1; ++lin) {
    const int32_t id = lin < ids ? lin : 8;  // the projection's id
    if (lin == ids && (r.cell != CUDNN_LSTM || r.proj == r.hidden)) break;
    void *ma = nullptr, *ba = nullptr;
    s = t.cudnnGetRNNWeightParams(st.handle, rdesc, pseudo, bytes, reinterpret_cast<void*>(kBase), id, md, &ma, bd,
                                  &ba);
    if (s != CUDNN_STATUS_SUCCESS) return library(s, fn, "the library refused");
    cw::WeightParam e;
    e.lin = id;
    const auto offset_of = [&](void* a, uint64_t* off) {
      const uintptr_t v = reinterpret_cast<uintptr_t>(a);
      if (v < kBase || v - kBase >= bytes) return false;
      *off = v - kBase;
      return true;
    };
    if (ma) {
      if (!offset_of(ma, &e.matrix_offset) || !read_back(md, &e.matrix)) {
        return status(CUDNN_STATUS_INTERNAL_ERROR, fn, "a matrix outside the weight space");
      }
      e.has_matrix = true;
    }
    if (ba) {
      if (!offset_of(ba, &e.bias_offset) || !read_back(bd, &e.bias)) {
        return status(CUDNN_STATUS_INTERNAL_ERROR, fn, "a bias outside the weight space");
      }
      e.has_bias = true;
    }
    params.push_back(e);
  }
  InvokeOutcome out = status(0, fn, "");
  ArgWriter w;
  cw::write_weight_params(w, params);
  out.out = w.take();
  return out;
}

// --- forward and backward ------------------------------------------------------

bool read_states(ArgReader& rd, Shapes* sh) {
  uint32_t has_c = 0;
  if (!cw::read_tensor(rd, &sh->h) || !rd.scalar(&has_c) || has_c > 1) return rd.reject();
  sh->has_c = has_c != 0;
  return !sh->has_c || cw::read_tensor(rd, &sh->c);
}

InvokeOutcome run_forward(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cudnnRNNForward";
  ArgReader rd(args);
  uint64_t h = 0, seq = 0, x = 0, y = 0, hx = 0, hy = 0, cx = 0, cy = 0, w_n = 0, w = 0, ws_n = 0, ws = 0, rs_n = 0,
           rs = 0;
  uint32_t mode = 0;
  Shapes sh;
  rd.u64(&h);
  cw::read_rnn(rd, &sh.r);
  read_enum(rd, CUDNN_FWD_MODE_TRAINING, &mode);
  rd.u64(&seq);
  cw::read_rnn_data(rd, &sh.x), rd.u64(&x);
  cw::read_rnn_data(rd, &sh.y), rd.u64(&y);
  read_states(rd, &sh);
  rd.u64(&hx), rd.u64(&hy), rd.u64(&cx), rd.u64(&cy);
  rd.u64(&w_n), rd.u64(&w), rd.u64(&ws_n), rd.u64(&ws), rd.u64(&rs_n), rd.u64(&rs);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  if (const char* why = sh.check()) return bad(fn, why);
  const bool lstm = sh.r.cell == CUDNN_LSTM;
  if (!data_ok(env, sh.x, x) || !data_ok(env, sh.y, y) || !in_memory(env, sh.h, hx, true) ||
      !in_memory(env, sh.h, hy, true) ||
      (lstm && (!in_memory(env, sh.c, cx, true) || !in_memory(env, sh.c, cy, true))) ||
      !seq_lengths_ok(env, seq, sh.x.batch) || !states_ok(env, sh.r)) {
    return bad(fn, "an operand outside device memory");
  }
  Start st = start(env, h, fn);
  if (!st.ok()) return st.refusal;
  const CudnnTable& t = *st.table;
  RnnDescs descs(t);
  LegacyDescs tensors(t);
  if (!descs.available() || !t.cudnnRNNForward) return unsupported(fn);
  Built b;
  cudnnStatus_t s = build(t, st.handle, descs, tensors, sh, true, cudnnForwardMode_t(mode), &b);
  if (s != CUDNN_STATUS_SUCCESS) return library(s, fn, "the library refused the descriptors");
  if (const char* why = spaces_short(env, b.n, w, w_n, ws, ws_n, rs, rs_n, mode == CUDNN_FWD_MODE_TRAINING)) {
    return bad(fn, why);
  }
  s = t.cudnnRNNForward(st.handle, b.rnn, cudnnForwardMode_t(mode), static_cast<const int32_t*>(dev(seq)), b.x,
                        dev(x), b.y, dev(y), b.h, dev(hx), dev(hy), b.c, lstm ? dev(cx) : nullptr,
                        lstm ? dev(cy) : nullptr, w_n, dev(w), ws_n, dev(ws), rs_n, dev(rs));
  return library(s, fn, "the library refused");
}

InvokeOutcome run_backward_data(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cudnnRNNBackwardData_v8";
  ArgReader rd(args);
  uint64_t h = 0, seq = 0, y = 0, dy = 0, dx = 0, hx = 0, dhy = 0, dhx = 0, cx = 0, dcy = 0, dcx = 0, w_n = 0, w = 0,
           ws_n = 0, ws = 0, rs_n = 0, rs = 0;
  Shapes sh;
  rd.u64(&h);
  cw::read_rnn(rd, &sh.r);
  rd.u64(&seq);
  cw::read_rnn_data(rd, &sh.y), rd.u64(&y), rd.u64(&dy);
  cw::read_rnn_data(rd, &sh.x), rd.u64(&dx);
  read_states(rd, &sh);
  rd.u64(&hx), rd.u64(&dhy), rd.u64(&dhx), rd.u64(&cx), rd.u64(&dcy), rd.u64(&dcx);
  rd.u64(&w_n), rd.u64(&w), rd.u64(&ws_n), rd.u64(&ws), rd.u64(&rs_n), rd.u64(&rs);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  if (const char* why = sh.check()) return bad(fn, why);
  const bool lstm = sh.r.cell == CUDNN_LSTM;
  if (!data_ok(env, sh.y, y) || !data_ok(env, sh.y, dy) || !data_ok(env, sh.x, dx) ||
      !in_memory(env, sh.h, hx, true) || !in_memory(env, sh.h, dhy, true) || !in_memory(env, sh.h, dhx, true) ||
      (lstm && (!in_memory(env, sh.c, cx, true) || !in_memory(env, sh.c, dcy, true) ||
                !in_memory(env, sh.c, dcx, true))) ||
      !seq_lengths_ok(env, seq, sh.x.batch) || !states_ok(env, sh.r)) {
    return bad(fn, "an operand outside device memory");
  }
  Start st = start(env, h, fn);
  if (!st.ok()) return st.refusal;
  const CudnnTable& t = *st.table;
  RnnDescs descs(t);
  LegacyDescs tensors(t);
  if (!descs.available() || !t.cudnnRNNBackwardData_v8) return unsupported(fn);
  Built b;
  cudnnStatus_t s = build(t, st.handle, descs, tensors, sh, true, CUDNN_FWD_MODE_TRAINING, &b);
  if (s != CUDNN_STATUS_SUCCESS) return library(s, fn, "the library refused the descriptors");
  if (const char* why = spaces_short(env, b.n, w, w_n, ws, ws_n, rs, rs_n, true)) return bad(fn, why);
  s = t.cudnnRNNBackwardData_v8(st.handle, b.rnn, static_cast<const int32_t*>(dev(seq)), b.y, dev(y), dev(dy), b.x,
                                dev(dx), b.h, dev(hx), dev(dhy), dev(dhx), b.c, lstm ? dev(cx) : nullptr,
                                lstm ? dev(dcy) : nullptr, lstm ? dev(dcx) : nullptr, w_n, dev(w), ws_n, dev(ws), rs_n,
                                dev(rs));
  return library(s, fn, "the library refused");
}

InvokeOutcome run_backward_weights(CallEnv& env, std::span<const std::byte> args) {
  const char* fn = "cudnnRNNBackwardWeights_v8";
  ArgReader rd(args);
  uint64_t h = 0, seq = 0, x = 0, hx = 0, y = 0, w_n = 0, dw = 0, ws_n = 0, ws = 0, rs_n = 0, rs = 0;
  uint32_t add = 0;
  Shapes sh;
  rd.u64(&h);
  cw::read_rnn(rd, &sh.r);
  read_enum(rd, CUDNN_WGRAD_MODE_SET, &add);
  rd.u64(&seq);
  cw::read_rnn_data(rd, &sh.x), rd.u64(&x);
  cw::read_tensor(rd, &sh.h), rd.u64(&hx);
  cw::read_rnn_data(rd, &sh.y), rd.u64(&y);
  rd.u64(&w_n), rd.u64(&dw), rd.u64(&ws_n), rd.u64(&ws), rd.u64(&rs_n), rd.u64(&rs);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  // No cDesc in this call: the cell state's shape is the RNN's own.
  sh.has_c = true;
  sh.c = sh.h;
  sh.c.dims[2] = sh.r.hidden;
  sh.c.strides[1] = sh.r.hidden;
  sh.c.strides[0] = sh.h.dims[1] * sh.r.hidden;
  if (const char* why = sh.check()) return bad(fn, why);
  if (!data_ok(env, sh.x, x) || !data_ok(env, sh.y, y) || !in_memory(env, sh.h, hx, true) ||
      !seq_lengths_ok(env, seq, sh.x.batch) || !states_ok(env, sh.r)) {
    return bad(fn, "an operand outside device memory");
  }
  Start st = start(env, h, fn);
  if (!st.ok()) return st.refusal;
  const CudnnTable& t = *st.table;
  RnnDescs descs(t);
  LegacyDescs tensors(t);
  if (!descs.available() || !t.cudnnRNNBackwardWeights_v8) return unsupported(fn);
  Built b;
  cudnnStatus_t s = build(t, st.handle, descs, tensors, sh, false, CUDNN_FWD_MODE_TRAINING, &b);
  if (s != CUDNN_STATUS_SUCCESS) return library(s, fn, "the library refused the descriptors");
  if (const char* why = spaces_short(env, b.n, dw, w_n, ws, ws_n, rs, rs_n, true)) return bad(fn, why);
  s = t.cudnnRNNBackwardWeights_v8(st.handle, b.rnn, cudnnWgradMode_t(add), static_cast<const int32_t*>(dev(seq)),
                                   b.x, dev(x), b.h, dev(hx), b.y, dev(y), w_n, dev(dw), ws_n, dev(ws), rs_n, dev(rs));
  return library(s, fn, "the library refused");
}

const DispatchRow kRows[] = {
    {"cudnnDropoutGetStatesSize", kApi, cw::kDropoutStatesSize, true, false, &run_dropout_states_size},
    {"cudnnSetDropoutDescriptor", kApi, cw::kDropoutSeed, false, false, &run_dropout_seed},
    {"cudnnGetRNNWeightSpaceSize", kApi, cw::kRnnWeightSpace, true, false, &run_weight_space},
    {"cudnnGetRNNTempSpaceSizes", kApi, cw::kRnnTempSizes, true, false, &run_temp_sizes},
    {"cudnnGetRNNWeightParams", kApi, cw::kRnnWeightParams, true, false, &run_weight_params},
    {"cudnnRNNForward", kApi, cw::kRnnForward, false, false, &run_forward},
    {"cudnnRNNBackwardData_v8", kApi, cw::kRnnBackwardData, false, false, &run_backward_data},
    {"cudnnRNNBackwardWeights_v8", kApi, cw::kRnnBackwardWeights, false, false, &run_backward_weights},
};

}  // namespace

const DispatchRow* find_cudnn_rnn_row(uint32_t function) {
  for (const DispatchRow& r : kRows) {
    if (r.function == function) return &r;
  }
  return nullptr;
}

}  // namespace rgpu::server
