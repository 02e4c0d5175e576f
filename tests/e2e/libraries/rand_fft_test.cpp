// cuRAND's host API and cuFFT end to end: this program runs under `rgpu run`
// against an rgpud on the CPU device, whose stand-ins
// (librgpu-cpu-curand.so, librgpu-cpu-cufft.so) draw and transform in device
// memory. Generators are deterministic for a seed and an offset, their
// distributions have the moments they should, and a device pointer or an
// extent outside the program's allocations is refused with an error while
// the session goes on.
#include <cuda_runtime.h>
#include <cufftXt.h>
#include <curand.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <vector>

namespace {

template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) { EXPECT_EQ(cudaMalloc(&p_, n * sizeof(T)), cudaSuccess); }
  ~DeviceArray() { cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return static_cast<T*>(p_); }
  std::vector<T> read() const {
    std::vector<T> out(n_);
    EXPECT_EQ(cudaMemcpy(out.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
  void write(const std::vector<T>& v) {
    EXPECT_EQ(cudaMemcpy(p_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }

 private:
  void* p_ = nullptr;
  size_t n_;
};

class Generator {
 public:
  Generator(curandRngType_t type, unsigned long long seed) {
    EXPECT_EQ(curandCreateGenerator(&g_, type), CURAND_STATUS_SUCCESS);
    EXPECT_EQ(curandSetPseudoRandomGeneratorSeed(g_, seed), CURAND_STATUS_SUCCESS);
  }
  ~Generator() { curandDestroyGenerator(g_); }
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;
  curandGenerator_t get() const { return g_; }

 private:
  curandGenerator_t g_ = nullptr;
};

std::vector<unsigned> bits(curandRngType_t type, unsigned long long seed, unsigned long long offset, size_t n) {
  Generator g(type, seed);
  EXPECT_EQ(curandSetGeneratorOffset(g.get(), offset), CURAND_STATUS_SUCCESS);
  DeviceArray<unsigned> d(n);
  EXPECT_EQ(curandGenerate(g.get(), d.get(), n), CURAND_STATUS_SUCCESS);
  return d.read();
}

template <class T>
void moments(const std::vector<T>& v, double* mean, double* var) {
  double s = 0, s2 = 0;
  for (T x : v) {
    s += double(x);
    s2 += double(x) * double(x);
  }
  *mean = s / double(v.size());
  *var = s2 / double(v.size()) - *mean * *mean;
}

const curandRngType_t kTypes[] = {CURAND_RNG_PSEUDO_DEFAULT, CURAND_RNG_PSEUDO_XORWOW, CURAND_RNG_PSEUDO_MRG32K3A,
                                  CURAND_RNG_PSEUDO_PHILOX4_32_10};

TEST(Curand, SameSeedAndOffsetGiveTheSameNumbers) {
  for (curandRngType_t type : kTypes) {
    SCOPED_TRACE(int(type));
    const auto a = bits(type, 1234, 0, 4096);
    EXPECT_EQ(a, bits(type, 1234, 0, 4096));
    EXPECT_NE(a, bits(type, 1235, 0, 4096));
    // An offset skips exactly that many numbers, near and far.
    const auto skipped = bits(type, 1234, 1000, 3096);
    EXPECT_TRUE(std::equal(skipped.begin(), skipped.end(), a.begin() + 1000));
    const auto far = bits(type, 1234, 5000000, 16);
    const auto far2 = bits(type, 1234, 4999990, 26);
    EXPECT_TRUE(std::equal(far.begin(), far.end(), far2.begin() + 10));
  }
}

TEST(Curand, CallsContinueTheSequence) {
  for (curandRngType_t type : kTypes) {
    SCOPED_TRACE(int(type));
    const auto whole = bits(type, 99, 0, 2000);
    Generator g(type, 99);
    DeviceArray<unsigned> d(2000);
    ASSERT_EQ(curandGenerate(g.get(), d.get(), 700), CURAND_STATUS_SUCCESS);
    ASSERT_EQ(curandGenerate(g.get(), d.get() + 700, 1300), CURAND_STATUS_SUCCESS);
    EXPECT_EQ(d.read(), whole);
    // A new seed starts over at offset 0.
    ASSERT_EQ(curandSetPseudoRandomGeneratorSeed(g.get(), 99), CURAND_STATUS_SUCCESS);
    ASSERT_EQ(curandGenerate(g.get(), d.get(), 2000), CURAND_STATUS_SUCCESS);
    EXPECT_EQ(d.read(), whole);
  }
}

TEST(Curand, DistributionsHaveTheirMoments) {
  constexpr size_t kN = 200000;
  for (curandRngType_t type : kTypes) {
    SCOPED_TRACE(int(type));
    Generator g(type, 7);
    double mean = 0, var = 0;
    DeviceArray<float> f(kN);
    DeviceArray<double> d(kN);
    DeviceArray<unsigned> u(kN);

    ASSERT_EQ(curandGenerateUniform(g.get(), f.get(), kN), CURAND_STATUS_SUCCESS);
    auto fu = f.read();
    for (float x : fu) ASSERT_TRUE(x > 0.0f && x <= 1.0f) << x;
    moments(fu, &mean, &var);
    EXPECT_NEAR(mean, 0.5, 0.005);
    EXPECT_NEAR(var, 1.0 / 12, 0.002);

    ASSERT_EQ(curandGenerateUniformDouble(g.get(), d.get(), kN), CURAND_STATUS_SUCCESS);
    auto du = d.read();
    for (double x : du) ASSERT_TRUE(x > 0.0 && x <= 1.0) << x;
    moments(du, &mean, &var);
    EXPECT_NEAR(mean, 0.5, 0.005);

    ASSERT_EQ(curandGenerateNormal(g.get(), f.get(), kN, 2.0f, 3.0f), CURAND_STATUS_SUCCESS);
    moments(f.read(), &mean, &var);
    EXPECT_NEAR(mean, 2.0, 0.03);
    EXPECT_NEAR(std::sqrt(var), 3.0, 0.03);

    ASSERT_EQ(curandGenerateNormalDouble(g.get(), d.get(), kN, -1.0, 0.5), CURAND_STATUS_SUCCESS);
    moments(d.read(), &mean, &var);
    EXPECT_NEAR(mean, -1.0, 0.01);
    EXPECT_NEAR(std::sqrt(var), 0.5, 0.01);

    ASSERT_EQ(curandGenerateLogNormal(g.get(), f.get(), kN, 0.0f, 0.5f), CURAND_STATUS_SUCCESS);
    moments(f.read(), &mean, &var);
    EXPECT_NEAR(mean, std::exp(0.125), 0.01);

    ASSERT_EQ(curandGenerateLogNormalDouble(g.get(), d.get(), kN, 0.0, 0.5), CURAND_STATUS_SUCCESS);
    moments(d.read(), &mean, &var);
    EXPECT_NEAR(mean, std::exp(0.125), 0.01);

    for (double lambda : {0.5, 4.0, 150.0}) {
      ASSERT_EQ(curandGeneratePoisson(g.get(), u.get(), kN, lambda), CURAND_STATUS_SUCCESS);
      moments(u.read(), &mean, &var);
      EXPECT_NEAR(mean, lambda, 0.02 * lambda + 0.01) << lambda;
      EXPECT_NEAR(var, lambda, 0.05 * lambda + 0.02) << lambda;
    }
    // Box-Muller draws pairs: an odd count is refused, as cuRAND does.
    EXPECT_EQ(curandGenerateNormal(g.get(), f.get(), 3, 0.0f, 1.0f), CURAND_STATUS_SUCCESS);
    EXPECT_NE(cudaDeviceSynchronize(), cudaSuccess);
    (void)cudaGetLastError();
  }
}

TEST(Curand, UnsupportedGeneratorsAreRefusedAndVersionAnswers) {
  curandGenerator_t g = nullptr;
  EXPECT_EQ(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_MT19937), CURAND_STATUS_SUCCESS);
  EXPECT_NE(cudaDeviceSynchronize(), cudaSuccess);  // created one-way; refused by the stand-in
  (void)cudaGetLastError();
  int version = 0;
  EXPECT_EQ(curandGetVersion(&version), CURAND_STATUS_SUCCESS);
  EXPECT_GT(version, 0);
  EXPECT_EQ(curandCreateGeneratorHost(&g, CURAND_RNG_PSEUDO_DEFAULT), CURAND_STATUS_TYPE_ERROR);
}

TEST(Curand, OutputOutsideTheAllocationIsRefusedAndTheSessionGoesOn) {
  Generator g(CURAND_RNG_PSEUDO_PHILOX4_32_10, 5);
  DeviceArray<float> f(1000);
  DeviceArray<float> guard(16);
  const auto before = guard.read();
  // 1001 floats from f's start, or any from a forged address: refused by
  // rgpud before the library sees them; reported at the next synchronization.
  EXPECT_EQ(curandGenerateUniform(g.get(), f.get(), 1001), CURAND_STATUS_SUCCESS);
  EXPECT_NE(cudaDeviceSynchronize(), cudaSuccess);
  (void)cudaGetLastError();
  EXPECT_EQ(curandGenerateUniform(g.get(), reinterpret_cast<float*>(uintptr_t{0x10}), 4), CURAND_STATUS_SUCCESS);
  EXPECT_NE(cudaDeviceSynchronize(), cudaSuccess);
  (void)cudaGetLastError();
  EXPECT_EQ(guard.read(), before);
  ASSERT_EQ(curandGenerateUniform(g.get(), f.get(), 1000), CURAND_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (float x : f.read()) ASSERT_TRUE(x > 0.0f && x <= 1.0f);
}

// A 1d transform against a direct DFT on the host.
TEST(Cufft, ClassicPlanMatchesTheDefinition) {
  constexpr int kN = 12, kBatch = 3;
  std::vector<std::complex<float>> x(kN * kBatch);
  for (size_t i = 0; i < x.size(); ++i) x[i] = {float(std::sin(0.3 * i)), float(std::cos(0.7 * i))};
  DeviceArray<std::complex<float>> in(x.size()), out(x.size());
  in.write(x);
  cufftHandle plan = 0;
  ASSERT_EQ(cufftPlan1d(&plan, kN, CUFFT_C2C, kBatch), CUFFT_SUCCESS);
  ASSERT_EQ(cufftExecC2C(plan, reinterpret_cast<cufftComplex*>(in.get()), reinterpret_cast<cufftComplex*>(out.get()),
                         CUFFT_FORWARD),
            CUFFT_SUCCESS);
  const auto y = out.read();
  for (int b = 0; b < kBatch; ++b) {
    for (int k = 0; k < kN; ++k) {
      std::complex<double> want = 0;
      for (int j = 0; j < kN; ++j) {
        want += std::complex<double>(x[b * kN + j]) * std::polar(1.0, -2 * M_PI * j * k / kN);
      }
      EXPECT_NEAR(y[b * kN + k].real(), want.real(), 1e-4);
      EXPECT_NEAR(y[b * kN + k].imag(), want.imag(), 1e-4);
    }
  }
  size_t work = 1;
  EXPECT_EQ(cufftGetSize(plan, &work), CUFFT_SUCCESS);
  EXPECT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
  EXPECT_EQ(cufftDestroy(plan), CUFFT_INVALID_PLAN);
}

TEST(Cufft, RealRoundTripIsUnnormalised) {
  constexpr int kN = 10;
  std::vector<double> x(kN);
  for (int i = 0; i < kN; ++i) x[size_t(i)] = i * 0.5 - 2;
  DeviceArray<double> r(kN);
  DeviceArray<std::complex<double>> c(kN / 2 + 1);
  r.write(x);
  cufftHandle fwd = 0, inv = 0;
  ASSERT_EQ(cufftPlan1d(&fwd, kN, CUFFT_D2Z, 1), CUFFT_SUCCESS);
  ASSERT_EQ(cufftPlan1d(&inv, kN, CUFFT_Z2D, 1), CUFFT_SUCCESS);
  ASSERT_EQ(cufftExecD2Z(fwd, r.get(), reinterpret_cast<cufftDoubleComplex*>(c.get())), CUFFT_SUCCESS);
  ASSERT_EQ(cufftExecZ2D(inv, reinterpret_cast<cufftDoubleComplex*>(c.get()), r.get()), CUFFT_SUCCESS);
  const auto y = r.read();
  for (int i = 0; i < kN; ++i) EXPECT_NEAR(y[size_t(i)], kN * x[size_t(i)], 1e-9);
  cufftDestroy(fwd);
  cufftDestroy(inv);
}

TEST(Cufft, ExtentPastTheAllocationIsRefusedAndTheSessionGoesOn) {
  constexpr int kN = 64;
  DeviceArray<std::complex<float>> small(kN / 2), big(kN * 4), out(kN * 4);
  cufftHandle plan = 0;
  ASSERT_EQ(cufftPlan1d(&plan, kN, CUFFT_C2C, 4), CUFFT_SUCCESS);
  // The plan reads 4 * 64 elements: half of one is not enough.
  EXPECT_EQ(cufftExecC2C(plan, reinterpret_cast<cufftComplex*>(small.get()),
                         reinterpret_cast<cufftComplex*>(out.get()), CUFFT_FORWARD),
            CUFFT_SUCCESS);
  EXPECT_NE(cudaDeviceSynchronize(), cudaSuccess);
  (void)cudaGetLastError();
  // Nor is an output that starts inside and runs past the end.
  EXPECT_EQ(cufftExecC2C(plan, reinterpret_cast<cufftComplex*>(big.get()),
                         reinterpret_cast<cufftComplex*>(out.get() + 1), CUFFT_FORWARD),
            CUFFT_SUCCESS);
  EXPECT_NE(cudaDeviceSynchronize(), cudaSuccess);
  (void)cudaGetLastError();
  // A strided plan whose distance reaches past the allocation.
  long long n = kN, embed = kN;
  size_t work = 0;
  cufftHandle strided = 0;
  ASSERT_EQ(cufftCreate(&strided), CUFFT_SUCCESS);
  ASSERT_EQ(cufftXtMakePlanMany(strided, 1, &n, &embed, 1, 2 * kN, CUDA_C_32F, &embed, 1, kN, CUDA_C_32F, 4, &work,
                                CUDA_C_32F),
            CUFFT_SUCCESS);
  EXPECT_EQ(cufftXtExec(strided, big.get(), out.get(), CUFFT_FORWARD), CUFFT_SUCCESS);
  EXPECT_NE(cudaDeviceSynchronize(), cudaSuccess);
  (void)cudaGetLastError();
  // A forged plan is refused at once.
  EXPECT_EQ(cufftExecC2C(plan + 12345, nullptr, nullptr, CUFFT_FORWARD), CUFFT_INVALID_PLAN);
  // The session goes on: the same plan on memory that fits.
  std::vector<std::complex<float>> ones(kN * 4, {1.0f, 0.0f});
  big.write(ones);
  ASSERT_EQ(cufftExecC2C(plan, reinterpret_cast<cufftComplex*>(big.get()), reinterpret_cast<cufftComplex*>(out.get()),
                         CUFFT_FORWARD),
            CUFFT_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto y = out.read();
  EXPECT_NEAR(y[0].real(), kN, 1e-3);
  EXPECT_NEAR(std::abs(y[1]), 0.0, 1e-3);
  cufftDestroy(plan);
  cufftDestroy(strided);
}

}  // namespace
