// graph_host_steps: work with effects on the host captured into a graph, as
// NVIDIA's simpleCudaGraphs does: a host function, a copy from page-locked
// host memory, a kernel, a copy back into page-locked host memory and a host
// function that reads it, replayed with new inputs. Each replay must read
// the host input when the graph gets to the copy (the host function before
// it wrote it) and land its output before the host function after it runs.
// Replays queued back to back, a clone, a copy of pageable memory and one
// larger than a step's message too.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorString(err_));                                         \
      std::printf("FAIL graph_host_steps: %s\n", cudaGetErrorName(err_));             \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

#define EXPECT(cond)                                                                  \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::printf("FAIL graph_host_steps: %s (line %d)\n", #cond, __LINE__);          \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

constexpr int kN = 5000;  // not a multiple of the block size

__global__ void twice_plus(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2 * in[i] + 1;
}

struct State {
  int* in;   // page-locked
  int* out;  // page-locked
  int replay = 0;
  int checked = 0;
  int wrong = 0;
};

// Before the copy in: this replay's input.
void CUDART_CB prepare(void* p) {
  auto* st = static_cast<State*>(p);
  ++st->replay;
  for (int i = 0; i < kN; ++i) st->in[i] = st->replay * 100000 + i;
  for (int i = 0; i < kN; ++i) st->out[i] = -1;
}

// After the copy out: the output of this replay's input must be there.
void CUDART_CB check(void* p) {
  auto* st = static_cast<State*>(p);
  ++st->checked;
  for (int i = 0; i < kN; ++i) {
    if (st->out[i] != 2 * (st->replay * 100000 + i) + 1) ++st->wrong;
  }
}

int main() {
  const size_t bytes = kN * sizeof(int);
  State st;
  CHECK(cudaMallocHost(&st.in, bytes));
  CHECK(cudaMallocHost(&st.out, bytes));
  int *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, bytes));
  CHECK(cudaMalloc(&d_out, bytes));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CHECK(cudaLaunchHostFunc(s, prepare, &st));
  CHECK(cudaMemcpyAsync(d_in, st.in, bytes, cudaMemcpyHostToDevice, s));
  twice_plus<<<(kN + 255) / 256, 256, 0, s>>>(d_in, d_out, kN);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(st.out, d_out, bytes, cudaMemcpyDefault, s));
  CHECK(cudaLaunchHostFunc(s, check, &st));
  cudaGraph_t graph;
  CHECK(cudaStreamEndCapture(s, &graph));
  // Captured, not run: nothing on the host moved.
  CHECK(cudaDeviceSynchronize());
  EXPECT(st.replay == 0 && st.checked == 0);

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
  for (int r = 1; r <= 4; ++r) {
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(st.replay == r && st.checked == r);
    EXPECT(st.wrong == 0);
    // The output is the program's to read once the stream is done.
    for (int i = 0; i < kN; ++i) EXPECT(st.out[i] == 2 * (r * 100000 + i) + 1);
  }
  // Queued back to back: each replay still reads its own input.
  for (int r = 0; r < 3; ++r) CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  EXPECT(st.replay == 7 && st.checked == 7 && st.wrong == 0);

  // A clone holds the same steps.
  cudaGraph_t clone;
  cudaGraphExec_t clone_exec;
  CHECK(cudaGraphClone(&clone, graph));
  CHECK(cudaGraphInstantiate(&clone_exec, clone, nullptr, nullptr, 0));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphLaunch(clone_exec, s));
  CHECK(cudaStreamSynchronize(s));
  EXPECT(st.replay == 8 && st.checked == 8 && st.wrong == 0);
  CHECK(cudaGraphExecDestroy(clone_exec));
  CHECK(cudaGraphDestroy(clone));

  // Captured and let go again and again: the steps of graphs that are gone
  // do not pile up.
  for (int k = 0; k < 50; ++k) {
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemcpyAsync(d_in, st.in, bytes, cudaMemcpyHostToDevice, s));
    CHECK(cudaStreamEndCapture(s, &graph));
    CHECK(cudaGraphDestroy(graph));
  }

  // Pageable memory, as NVIDIA's jacobiCudaGraphs copies a sum into a local
  // variable: read back at every replay.
  double sum = -1.0;
  double* d_sum;
  CHECK(cudaMalloc(&d_sum, sizeof(double)));
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CHECK(cudaMemcpyAsync(d_sum, &st.in[0], sizeof(int), cudaMemcpyHostToDevice, s));
  CHECK(cudaMemcpyAsync(&sum, d_sum, sizeof(double), cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamEndCapture(s, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
  CHECK(cudaMemset(d_sum, 0, sizeof(double)));
  for (int r = 1; r <= 2; ++r) {
    st.in[0] = r * 7;
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    double want = 0.0;
    const int low = r * 7;
    std::memcpy(&want, &low, sizeof low);  // the low four bytes, as copied
    EXPECT(sum == want);
  }
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaFree(d_sum));

  // A copy larger than one message carries (16 MiB) goes in pieces.
  const size_t big = (20u << 20) + 12;
  unsigned char *h_big, *h_back, *d_big;
  CHECK(cudaMallocHost(&h_big, big));
  CHECK(cudaMallocHost(&h_back, big));
  CHECK(cudaMalloc(&d_big, big));
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CHECK(cudaMemcpyAsync(d_big, h_big, big, cudaMemcpyHostToDevice, s));
  CHECK(cudaMemcpyAsync(h_back, d_big, big, cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamEndCapture(s, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 0; i < big; ++i) h_big[i] = static_cast<unsigned char>(i * 31 + i / 4096 + r);
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    for (size_t i = 0; i < big; ++i) {
      if (h_back[i] != h_big[i]) {
        std::printf("FAIL graph_host_steps: large copy, replay %d byte %zu\n", r, i);
        return 1;
      }
    }
  }
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaFree(d_big));
  CHECK(cudaFreeHost(h_big));
  CHECK(cudaFreeHost(h_back));

  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  CHECK(cudaFreeHost(st.in));
  CHECK(cudaFreeHost(st.out));
  std::printf("PASS graph_host_steps: %d replays\n", st.replay);
  return 0;
}
