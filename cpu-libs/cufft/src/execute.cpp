// One execution of a plan (plan.h): the spans the plan reads and writes are
// copied into host buffers by the CPU device's asynchronous copies, FFTW
// transforms them in a host function of the plan's stream, and the output
// span is copied back, so the work runs in stream order and every device
// access is checked by the CPU device when it happens. The host buffers
// mirror the device layout byte for byte (embeds, strides, distances and
// the gaps between them, which are read first so that writing the span back
// leaves them as they were). Half and bfloat16 data are transformed in
// single precision: converted element by element into a float mirror and
// back. As cuFFT: unnormalised in both directions.
#include <fftw3.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "plan.h"
#include "rgpu/common/log.h"
#include "rgpu/cpu_libs/job.h"

namespace rgpu::cpufft {
namespace {

namespace fw = ::rgpu::protocol::cufft;

// FFTW's planner is process-wide and not thread-safe (executing a plan is):
// every plan is made and destroyed under this lock.
std::mutex& planner_lock() {
  static std::mutex mu;
  return mu;
}

// One execution: region 0 mirrors the input span (in place, the longer of
// the two spans), region 1 the output span when it is another.
struct Work : cpu_libs::Job {
  Work() : Job("cufft") {}
  fw::Geometry g;
  fw::Kind kind = fw::Kind::kNone;
  int direction = 0;
  bool in_place = false;
  fw::Layout in, out;
  uint64_t in_bytes = 0, out_bytes = 0;
  void* out_host() { return host(in_place ? 0 : 1); }
  void run() override;
};

// The arguments FFTW's advanced interface takes for one side.
struct Side {
  int embed[fw::kMaxRank] = {};
  int stride = 1, dist = 0;
  explicit Side(const fw::Layout& l, int rank) {
    for (int i = 0; i < rank; ++i) embed[i] = int(l.embed[i]);
    stride = int(l.stride);
    dist = int(l.dist);
  }
};

bool is_half(int32_t t) { return t == fw::kR16F || t == fw::kC16F; }
bool is_bf16(int32_t t) { return t == fw::kR16BF || t == fw::kC16BF; }

float half_to_float(uint16_t h) {
  _Float16 v;
  std::memcpy(&v, &h, 2);
  return float(v);
}
uint16_t float_to_half(float f) {
  const _Float16 v = static_cast<_Float16>(f);
  uint16_t h;
  std::memcpy(&h, &v, 2);
  return h;
}
float bf16_to_float(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffffu)) return uint16_t((bits >> 16) | 0x40);  // NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even
  return uint16_t(bits >> 16);
}

// Float mirror of a 16-bit span, and back.
std::vector<float> widen(const void* src, uint64_t bytes, bool bf16) {
  std::vector<float> out(bytes / 2);
  const auto* s = static_cast<const uint16_t*>(src);
  for (size_t i = 0; i < out.size(); ++i) out[i] = bf16 ? bf16_to_float(s[i]) : half_to_float(s[i]);
  return out;
}
void narrow(const std::vector<float>& src, void* dst, uint64_t bytes, bool bf16) {
  auto* d = static_cast<uint16_t*>(dst);
  for (size_t i = 0; i < bytes / 2; ++i) d[i] = bf16 ? float_to_bf16(src[i]) : float_to_half(src[i]);
}

// Runs the transform on host memory: `in` and `out` mirror the spans (the
// same pointer when in place).
void transform_float(Work& w, float* in, float* out) {
  const int rank = w.g.rank;
  int n[fw::kMaxRank];
  for (int i = 0; i < rank; ++i) n[i] = int(w.g.n[i]);
  Side si(w.in, rank), so(w.out, rank);
  const int batch = int(w.g.batch);
  fftwf_plan p = nullptr;
  {
    std::lock_guard<std::mutex> lock(planner_lock());
    switch (w.kind) {
      case fw::Kind::kC2C:
        p = fftwf_plan_many_dft(rank, n, batch, reinterpret_cast<fftwf_complex*>(in), si.embed, si.stride, si.dist,
                                reinterpret_cast<fftwf_complex*>(out), so.embed, so.stride, so.dist,
                                w.direction < 0 ? FFTW_FORWARD : FFTW_BACKWARD, FFTW_ESTIMATE);
        break;
      case fw::Kind::kR2C:
        p = fftwf_plan_many_dft_r2c(rank, n, batch, in, si.embed, si.stride, si.dist,
                                    reinterpret_cast<fftwf_complex*>(out), so.embed, so.stride, so.dist, FFTW_ESTIMATE);
        break;
      case fw::Kind::kC2R:
        p = fftwf_plan_many_dft_c2r(rank, n, batch, reinterpret_cast<fftwf_complex*>(in), si.embed, si.stride,
                                    si.dist, out, so.embed, so.stride, so.dist, FFTW_ESTIMATE);
        break;
      case fw::Kind::kNone:
        break;
    }
  }
  if (!p) {
    RGPU_ERROR("cpu cufft: fftw made no plan rank=%d n0=%d batch=%d", rank, n[0], batch);
    return;
  }
  fftwf_execute(p);
  std::lock_guard<std::mutex> lock(planner_lock());
  fftwf_destroy_plan(p);
}

