// rgpu-bench: one CUDA driver API program measured remote (under `rgpu run`,
// whose libcuda.so.1 is rgpu's client library) and local (--driver naming the
// device's own driver library, with no rgpu in between). The driver is loaded
// with dlopen so that the very same binary does both. Results are JSON.
//
//   rgpu-bench latency   [--iters N]
//   rgpu-bench bandwidth [--sizes A,B,...] [--reps N]
//   rgpu-bench launch    [--launches N]
//   rgpu-bench app       [--reps N]
//   rgpu-bench ops       [--op call|launch|copy4k|copy1m] [--count N]
//   rgpu-bench busy      [--seconds S] [--streams N] [--blocks N] [--steps N]
//   common: [--driver PATH] [--json FILE] [--smoke]
#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"

namespace {

using rgpu::bench::Json;
using Clock = std::chrono::steady_clock;

#define BENCH_STR2(x) #x
#define BENCH_STR(x) BENCH_STR2(x)
// The driver functions used, by cuda.h's names (mapped to their versioned symbols).
#define BENCH_DRIVER(X)                                                                                  \
  X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuCtxSynchronize)           \
  X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)  \
  X(cuMemGetInfo) X(cuModuleLoadData) X(cuModuleGetFunction) X(cuLaunchKernel) X(cuStreamCreate)         \
  X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamQuery) X(cuEventCreate) X(cuEventRecord)           \
  X(cuEventQuery) X(cuEventDestroy) X(cuGetErrorName)
#define BENCH_DRIVER_OPTIONAL(X) X(cuMemAllocHost) X(cuMemFreeHost)

struct Driver {
#define BENCH_FIELD(fn) decltype(&::fn) fn = nullptr;
  BENCH_DRIVER(BENCH_FIELD)
  BENCH_DRIVER_OPTIONAL(BENCH_FIELD)
#undef BENCH_FIELD
};

Driver cu;
std::string where = "local";

[[noreturn]] void fail(const char* what, CUresult r) {
  const char* name = "?";
  if (cu.cuGetErrorName) cu.cuGetErrorName(r, &name);
  std::fprintf(stderr, "rgpu-bench: %s failed: %s (%d)\n", what, name, static_cast<int>(r));
  std::exit(1);
}
#define CHECK(call)                            \
  do {                                         \
    CUresult r_ = (call);                      \
    if (r_ != CUDA_SUCCESS) fail(#call, r_);   \
  } while (0)

void load_driver(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "rgpu-bench: cannot load %s: %s\n", path.c_str(), dlerror());
    std::exit(1);
  }
#define BENCH_LOAD(fn)                                                               \
  cu.fn = reinterpret_cast<decltype(cu.fn)>(dlsym(h, BENCH_STR(fn)));                \
  if (cu.fn == nullptr) {                                                            \
    std::fprintf(stderr, "rgpu-bench: %s lacks %s\n", path.c_str(), BENCH_STR(fn));  \
    std::exit(1);                                                                    \
  }
  BENCH_DRIVER(BENCH_LOAD)
#undef BENCH_LOAD
#define BENCH_LOAD_OPTIONAL(fn) cu.fn = reinterpret_cast<decltype(cu.fn)>(dlsym(h, BENCH_STR(fn)));
  BENCH_DRIVER_OPTIONAL(BENCH_LOAD_OPTIONAL)
#undef BENCH_LOAD_OPTIONAL
}

void init_context() {
  CUdevice dev;
  CUcontext ctx;
  CHECK(cu.cuInit(0));
  CHECK(cu.cuDeviceGet(&dev, 0));
  CHECK(cu.cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cu.cuCtxSetCurrent(ctx));
}

