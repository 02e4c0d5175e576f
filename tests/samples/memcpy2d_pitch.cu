// memcpy2d_pitch: a pitched device matrix from cudaMallocPitch, filled and
// read back with cudaMemcpy2D between host buffers of different pitches,
// cudaMemset2D on a sub-rectangle, and a device-to-device 2D copy.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorString(err_));                                         \
      std::printf("FAIL memcpy2d_pitch: %s\n", cudaGetErrorName(err_));               \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

// Adds row * 1000 + col to every element; rows are `pitch` bytes apart.
__global__ void add_coords(float* m, size_t pitch, int width, int height) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (col < width && row < height) {
    float* r = reinterpret_cast<float*>(reinterpret_cast<char*>(m) + row * pitch);
    r[col] += float(row * 1000 + col);
  }
}

int main() {
  const int width = 100, height = 37;
  int failures = 0;
  float* d = nullptr;
  size_t pitch = 0;
  CHECK(cudaMallocPitch(reinterpret_cast<void**>(&d), &pitch, width * sizeof(float), height));
  if (pitch < width * sizeof(float)) {
    std::fprintf(stderr, "pitch %zu is narrower than a row\n", pitch);
    ++failures;
  }

  std::vector<float> src(size_t(width) * height);
  for (int i = 0; i < width * height; ++i) src[i] = float(i % 13);
  CHECK(cudaMemcpy2D(d, pitch, src.data(), width * sizeof(float), width * sizeof(float), height,
                     cudaMemcpyHostToDevice));
  dim3 block(32, 8), grid((width + 31) / 32, (height + 7) / 8);
  add_coords<<<grid, block>>>(d, pitch, width, height);
  CHECK(cudaGetLastError());

  // Read back into a host buffer whose rows carry 5 floats of padding.
  const int host_stride = width + 5;
  std::vector<float> dst(size_t(host_stride) * height, -1.0f);
  CHECK(cudaMemcpy2D(dst.data(), host_stride * sizeof(float), d, pitch, width * sizeof(float), height,
                     cudaMemcpyDeviceToHost));
  for (int r = 0; r < height; ++r) {
    for (int c = 0; c < width; ++c) {
      float want = src[r * width + c] + float(r * 1000 + c);
      if (dst[r * host_stride + c] != want) {
        if (failures < 5) std::fprintf(stderr, "[%d][%d] = %f, expected %f\n", r, c, dst[r * host_stride + c], want);
        ++failures;
      }
    }
    for (int c = width; c < host_stride; ++c)
      if (dst[r * host_stride + c] != -1.0f) {
        if (failures < 5) std::fprintf(stderr, "padding [%d][%d] overwritten\n", r, c);
        ++failures;
      }
  }

  // Zero a 10x20 rectangle at row 5, column 30, then copy the pitched matrix
  // into a tightly packed device buffer and bring that back.
  CHECK(cudaMemset2D(reinterpret_cast<char*>(d) + 5 * pitch + 30 * sizeof(float), pitch, 0, 20 * sizeof(float), 10));
  float* packed;
  CHECK(cudaMalloc(&packed, size_t(width) * height * sizeof(float)));
  CHECK(cudaMemcpy2D(packed, width * sizeof(float), d, pitch, width * sizeof(float), height,
                     cudaMemcpyDeviceToDevice));
  std::vector<float> back(size_t(width) * height);
  CHECK(cudaMemcpy(back.data(), packed, back.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int r = 0; r < height; ++r)
    for (int c = 0; c < width; ++c) {
      bool zeroed = r >= 5 && r < 15 && c >= 30 && c < 50;
      float want = zeroed ? 0.0f : src[r * width + c] + float(r * 1000 + c);
      if (back[r * width + c] != want) {
        if (failures < 5) std::fprintf(stderr, "after memset2D [%d][%d] = %f, expected %f\n", r, c,
                                       back[r * width + c], want);
        ++failures;
      }
    }

  // A pitch narrower than the copied width is refused.
  cudaError_t e = cudaMemcpy2D(d, pitch, src.data(), 8, width * sizeof(float), 2, cudaMemcpyHostToDevice);
  if (e != cudaErrorInvalidPitchValue && e != cudaErrorInvalidValue) {
    std::fprintf(stderr, "narrow source pitch returned %s\n", cudaGetErrorName(e));
    ++failures;
  }
  (void)cudaGetLastError();

  CHECK(cudaFree(d));
  CHECK(cudaFree(packed));
  if (failures) {
    std::printf("FAIL memcpy2d_pitch: %d problems\n", failures);
    return 1;
  }
  std::printf("PASS memcpy2d_pitch: %dx%d floats, pitch %zu\n", height, width, pitch);
  return 0;
}