void transform_double(Work& w, double* in, double* out) {
  const int rank = w.g.rank;
  int n[fw::kMaxRank];
  for (int i = 0; i < rank; ++i) n[i] = int(w.g.n[i]);
  Side si(w.in, rank), so(w.out, rank);
  const int batch = int(w.g.batch);
  fftw_plan p = nullptr;
  {
    std::lock_guard<std::mutex> lock(planner_lock());
    switch (w.kind) {
      case fw::Kind::kC2C:
        p = fftw_plan_many_dft(rank, n, batch, reinterpret_cast<fftw_complex*>(in), si.embed, si.stride, si.dist,
                               reinterpret_cast<fftw_complex*>(out), so.embed, so.stride, so.dist,
                               w.direction < 0 ? FFTW_FORWARD : FFTW_BACKWARD, FFTW_ESTIMATE);
        break;
      case fw::Kind::kR2C:
        p = fftw_plan_many_dft_r2c(rank, n, batch, in, si.embed, si.stride, si.dist,
                                   reinterpret_cast<fftw_complex*>(out), so.embed, so.stride, so.dist, FFTW_ESTIMATE);
        break;
      case fw::Kind::kC2R:
        p = fftw_plan_many_dft_c2r(rank, n, batch, reinterpret_cast<fftw_complex*>(in), si.embed, si.stride, si.dist,
                                   out, so.embed, so.stride, so.dist, FFTW_ESTIMATE);
        break;
      case fw::Kind::kNone:
        break;
    }
  }
  if (!p) {
    RGPU_ERROR("cpu cufft: fftw made no plan rank=%d n0=%d batch=%d", rank, n[0], batch);
    return;
  }
  fftw_execute(p);
  std::lock_guard<std::mutex> lock(planner_lock());
  fftw_destroy_plan(p);
}

void transform(Work& w) {
  void* in = w.host(0);
  void* out = w.out_host();
  const int32_t et = w.g.etype;
  if (et == fw::kC64F) return transform_double(w, static_cast<double*>(in), static_cast<double*>(out));
  if (et == fw::kC32F) return transform_float(w, static_cast<float*>(in), static_cast<float*>(out));
  // 16-bit data: both sides have 16-bit elements; widen, transform, narrow.
  const bool bf16 = is_bf16(et);
  if (w.in_place) {
    const uint64_t bytes = std::max(w.in_bytes, w.out_bytes);
    std::vector<float> f = widen(in, bytes, bf16);
    transform_float(w, f.data(), f.data());
    narrow(f, in, bytes, bf16);
    return;
  }
  std::vector<float> fi = widen(in, w.in_bytes, bf16);
  std::vector<float> fo = widen(out, w.out_bytes, bf16);
  transform_float(w, fi.data(), fo.data());
  narrow(fo, out, w.out_bytes, bf16);
}

void Work::run() { transform(*this); }

}  // namespace

cufftResult execute(const Plan& plan, CUdeviceptr in, CUdeviceptr out, int direction) {
  auto w = std::make_unique<Work>();
  w->g = plan.geometry;
  w->kind = fw::kind_of(w->g);
  w->in_place = in == out;
  if (w->kind == fw::Kind::kC2C && direction != CUFFT_FORWARD && direction != CUFFT_INVERSE) return CUFFT_INVALID_VALUE;
  w->direction = direction;
  if (!fw::layout(w->g, true, w->in_place, &w->in) || !fw::layout(w->g, false, w->in_place, &w->out)) {
    return CUFFT_INVALID_SIZE;
  }
  w->in_bytes = fw::extent_bytes(w->g, true, w->in_place);
  w->out_bytes = fw::extent_bytes(w->g, false, w->in_place);
  cpu_libs::ContextGuard guard(plan.ctx);
  if (!guard.ok()) return CUFFT_EXEC_FAILED;
  // submit() refuses a span outside device memory (an extent of kNoExtent
  // included). The output span is read first too: written back whole, it
  // leaves the gaps between its elements as they were. In place, one buffer
  // mirrors the longer of the two spans.
  if (w->in_place) {
    w->add(cpu_libs::Region::span(in, std::max(w->in_bytes, w->out_bytes), true, true));
  } else {
    w->add(cpu_libs::Region::span(in, w->in_bytes, true, false));
    w->add(cpu_libs::Region::span(out, w->out_bytes, true, true));
  }
  return cpu_libs::submit(std::move(w), plan.stream) == cpu_libs::Queued::kYes ? CUFFT_SUCCESS : CUFFT_EXEC_FAILED;
}

}  // namespace rgpu::cpufft
