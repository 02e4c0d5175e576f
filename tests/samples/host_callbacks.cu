// host_callbacks: host functions enqueued with cudaLaunchHostFunc and
// cudaStreamAddCallback run in stream order: after the work before them,
// before the work after them, and in the order they were enqueued.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorString(err_));                                         \
      std::printf("FAIL host_callbacks: %s\n", cudaGetErrorName(err_));               \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

constexpr int N = 4096;

// What the host functions saw; they may run on a runtime thread.
struct Log {
  std::mutex mu;
  std::vector<int> order;
  int bad_sums = 0;
  int bad_status = 0;
  cudaStream_t expected_stream = nullptr;
  int* pinned = nullptr;  // N ints copied back from the device before each check
};

struct Step {
  Log* log;
  int id;
  int expected_value;  // every element of log->pinned should hold this when the step runs
};

static void record(Step* step) {
  int bad = 0;
  for (int i = 0; i < N; ++i) bad += step->log->pinned[i] != step->expected_value + i;
  std::lock_guard<std::mutex> lock(step->log->mu);
  step->log->order.push_back(step->id);
  if (bad) {
    std::fprintf(stderr, "step %d saw %d stale elements\n", step->id, bad);
    step->log->bad_sums++;
  }
}

static void CUDART_CB host_func(void* data) { record(static_cast<Step*>(data)); }

static void CUDART_CB stream_callback(cudaStream_t stream, cudaError_t status, void* data) {
  Step* step = static_cast<Step*>(data);
  if (status != cudaSuccess || stream != step->log->expected_stream) {
    std::lock_guard<std::mutex> lock(step->log->mu);
    step->log->bad_status++;
  }
  record(step);
}

// Writes into pinned memory that a later copy in the same stream uploads.
static void CUDART_CB produce(void* data) {
  Step* step = static_cast<Step*>(data);
  for (int i = 0; i < N; ++i) step->log->pinned[i] = step->expected_value + i;
  std::lock_guard<std::mutex> lock(step->log->mu);
  step->log->order.push_back(step->id);
}

__global__ void set_values(int* p, int value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = value + i;
}

__global__ void add_to_values(int* p, int add, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += add;
}

int main() {
  Log log;
  CHECK(cudaMallocHost(&log.pinned, N * sizeof(int)));
  int* d;
  CHECK(cudaMalloc(&d, N * sizeof(int)));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  log.expected_stream = stream;

  const int blocks = (N + 255) / 256;
  Step steps[] = {{&log, 1, 100}, {&log, 2, 150}, {&log, 3, 7000}, {&log, 4, 7005}, {&log, 5, 7005}};

  // kernel, copy back, host function sees 100 + i.
  set_values<<<blocks, 256, 0, stream>>>(d, 100, N);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(log.pinned, d, N * sizeof(int), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaLaunchHostFunc(stream, host_func, &steps[0]));
  // kernel, copy back, callback sees 150 + i.
  add_to_values<<<blocks, 256, 0, stream>>>(d, 50, N);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(log.pinned, d, N * sizeof(int), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamAddCallback(stream, stream_callback, &steps[1], 0));
  // A host function produces data that the following copy uploads.
  CHECK(cudaLaunchHostFunc(stream, produce, &steps[2]));
  CHECK(cudaMemcpyAsync(d, log.pinned, N * sizeof(int), cudaMemcpyHostToDevice, stream));
  add_to_values<<<blocks, 256, 0, stream>>>(d, 5, N);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(log.pinned, d, N * sizeof(int), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaLaunchHostFunc(stream, host_func, &steps[3]));
  CHECK(cudaStreamAddCallback(stream, stream_callback, &steps[4], 0));
  CHECK(cudaStreamSynchronize(stream));

  int failures = 0;
  {
    std::lock_guard<std::mutex> lock(log.mu);
    const std::vector<int> want = {1, 2, 3, 4, 5};
    if (log.order != want) {
      std::fprintf(stderr, "host functions ran in order:");
      for (int id : log.order) std::fprintf(stderr, " %d", id);
      std::fprintf(stderr, "\n");
      ++failures;
    }
    failures += log.bad_sums + log.bad_status;
  }

  // Host functions on the legacy default stream, many of them.
  std::atomic<int> counter{0};
  for (int i = 0; i < 50; ++i)
    CHECK(cudaLaunchHostFunc(0, [](void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); }, &counter));
  CHECK(cudaDeviceSynchronize());
  if (counter.load() != 50) {
    std::fprintf(stderr, "%d of 50 host functions ran before cudaDeviceSynchronize returned\n", counter.load());
    ++failures;
  }

  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(d));
  CHECK(cudaFreeHost(log.pinned));
  if (failures) {
    std::printf("FAIL host_callbacks: %d problems\n", failures);
    return 1;
  }
  std::printf("PASS host_callbacks: 5 host functions in stream order, 50 on the default stream\n");
  return 0;
}
