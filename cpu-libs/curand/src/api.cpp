// cuRAND's host API on the CPU device: generators, their settings, and the
// Generate calls, which write their output in the generator's stream order
// (the numbers are drawn on a host function of the stream, then copied into
// device memory by the CPU device's own asynchronous copy, so the copy is
// range-checked when it happens).
#include <cuda.h>
#include <curand.h>

#include <exception>
#include <memory>
#include <new>
#include <vector>

#include "generator.h"
#include "rgpu/common/log.h"
#include "rgpu/cpu_libs/job.h"

#define RGPU_EXPORT extern "C" __attribute__((visibility("default")))

using rgpu::cpurand::Dist;
using rgpu::cpurand::Engine;
using rgpu::cpurand::Request;

namespace {

// The stand-in reports the version of the headers it was built with.
constexpr int kVersion = CURAND_VERSION;

// One Generate call in flight: what to draw and from where, into the host
// buffer of its one written region.
struct Work : rgpu::cpu_libs::Job {
  Work(const Request& r, const Engine& e) : Job("curand"), request(r), engine(e) {}
  Request request;
  Engine engine;
  void run() override { rgpu::cpurand::fill(engine, request, host(0)); }
};

curandStatus_t generate(curandGenerator_t g, void* out, const Request& r) {
  if (!g) return CURAND_STATUS_NOT_INITIALIZED;
  if (r.n == 0) return CURAND_STATUS_SUCCESS;
  if (!out) return CURAND_STATUS_OUT_OF_RANGE;
  const bool pairs = r.dist == Dist::kNormal || r.dist == Dist::kNormalDouble || r.dist == Dist::kLogNormal ||
                     r.dist == Dist::kLogNormalDouble;
  if (pairs && r.n % 2 != 0) return CURAND_STATUS_LENGTH_NOT_MULTIPLE;
  if (r.dist == Dist::kPoisson && !(r.lambda > 0)) return CURAND_STATUS_OUT_OF_RANGE;
  const size_t elem = rgpu::cpurand::element_bytes(r.dist);
  if (r.n > (uint64_t(1) << 40) / elem) return CURAND_STATUS_ALLOCATION_FAILED;
  const uint64_t bytes = uint64_t(r.n) * elem;
  try {
    rgpu::cpu_libs::ContextGuard guard(g->ctx);
    if (!guard.ok()) return CURAND_STATUS_NOT_INITIALIZED;
    if (!g->engine) g->engine.emplace(g->kind, g->seed, g->position);
    auto work = std::make_unique<Work>(r, *g->engine);
    work->add(rgpu::cpu_libs::Region::span(reinterpret_cast<CUdeviceptr>(out), bytes, false, true));
    if (rgpu::cpu_libs::submit(std::move(work), g->stream) != rgpu::cpu_libs::Queued::kYes) {
      return CURAND_STATUS_LAUNCH_FAILURE;
    }
    g->position += rgpu::cpurand::words(r);
    g->engine->skip(rgpu::cpurand::words(r));
    return CURAND_STATUS_SUCCESS;
  } catch (const std::bad_alloc&) {
    return CURAND_STATUS_ALLOCATION_FAILED;
  } catch (const std::exception& e) {
    RGPU_ERROR("cpu curand: internal error error=%s", e.what());
    return CURAND_STATUS_INTERNAL_ERROR;
  }
}

}  // namespace

RGPU_EXPORT curandStatus_t curandCreateGenerator(curandGenerator_t* generator, curandRngType_t type) {
  if (!generator) return CURAND_STATUS_OUT_OF_RANGE;
  Engine::Kind kind;
  switch (type) {
    case CURAND_RNG_PSEUDO_DEFAULT:
    case CURAND_RNG_PSEUDO_XORWOW:
      kind = Engine::Kind::kXorwow;
      break;
    case CURAND_RNG_PSEUDO_MRG32K3A:
      kind = Engine::Kind::kMrg32k3a;
      break;
    case CURAND_RNG_PSEUDO_PHILOX4_32_10:
      kind = Engine::Kind::kPhilox;
      break;
    default:
      RGPU_WARN("cpu curand: generator type not supported type=%d", static_cast<int>(type));
      return CURAND_STATUS_TYPE_ERROR;
  }
  CUcontext ctx = nullptr;
  if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) return CURAND_STATUS_INITIALIZATION_FAILED;
  auto* g = new (std::nothrow) curandGenerator_st();
  if (!g) return CURAND_STATUS_ALLOCATION_FAILED;
  g->type = type;
  g->kind = kind;
  g->ctx = ctx;
  *generator = g;
  return CURAND_STATUS_SUCCESS;
}

