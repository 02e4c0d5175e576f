// streams_events: copies and kernels split over four streams so they can
// overlap, timed with events; a cross-stream dependency through
// cudaStreamWaitEvent; events created without timing refuse to be timed.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorString(err_));                                         \
      std::printf("FAIL streams_events: %s\n", cudaGetErrorName(err_));               \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

constexpr int STREAMS = 4;

__global__ void work(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = in[i];
    for (int k = 0; k < 8; ++k) v = v * 0.5f + 1.0f;
    out[i] = v;
  }
}

__global__ void fill(int* p, int n, int value) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = value + i;
}

__global__ void copy_plus_one(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + 1;
}

static float host_work(float v) {
  for (int k = 0; k < 8; ++k) v = v * 0.5f + 1.0f;
  return v;
}

int main() {
  const int n = 1 << 16;
  const int chunk = n / STREAMS;
  float *h_in, *h_out, *d_in, *d_out;
  CHECK(cudaMallocHost(&h_in, n * sizeof(float)));
  CHECK(cudaMallocHost(&h_out, n * sizeof(float)));
  CHECK(cudaMalloc(&d_in, n * sizeof(float)));
  CHECK(cudaMalloc(&d_out, n * sizeof(float)));
  for (int i = 0; i < n; ++i) {
    h_in[i] = float(i % 1000);
    h_out[i] = -1.0f;
  }

  cudaStream_t streams[STREAMS];
  for (auto& s : streams) CHECK(cudaStreamCreate(&s));
  cudaEvent_t start, stop, done[STREAMS];
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (auto& e : done) CHECK(cudaEventCreate(&e));

  CHECK(cudaEventRecord(start, 0));
  for (int s = 0; s < STREAMS; ++s) {
    int off = s * chunk;
    CHECK(cudaMemcpyAsync(d_in + off, h_in + off, chunk * sizeof(float), cudaMemcpyHostToDevice, streams[s]));
    work<<<(chunk + 255) / 256, 256, 0, streams[s]>>>(d_in + off, d_out + off, chunk);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(h_out + off, d_out + off, chunk * sizeof(float), cudaMemcpyDeviceToHost, streams[s]));
    CHECK(cudaEventRecord(done[s], streams[s]));
  }
  CHECK(cudaEventRecord(stop, 0));  // the legacy default stream waits for the blocking streams
  CHECK(cudaEventSynchronize(stop));
  float total_ms = -1.0f;
  CHECK(cudaEventElapsedTime(&total_ms, start, stop));

  int failures = 0;
  if (!(total_ms >= 0.0f) || total_ms > 60000.0f) {
    std::fprintf(stderr, "implausible elapsed time %f ms\n", total_ms);
    ++failures;
  }
  for (int s = 0; s < STREAMS; ++s) {
    if (cudaEventQuery(done[s]) != cudaSuccess) {
      std::fprintf(stderr, "event of stream %d not complete after the stop event\n", s);
      ++failures;
    }
    float ms = -1.0f;
    CHECK(cudaEventElapsedTime(&ms, start, done[s]));
    if (!(ms >= 0.0f)) {
      std::fprintf(stderr, "stream %d: elapsed %f ms\n", s, ms);
      ++failures;
    }
  }
  for (int i = 0; i < n; ++i) {
    if (h_out[i] != host_work(h_in[i])) {
      if (failures < 5) std::fprintf(stderr, "out[%d] = %f, expected %f\n", i, h_out[i], host_work(h_in[i]));
      ++failures;
    }
  }

  // Stream b consumes what stream a produces, ordered only by an event.
  cudaStream_t a, b;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  cudaEvent_t produced;
  CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  const int m = 10000;
  int *d_x, *d_y;
  CHECK(cudaMalloc(&d_x, m * sizeof(int)));
  CHECK(cudaMalloc(&d_y, m * sizeof(int)));
  int* h_y;
  CHECK(cudaMallocHost(&h_y, m * sizeof(int)));
  fill<<<(m + 255) / 256, 256, 0, a>>>(d_x, m, 1000);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(produced, a));
  CHECK(cudaStreamWaitEvent(b, produced, 0));
  copy_plus_one<<<(m + 255) / 256, 256, 0, b>>>(d_x, d_y, m);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(h_y, d_y, m * sizeof(int), cudaMemcpyDeviceToHost, b));
  CHECK(cudaStreamSynchronize(b));
  for (int i = 0; i < m; ++i) {
    if (h_y[i] != 1000 + i + 1) {
      if (failures < 5) std::fprintf(stderr, "y[%d] = %d, expected %d\n", i, h_y[i], 1000 + i + 1);
      ++failures;
    }
  }

  // An event created with cudaEventDisableTiming cannot be timed.
  float ms = 0.0f;
  cudaError_t e = cudaEventElapsedTime(&ms, start, produced);
  if (e != cudaErrorInvalidResourceHandle) {
    std::fprintf(stderr, "elapsed time with a no-timing event returned %s\n", cudaGetErrorName(e));
    ++failures;
  }
  (void)cudaGetLastError();

  CHECK(cudaDeviceSynchronize());
  for (auto& s : streams) {
    if (cudaStreamQuery(s) != cudaSuccess) {
      std::fprintf(stderr, "stream not idle after cudaDeviceSynchronize\n");
      ++failures;
    }
    CHECK(cudaStreamDestroy(s));
  }
  CHECK(cudaStreamDestroy(a));
  CHECK(cudaStreamDestroy(b));
  for (auto& ev : done) CHECK(cudaEventDestroy(ev));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaEventDestroy(produced));
  CHECK(cudaFreeHost(h_in));
  CHECK(cudaFreeHost(h_out));
  CHECK(cudaFreeHost(h_y));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  CHECK(cudaFree(d_x));
  CHECK(cudaFree(d_y));
  if (failures) {
    std::printf("FAIL streams_events: %d problems\n", failures);
    return 1;
  }
  std::printf("PASS streams_events: %d streams, %.3f ms\n", STREAMS, total_ms);
  return 0;
}
