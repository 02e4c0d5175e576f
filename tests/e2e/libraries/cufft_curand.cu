// A CUDA 13 program that links NVIDIA's cuFFT and cuRAND (-lcufft -lcurand:
// it imports cufftPlanMany@libcufft.so.12 and curandGenerateNormal@
// libcurand.so.10) and runs, through rgpu, on rgpud's CPU device and its
// stand-ins: Philox normals drawn into device memory, a batched 2-D R2C
// plan made with cufftPlanMany on a stream, its output against a direct DFT
// on the host, and C2R back to the (unnormalised) input. Prints
// "PASS cufft_curand" when every result matches.
#include <cuda_runtime.h>
#include <cufft.h>
#include <curand.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x, ok)                                                        \
  do {                                                                      \
    if (!((x) == (ok))) {                                                   \
      std::printf("FAIL cufft_curand: %s\n", #x);                           \
      std::exit(1);                                                         \
    }                                                                       \
  } while (0)

int main() {
  constexpr int kRows = 6, kCols = 10, kBatch = 2, kHalf = kCols / 2 + 1;
  constexpr int kReal = kRows * kCols, kComplex = kRows * kHalf;
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream), cudaSuccess);
  float* x = nullptr;
  cufftComplex* y = nullptr;
  CHECK(cudaMalloc(&x, sizeof(float) * kReal * kBatch), cudaSuccess);
  CHECK(cudaMalloc(&y, sizeof(cufftComplex) * kComplex * kBatch), cudaSuccess);

  curandGenerator_t gen;
  CHECK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10), CURAND_STATUS_SUCCESS);
  CHECK(curandSetStream(gen, stream), CURAND_STATUS_SUCCESS);
  CHECK(curandSetPseudoRandomGeneratorSeed(gen, 42), CURAND_STATUS_SUCCESS);
  CHECK(curandGenerateNormal(gen, x, kReal * kBatch, 0.0f, 1.0f), CURAND_STATUS_SUCCESS);

  cufftHandle fwd, inv;
  int n[2] = {kRows, kCols};
  CHECK(cufftPlanMany(&fwd, 2, n, nullptr, 1, kReal, nullptr, 1, kComplex, CUFFT_R2C, kBatch), CUFFT_SUCCESS);
  CHECK(cufftPlanMany(&inv, 2, n, nullptr, 1, kComplex, nullptr, 1, kReal, CUFFT_C2R, kBatch), CUFFT_SUCCESS);
  CHECK(cufftSetStream(fwd, stream), CUFFT_SUCCESS);
  CHECK(cufftSetStream(inv, stream), CUFFT_SUCCESS);
  std::vector<float> hx(kReal * kBatch);
  CHECK(cudaMemcpyAsync(hx.data(), x, sizeof(float) * hx.size(), cudaMemcpyDeviceToHost, stream), cudaSuccess);
  CHECK(cufftExecR2C(fwd, x, y), CUFFT_SUCCESS);
  std::vector<std::complex<float>> hy(kComplex * kBatch);
  CHECK(cudaMemcpyAsync(hy.data(), y, sizeof(cufftComplex) * hy.size(), cudaMemcpyDeviceToHost, stream), cudaSuccess);
  CHECK(cufftExecC2R(inv, y, x), CUFFT_SUCCESS);
  std::vector<float> back(kReal * kBatch);
  CHECK(cudaMemcpyAsync(back.data(), x, sizeof(float) * back.size(), cudaMemcpyDeviceToHost, stream), cudaSuccess);
  CHECK(cudaStreamSynchronize(stream), cudaSuccess);

  double mean = 0;
  for (float v : hx) mean += v;
  if (std::fabs(mean / hx.size()) > 0.5) {
    std::printf("FAIL cufft_curand: normals have mean %f\n", mean / hx.size());
    return 1;
  }
  for (int b = 0; b < kBatch; ++b) {
    for (int k1 = 0; k1 < kRows; ++k1) {
      for (int k2 = 0; k2 < kHalf; ++k2) {
        std::complex<double> want = 0;
        for (int j1 = 0; j1 < kRows; ++j1) {
          for (int j2 = 0; j2 < kCols; ++j2) {
            const double phase = -2 * M_PI * (double(j1 * k1) / kRows + double(j2 * k2) / kCols);
            want += double(hx[b * kReal + j1 * kCols + j2]) * std::polar(1.0, phase);
          }
        }
        const std::complex<float> got = hy[b * kComplex + k1 * kHalf + k2];
        if (std::abs(std::complex<double>(got) - want) > 1e-3 * (1 + std::abs(want))) {
          std::printf("FAIL cufft_curand: R2C batch %d (%d,%d)\n", b, k1, k2);
          return 1;
        }
      }
    }
  }
  for (size_t i = 0; i < back.size(); ++i) {
    if (std::fabs(back[i] - kReal * hx[i]) > 1e-3 * kReal) {
      std::printf("FAIL cufft_curand: C2R element %zu: %f, not %f\n", i, back[i], kReal * hx[i]);
      return 1;
    }
  }
  CHECK(cufftDestroy(fwd), CUFFT_SUCCESS);
  CHECK(cufftDestroy(inv), CUFFT_SUCCESS);
  CHECK(curandDestroyGenerator(gen), CURAND_STATUS_SUCCESS);
  std::printf("PASS cufft_curand\n");
  return 0;
}