// Queued work holds its own copy of the engine, so a generator may be
// destroyed while its output is still being written.
RGPU_EXPORT curandStatus_t curandDestroyGenerator(curandGenerator_t generator) {
  if (!generator) return CURAND_STATUS_NOT_INITIALIZED;
  delete generator;
  return CURAND_STATUS_SUCCESS;
}

RGPU_EXPORT curandStatus_t curandSetStream(curandGenerator_t generator, cudaStream_t stream) {
  if (!generator) return CURAND_STATUS_NOT_INITIALIZED;
  generator->stream = reinterpret_cast<CUstream>(stream);
  return CURAND_STATUS_SUCCESS;
}

// As cuRAND: a new seed restarts the sequence at offset 0.
RGPU_EXPORT curandStatus_t curandSetPseudoRandomGeneratorSeed(curandGenerator_t generator, unsigned long long seed) {
  if (!generator) return CURAND_STATUS_NOT_INITIALIZED;
  generator->seed = seed;
  generator->position = 0;
  generator->engine.reset();
  return CURAND_STATUS_SUCCESS;
}

RGPU_EXPORT curandStatus_t curandSetGeneratorOffset(curandGenerator_t generator, unsigned long long offset) {
  if (!generator) return CURAND_STATUS_NOT_INITIALIZED;
  generator->position = offset;
  generator->engine.reset();
  return CURAND_STATUS_SUCCESS;
}

// Every pseudo-random ordering gives the one sequence of the seed here.
RGPU_EXPORT curandStatus_t curandSetGeneratorOrdering(curandGenerator_t generator, curandOrdering_t order) {
  if (!generator) return CURAND_STATUS_NOT_INITIALIZED;
  switch (order) {
    case CURAND_ORDERING_PSEUDO_BEST:
    case CURAND_ORDERING_PSEUDO_DEFAULT:
    case CURAND_ORDERING_PSEUDO_SEEDED:
    case CURAND_ORDERING_PSEUDO_LEGACY:
    case CURAND_ORDERING_PSEUDO_DYNAMIC:
      return CURAND_STATUS_SUCCESS;
    default:
      return CURAND_STATUS_OUT_OF_RANGE;
  }
}

RGPU_EXPORT curandStatus_t curandGetVersion(int* version) {
  if (!version) return CURAND_STATUS_OUT_OF_RANGE;
  *version = kVersion;
  return CURAND_STATUS_SUCCESS;
}

RGPU_EXPORT curandStatus_t curandGetProperty(libraryPropertyType type, int* value) {
  if (!value) return CURAND_STATUS_OUT_OF_RANGE;
  switch (type) {
    case MAJOR_VERSION: *value = CURAND_VER_MAJOR; return CURAND_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CURAND_VER_MINOR; return CURAND_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CURAND_VER_PATCH; return CURAND_STATUS_SUCCESS;
  }
  return CURAND_STATUS_OUT_OF_RANGE;
}

RGPU_EXPORT curandStatus_t curandGenerate(curandGenerator_t g, unsigned int* out, size_t num) {
  return generate(g, out, Request{Dist::kBits32, num});
}
RGPU_EXPORT curandStatus_t curandGenerateLongLong(curandGenerator_t g, unsigned long long* out, size_t num) {
  return generate(g, out, Request{Dist::kBits64, num});
}
RGPU_EXPORT curandStatus_t curandGenerateUniform(curandGenerator_t g, float* out, size_t num) {
  return generate(g, out, Request{Dist::kUniform, num});
}
RGPU_EXPORT curandStatus_t curandGenerateUniformDouble(curandGenerator_t g, double* out, size_t num) {
  return generate(g, out, Request{Dist::kUniformDouble, num});
}
RGPU_EXPORT curandStatus_t curandGenerateNormal(curandGenerator_t g, float* out, size_t n, float mean, float sd) {
  return generate(g, out, Request{Dist::kNormal, n, mean, sd});
}
RGPU_EXPORT curandStatus_t curandGenerateNormalDouble(curandGenerator_t g, double* out, size_t n, double mean,
                                                      double sd) {
  return generate(g, out, Request{Dist::kNormalDouble, n, mean, sd});
}
RGPU_EXPORT curandStatus_t curandGenerateLogNormal(curandGenerator_t g, float* out, size_t n, float mean, float sd) {
  return generate(g, out, Request{Dist::kLogNormal, n, mean, sd});
}
RGPU_EXPORT curandStatus_t curandGenerateLogNormalDouble(curandGenerator_t g, double* out, size_t n, double mean,
                                                         double sd) {
  return generate(g, out, Request{Dist::kLogNormalDouble, n, mean, sd});
}
RGPU_EXPORT curandStatus_t curandGeneratePoisson(curandGenerator_t g, unsigned int* out, size_t n, double lambda) {
  return generate(g, out, Request{Dist::kPoisson, n, 0, 1, lambda});
}