// PTX built next to the program (benchmarks/CMakeLists.txt).
std::string read_ptx(const std::string& name) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = n > 0 ? std::string(self, n) : std::string(".");
  dir = dir.substr(0, dir.rfind('/'));
  std::ifstream in(dir + "/" + name);
  if (!in) {
    std::fprintf(stderr, "rgpu-bench: %s not found next to the program\n", name.c_str());
    std::exit(1);
  }
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A kernel of one of the PTX files; the samples' kernels have C++ names.
CUfunction kernel(const char* file, const char* name) {
  CUmodule module;
  const std::string ptx = read_ptx(file);
  CHECK(cu.cuModuleLoadData(&module, ptx.c_str()));
  CUfunction fn;
  CHECK(cu.cuModuleGetFunction(&fn, module, name));
  return fn;
}

Json header(const char* mode, const rgpu::bench::Args& args) {
  Json j;
  j.add("tool", "rgpu").add("where", where).add("mode", mode).add("ucx_tls", rgpu::bench::ucx_tls());
  j.add("driver", args.get("--driver", "libcuda.so.1"));
  return j;
}

template <class Op>
Json time_op(const char* name, int warmup, int iters, Op op) {
  std::vector<double> us;
  us.reserve(iters);
  for (int i = 0; i < warmup + iters; ++i) {
    const auto t0 = Clock::now();
    op();
    if (i >= warmup) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  Json j;
  j.add("op", name).add("iters", iters);
  rgpu::bench::add_percentiles(j, us);
  return j;
}

int latency(const rgpu::bench::Args& args) {
  const int iters = args.smoke ? 200 : static_cast<int>(args.size("--iters", 20000));
  const int warmup = args.smoke ? 20 : static_cast<int>(args.size("--warmup", 2000));
  init_context();
  CUdeviceptr d;
  CHECK(cu.cuMemAlloc(&d, 4));
  uint32_t host = 0;
  size_t free_bytes = 0, total = 0;
  std::vector<Json> ops;
  ops.push_back(time_op("ctx_synchronize", warmup, iters, [] { CHECK(cu.cuCtxSynchronize()); }));
  ops.push_back(time_op("mem_get_info", warmup, iters, [&] { CHECK(cu.cuMemGetInfo(&free_bytes, &total)); }));
  ops.push_back(time_op("memcpy_dtoh_4b", warmup, iters, [&] { CHECK(cu.cuMemcpyDtoH(&host, d, 4)); }));
  // Generated calls of the driver core: a one-way record, then a quick query.
  CUevent event;
  CHECK(cu.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
  ops.push_back(time_op("event_record_query", warmup, iters, [&] {
    CHECK(cu.cuEventRecord(event, nullptr));
    CUresult r = cu.cuEventQuery(event);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY) CHECK(r);
  }));
  CHECK(cu.cuEventDestroy(event));
  ops.push_back(time_op("stream_query", warmup, iters, [] {
    CUresult r = cu.cuStreamQuery(nullptr);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY) CHECK(r);
  }));
  // An allocation and its free: the server's quota check is on this path.
  ops.push_back(time_op("mem_alloc_free_4k", warmup, iters, [&] {
    CUdeviceptr p;
    CHECK(cu.cuMemAlloc(&p, 4096));
    CHECK(cu.cuMemFree(p));
  }));
  // A synchronize that waits for work: an empty kernel, then its stream's
  // synchronize, which a server answers once the kernel is done.
  CUfunction empty = kernel("rgpu-bench-kernels.ptx", "empty_kernel");
  ops.push_back(time_op("launch_stream_synchronize", warmup, iters, [&] {
    CHECK(cu.cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
    CHECK(cu.cuStreamSynchronize(nullptr));
  }));
  CHECK(cu.cuMemFree(d));
  Json j = header("latency", args);
  j.add_array("ops", ops);
  return args.emit(j);
}

int bandwidth(const rgpu::bench::Args& args) {
  const std::vector<size_t> sizes = args.sizes();
  const int reps = args.smoke ? 2 : static_cast<int>(args.size("--reps", 5));
  size_t biggest = 0;
  for (size_t s : sizes) biggest = std::max(biggest, s);
  init_context();
  CUdeviceptr d;
  CHECK(cu.cuMemAlloc(&d, biggest));
  std::vector<char> pageable(biggest, 1);
  void* pinned = nullptr;
  bool have_pinned = cu.cuMemAllocHost != nullptr && cu.cuMemAllocHost(&pinned, biggest) == CUDA_SUCCESS;
  if (have_pinned) std::memset(pinned, 1, biggest);
  std::vector<Json> points;
  for (size_t size : sizes) {
    for (int p = 0; p < (have_pinned ? 2 : 1); ++p) {
      char* host = p ? static_cast<char*>(pinned) : pageable.data();
      for (const char* dir : {"htod", "dtoh"}) {
        std::vector<double> seconds;
        for (int r = 0; r <= reps; ++r) {
          const auto t0 = Clock::now();
          if (dir[0] == 'h') {
            CHECK(cu.cuMemcpyHtoD(d, host, size));
          } else {
            CHECK(cu.cuMemcpyDtoH(host, d, size));
          }
          if (r > 0) seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        }
        Json pt;
        pt.add("size", size).add("direction", dir).add("memory", p ? "pinned" : "pageable");
        pt.add("mb_per_s", size / rgpu::bench::median(seconds) / 1e6);
        points.push_back(pt);
      }
    }
  }
  if (have_pinned) CHECK(cu.cuMemFreeHost(pinned));
  CHECK(cu.cuMemFree(d));
  Json j = header("bandwidth", args);
  j.add("statistic", "median of " + std::to_string(reps) + " copies after one warm-up");
  j.add("pinned_available", have_pinned);
  j.add_array("points", points);
  return args.emit(j);
}

int launch(const rgpu::bench::Args& args) {
  const int launches = args.smoke ? 500 : static_cast<int>(args.size("--launches", 10000));
  init_context();
  CUfunction fn = kernel("rgpu-bench-kernels.ptx", "empty_kernel");
  for (int i = 0; i < 100; ++i) CHECK(cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
  CHECK(cu.cuCtxSynchronize());
  std::vector<double> enqueue_us(launches);
  const auto t0 = Clock::now();
  for (int i = 0; i < launches; ++i) {
    const auto a = Clock::now();
    CHECK(cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
    enqueue_us[i] = std::chrono::duration<double, std::micro>(Clock::now() - a).count();
  }
  CHECK(cu.cuCtxSynchronize());
  const double total_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::sort(enqueue_us.begin(), enqueue_us.end());
  Json j = header("launch", args);
  j.add("launches", launches).add("total_ms", total_ms);
  j.add("enqueue_p50_us", rgpu::bench::percentile(enqueue_us, 0.5));
  j.add("enqueue_p99_us", rgpu::bench::percentile(enqueue_us, 0.99));
  return args.emit(j);
}

// Exactly --count operations of one kind after the set-up, and nothing
// timed: benchmarks/instructions.sh counts the instructions two runs of
// different counts take and divides their difference by the difference of
// the counts. --op: call (a 4-byte synchronous device-to-host copy: the
// smallest call the server must answer), launch (an empty kernel, one way;
// one synchronize at the end), copy4k, copy1m (synchronous host-to-device
// copies from pageable memory).
int ops(const rgpu::bench::Args& args) {
  const std::string op = args.get("--op", "call");
  const int count = static_cast<int>(args.size("--count", 1000));
  init_context();
  CUfunction empty = kernel("rgpu-bench-kernels.ptx", "empty_kernel");
  CUdeviceptr d;
  CHECK(cu.cuMemAlloc(&d, 1 << 20));
  std::vector<char> host(1 << 20, 1);
  CHECK(cu.cuCtxSynchronize());
  if (op == "call") {
    uint32_t word = 0;
    for (int i = 0; i < count; ++i) CHECK(cu.cuMemcpyDtoH(&word, d, sizeof word));
  } else if (op == "launch") {
    for (int i = 0; i < count; ++i) CHECK(cu.cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
  } else if (op == "copy4k" || op == "copy1m") {
    const size_t size = op == "copy4k" ? 4096 : (1 << 20);
    for (int i = 0; i < count; ++i) CHECK(cu.cuMemcpyHtoD(d, host.data(), size));
  } else {
    std::fprintf(stderr, "rgpu-bench ops: --op call|launch|copy4k|copy1m\n");
    return 2;
  }
  CHECK(cu.cuCtxSynchronize());
  CHECK(cu.cuMemFree(d));
  Json j = header("ops", args);
  j.add("op", op).add("count", count);
  return args.emit(j);
}

// Keeps the device busy for --seconds: kernels of --blocks blocks of 32
// threads, each a long dependent loop, queued on --streams streams so that
// every worker of the CPU device always has one to run. The load beside
// which benchmarks/under_load.sh measures latency.
int busy(const rgpu::bench::Args& args) {
  const double seconds = std::strtod(args.get("--seconds", "10").c_str(), nullptr);
  const int streams = static_cast<int>(args.size("--streams", 4));
  const unsigned blocks = static_cast<unsigned>(args.size("--blocks", 4));
  unsigned long long steps = args.size("--steps", 2000000);
  init_context();
  CUfunction spin = kernel("rgpu-bench-kernels.ptx", "spin_kernel");
  CUdeviceptr out;
  CHECK(cu.cuMemAlloc(&out, 4));
  std::vector<CUstream> s(static_cast<size_t>(streams));
  for (CUstream& st : s) CHECK(cu.cuStreamCreate(&st, 0));
  void* params[] = {&steps, &out};
  uint64_t kernels = 0;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    for (CUstream st : s) {
      CHECK(cu.cuLaunchKernel(spin, blocks, 1, 1, 32, 1, 1, 0, st, params, nullptr));
      ++kernels;
    }
    CHECK(cu.cuStreamSynchronize(s.back()));
  }
  CHECK(cu.cuCtxSynchronize());
  for (CUstream st : s) CHECK(cu.cuStreamDestroy(st));
  CHECK(cu.cuMemFree(out));
  Json j = header("busy", args);
  j.add("seconds", seconds).add("kernels", kernels);
  return args.emit(j);
}

// The tiled matrix multiply sample: upload, multiply, download, check.
double app_matmul(CUfunction fn, int m) {
  const size_t count = static_cast<size_t>(m) * m;
  std::vector<float> a(count), b(count), c(count, -1.0f);
  for (size_t i = 0; i < count; ++i) {
    a[i] = static_cast<float>(static_cast<int>(i * 7 % 5) - 2);
    b[i] = static_cast<float>(static_cast<int>(i * 3 % 7) - 3);
  }
  const auto t0 = Clock::now();
  CUdeviceptr da, db, dc;
  CHECK(cu.cuMemAlloc(&da, count * 4));
  CHECK(cu.cuMemAlloc(&db, count * 4));
  CHECK(cu.cuMemAlloc(&dc, count * 4));
  CHECK(cu.cuMemcpyHtoD(da, a.data(), count * 4));
  CHECK(cu.cuMemcpyHtoD(db, b.data(), count * 4));
  int n = m;
  void* params[] = {&da, &db, &dc, &n, &n, &n};
  const unsigned grid = static_cast<unsigned>((m + 15) / 16);
  CHECK(cu.cuLaunchKernel(fn, grid, grid, 1, 16, 16, 1, 0, nullptr, params, nullptr));
  CHECK(cu.cuMemcpyDtoH(c.data(), dc, count * 4));
  CHECK(cu.cuMemFree(da));
  CHECK(cu.cuMemFree(db));
  CHECK(cu.cuMemFree(dc));
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  for (int r = 0; r < m; r += 7) {  // spot-check rows against the host
    for (int col = 0; col < m; col += 5) {
      float s = 0;
      for (int i = 0; i < m; ++i) s += a[static_cast<size_t>(r) * m + i] * b[static_cast<size_t>(i) * m + col];
      if (std::fabs(s - c[static_cast<size_t>(r) * m + col]) > 1e-3f) {
        std::fprintf(stderr, "rgpu-bench: matmul result wrong at (%d, %d)\n", r, col);
        std::exit(1);
      }
    }
  }
  return ms;
}

// The streams sample: chunks copied in, worked on and copied out on several
// streams at once.
double app_streams(CUfunction fn, int n, int streams) {
  std::vector<float> in(n), out(n, 0.0f);
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i % 100);
  const auto t0 = Clock::now();
  CUdeviceptr din, dout;
  CHECK(cu.cuMemAlloc(&din, n * 4));
  CHECK(cu.cuMemAlloc(&dout, n * 4));
  std::vector<CUstream> s(streams);
  for (auto& st : s) CHECK(cu.cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  const int chunk = n / streams;
  for (int k = 0; k < streams; ++k) {
    const size_t off = static_cast<size_t>(k) * chunk;
    CUdeviceptr pin = din + off * 4, pout = dout + off * 4;
    int len = chunk;
    void* params[] = {&pin, &pout, &len};
    CHECK(cu.cuMemcpyHtoDAsync(pin, in.data() + off, chunk * 4, s[k]));
    CHECK(cu.cuLaunchKernel(fn, static_cast<unsigned>((chunk + 255) / 256), 1, 1, 256, 1, 1, 0, s[k], params, nullptr));
    CHECK(cu.cuMemcpyDtoHAsync(out.data() + off, pout, chunk * 4, s[k]));
  }
  for (auto& st : s) CHECK(cu.cuStreamSynchronize(st));
  for (auto& st : s) CHECK(cu.cuStreamDestroy(st));
  CHECK(cu.cuMemFree(din));
  CHECK(cu.cuMemFree(dout));
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  for (int i = 0; i < chunk * streams; i += 97) {
    float v = in[i];
    for (int k = 0; k < 8; ++k) v = v * 0.5f + 1.0f;
    if (std::fabs(v - out[i]) > 1e-4f) {
      std::fprintf(stderr, "rgpu-bench: streams result wrong at %d\n", i);
      std::exit(1);
    }
  }
  return ms;
}

int app(const rgpu::bench::Args& args) {
  const int reps = args.smoke ? 1 : static_cast<int>(args.size("--reps", 3));
  const int m = args.smoke ? 64 : static_cast<int>(args.size("--matmul-size", 256));
  const int n = args.smoke ? (1 << 16) : static_cast<int>(args.size("--streams-elements", 1 << 22));
  init_context();
  // The samples' kernels: matmul_tiled(const float*, const float*, float*, int, int, int)
  // and work(const float*, float*, int).
  const CUfunction matmul = kernel("rgpu-bench-matmul.ptx", "_Z12matmul_tiledPKfS0_Pfiii");
  const CUfunction work = kernel("rgpu-bench-streams.ptx", "_Z4workPKfPfi");
  app_matmul(matmul, 16);  // warm-up: first allocations and launches
  std::vector<double> matmul_ms, streams_ms;
  for (int r = 0; r < reps; ++r) {
    matmul_ms.push_back(app_matmul(matmul, m));
    streams_ms.push_back(app_streams(work, n, 4));
  }
  Json j = header("app", args);
  j.add("statistic", "median of " + std::to_string(reps) + " runs");
  j.add("matmul_size", m).add("matmul_ms", rgpu::bench::median(matmul_ms));
  j.add("streams_elements", n).add("streams_ms", rgpu::bench::median(streams_ms));
  return args.emit(j);
}

}  // namespace

int main(int argc, char** argv) {
  rgpu::bench::Args args(argc, argv);
  // Under `rgpu run` the client library is preloaded and RGPU_SERVER is set.
  if (std::getenv("RGPU_SERVER") != nullptr && args.get("--driver").empty()) where = "remote";
  load_driver(args.get("--driver", "libcuda.so.1"));
  if (args.mode == "latency") return latency(args);
  if (args.mode == "bandwidth") return bandwidth(args);
  if (args.mode == "launch") return launch(args);
  if (args.mode == "app") return app(args);
  if (args.mode == "ops") return ops(args);
  if (args.mode == "busy") return busy(args);
  std::fprintf(stderr,
               "usage: rgpu-bench latency|bandwidth|launch|app|ops|busy [--driver PATH] [--json FILE] [--smoke]\n"
               "                  [--iters N] [--sizes A,B,...] [--reps N] [--launches N]\n");
  return 2;
}
