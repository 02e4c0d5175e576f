// The distributions (generator.h). Every element consumes a fixed number of
// words, so where a call starts in the sequence depends only on the counts
// asked before it, never on the values drawn.
//
// - uniform float: one word w, w * 2^-32 + 2^-33: in (0, 1], as cuRAND's;
// - uniform double: two words, their 64 bits' top 53 * 2^-53 + 2^-54;
// - normal: Box-Muller on consecutive pairs of uniforms (n is even);
// - log-normal: exp of the normal;
// - Poisson: one uniform inverted through the distribution function when
//   lambda < 64; above, two words through Box-Muller, the normal
//   approximation rounded to the nearest non-negative integer.
#include <cmath>
#include <cstring>

#include "generator.h"

namespace rgpu::cpurand {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;
constexpr double kPoissonInversionLimit = 64.0;

double uniform_from(uint32_t w) { return double(w) * 0x1p-32 + 0x1p-33; }
double uniform_double_from(uint32_t hi, uint32_t lo) {
  return double(((uint64_t(hi) << 32) | lo) >> 11) * 0x1p-53 + 0x1p-54;
}

// Two standard normals from two uniforms in (0, 1].
void box_muller(double u1, double u2, double* z0, double* z1) {
  const double r = std::sqrt(-2.0 * std::log(u1));
  *z0 = r * std::cos(kTwoPi * u2);
  *z1 = r * std::sin(kTwoPi * u2);
}

template <class T>
void normals(Engine& e, size_t n, bool doubles, double mean, double stddev, bool log_normal, T* out) {
  for (size_t i = 0; i < n; i += 2) {
    double u1, u2;
    if (doubles) {
      const uint32_t a = e.next(), b = e.next(), c = e.next(), d = e.next();
      u1 = uniform_double_from(a, b);
      u2 = uniform_double_from(c, d);
    } else {
      u1 = uniform_from(e.next());
      u2 = uniform_from(e.next());
    }
    double z0, z1;
    box_muller(u1, u2, &z0, &z1);
    z0 = mean + stddev * z0;
    z1 = mean + stddev * z1;
    if (log_normal) {
      z0 = std::exp(z0);
      z1 = std::exp(z1);
    }
    out[i] = T(z0);
    if (i + 1 < n) out[i + 1] = T(z1);
  }
}

uint32_t poisson(Engine& e, double lambda) {
  if (lambda < kPoissonInversionLimit) {
    const double u = uniform_from(e.next());
    double p = std::exp(-lambda), cdf = p;
    uint32_t k = 0;
    // The tail beyond 1000 terms is below double precision for lambda < 64.
    while (cdf < u && k < 1000) {
      ++k;
      p *= lambda / k;
      cdf += p;
    }
    return k;
  }
  double z0, z1;
  box_muller(uniform_from(e.next()), uniform_from(e.next()), &z0, &z1);
  const double x = std::floor(lambda + std::sqrt(lambda) * z0 + 0.5);
  return x <= 0 ? 0u : x >= 4294967295.0 ? 4294967295u : uint32_t(x);
}

}  // namespace

size_t element_bytes(Dist d) {
  switch (d) {
    case Dist::kBits64:
    case Dist::kUniformDouble:
    case Dist::kNormalDouble:
    case Dist::kLogNormalDouble:
      return 8;
    default:
      return 4;
  }
}

uint64_t words(const Request& r) {
  switch (r.dist) {
    case Dist::kBits64:
    case Dist::kUniformDouble:
    case Dist::kNormalDouble:
    case Dist::kLogNormalDouble:
      return 2 * uint64_t(r.n);
    case Dist::kPoisson:
      return r.lambda < kPoissonInversionLimit ? uint64_t(r.n) : 2 * uint64_t(r.n);
    default:
      return uint64_t(r.n);
  }
}

void fill(Engine& e, const Request& r, void* out) {
  switch (r.dist) {
    case Dist::kBits32: {
      auto* o = static_cast<uint32_t*>(out);
      for (size_t i = 0; i < r.n; ++i) o[i] = e.next();
      return;
    }
    case Dist::kBits64: {
      auto* o = static_cast<uint64_t*>(out);
      for (size_t i = 0; i < r.n; ++i) {
        const uint64_t hi = e.next();
        o[i] = (hi << 32) | e.next();
      }
      return;
    }
    case Dist::kUniform: {
      auto* o = static_cast<float*>(out);
      for (size_t i = 0; i < r.n; ++i) o[i] = float(uniform_from(e.next()));
      return;
    }
    case Dist::kUniformDouble: {
      auto* o = static_cast<double*>(out);
      for (size_t i = 0; i < r.n; ++i) {
        const uint32_t hi = e.next();
        o[i] = uniform_double_from(hi, e.next());
      }
      return;
    }
    case Dist::kNormal:
      return normals(e, r.n, false, r.mean, r.stddev, false, static_cast<float*>(out));
    case Dist::kNormalDouble:
      return normals(e, r.n, true, r.mean, r.stddev, false, static_cast<double*>(out));
    case Dist::kLogNormal:
      return normals(e, r.n, false, r.mean, r.stddev, true, static_cast<float*>(out));
    case Dist::kLogNormalDouble:
      return normals(e, r.n, true, r.mean, r.stddev, true, static_cast<double*>(out));
    case Dist::kPoisson: {
      auto* o = static_cast<uint32_t*>(out);
      for (size_t i = 0; i < r.n; ++i) o[i] = poisson(e, r.lambda);
      return;
    }
  }
}

}  // namespace rgpu::cpurand
