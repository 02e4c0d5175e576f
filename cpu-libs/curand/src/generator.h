// The stand-in's generator object (curandGenerator_st, opaque in NVIDIA's
// curand.h) and the distributions it draws from its engine's words.
#pragma once

#include <cuda.h>
#include <curand.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "engines.h"

// One generator: its engine, seed and position (in the engine's 32-bit
// words), the context it was created in and the stream its output is
// written in. Thread safety: as cuRAND, a generator is used by one thread at
// a time.
struct curandGenerator_st {
  curandRngType_t type = CURAND_RNG_PSEUDO_DEFAULT;
  rgpu::cpurand::Engine::Kind kind = rgpu::cpurand::Engine::Kind::kXorwow;
  uint64_t seed = 0;
  uint64_t position = 0;  // words consumed since the offset was last set
  // The engine at `position`, kept so that consecutive calls continue it
  // instead of jumping from the seed; reset by a new seed or offset.
  std::optional<rgpu::cpurand::Engine> engine;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;  // NULL: the context's legacy default stream
};

namespace rgpu::cpurand {

// What one Generate call asks for. Each fills `out` (n elements of the
// element type) from `engine` and says how many words it consumed.
enum class Dist { kBits32, kBits64, kUniform, kUniformDouble, kNormal, kNormalDouble, kLogNormal,
                  kLogNormalDouble, kPoisson };

struct Request {
  Dist dist = Dist::kBits32;
  size_t n = 0;
  double mean = 0;    // normal and log-normal
  double stddev = 1;
  double lambda = 0;  // Poisson
};

// Bytes of one output element of `d`.
size_t element_bytes(Dist d);

// Fills `out` (element_bytes(r.dist) * r.n bytes) from `engine`.
void fill(Engine& engine, const Request& r, void* out);

// Words `r` consumes: the generator's position advances by this many.
uint64_t words(const Request& r);

}  // namespace rgpu::cpurand
