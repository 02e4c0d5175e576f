// The load client: a CUDA driver API program, run under `rgpu run`, that keeps
// a server busy for a while with a random but reproducible mix of calls and
// checks every byte it reads back. It prints one JSON line on stdout at exit
// and exits 1 if any result was wrong or any call failed that should not have.
//
//   load_client [--seconds S] [--seed K] [--threads T] [--max-bytes B]
//               [--max-kernel-elems N] [--ctx-percent P] [--ptx FILE]
//               [--waits stream-sync,event-sync,event-query,ctx-sync] [--inject-wrong]
//
// Each thread works in episodes. An episode runs either on the null stream
// with synchronous calls, or on one or two created streams with asynchronous
// ones, and always ends with every queued call complete (a context, stream or
// event synchronize, or an event polled), after which the device-to-host
// copies it queued are compared with what the thread wrote. Because every
// episode ends idle, frees and stream destruction happen only between
// episodes and the expected contents of every buffer are known exactly. Now
// and then a thread creates a context of its own, runs a few episodes in it
// and destroys it, which is what other sessions' streams must survive.
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  double seconds = 8;
  uint64_t seed = 1;
  int threads = 3;
  size_t max_bytes = 4u << 20;
  unsigned max_kernel_elems = 16384;  // the CPU device interprets PTX: keep launches small
  unsigned ctx_percent = 3;           // episodes that start with a context of their own
  std::string ptx = RGPU_LOAD_PTX;
  bool inject_wrong = false;  // corrupt one expectation, to prove the checks can fail
  unsigned waits = 0xf;       // bit i: kWaits[i] may end an asynchronous episode
};

// The ways an asynchronous episode waits for its streams (--waits).
constexpr const char* kWaits[] = {"stream-sync", "event-sync", "event-query", "ctx-sync"};

constexpr size_t kMaxBuffers = 8;
constexpr size_t kArenaBytes = 8u << 20;  // page-locked staging per thread and context
constexpr int kMaxNotes = 8;

// Counters shared by all threads; the first few problems are kept as text.
struct Totals {
  std::atomic<uint64_t> calls{0}, wrong{0}, errors{0}, wrong_bytes{0}, verified_bytes{0};
  std::atomic<uint64_t> episodes{0}, contexts{0}, kernels{0};
  std::mutex mu;
  std::vector<std::string> notes;

  void note(const std::string& text) {
    std::lock_guard<std::mutex> lock(mu);
    if (notes.size() < kMaxNotes) {
      notes.push_back(text);
      std::fprintf(stderr, "load_client: %s\n", text.c_str());
    }
  }
};

const char* err_name(CUresult r) {
  const char* n = nullptr;
  if (cuGetErrorName(r, &n) != CUDA_SUCCESS || !n) return "?";
  return n;
}

// A device buffer and the bytes it must hold once its queued work completes.
struct Buffer {
  CUdeviceptr ptr = 0;
  std::vector<uint8_t> expect;
  size_t size() const { return expect.size(); }
};

// A device-to-host copy queued in an episode, checked once the episode is idle.
struct PendingRead {
  const uint8_t* host;
  std::vector<uint8_t> expect;
  size_t buffer_size;
  size_t offset;
  const char* how;  // the copy and the wait that preceded the check, for the report
};

// What a thread holds in one context: its module, buffers, streams and
// page-locked arena. Owned by one thread; released by Worker::release.
struct Scope {
  CUcontext ctx = nullptr;
  bool owned = false;  // created by this thread (destroyed at release)
  CUmodule module = nullptr;
  CUfunction fn = nullptr;
  std::vector<Buffer> buffers;
  std::vector<CUstream> streams;
  uint8_t* arena = nullptr;
  size_t arena_used = 0;
};

// One thread's loop. Not shared: each thread owns its Worker.
class Worker {
 public:
  Worker(int index, const Options& opt, Totals& totals, CUcontext primary, const std::string& ptx)
      : index_(index), opt_(opt), totals_(totals), primary_(primary), ptx_(ptx),
        rng_(opt.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(index) + 1) {}

  void run(Clock::time_point deadline) {
    Scope main;
    main.ctx = primary_;
    if (!ok(cuCtxSetCurrent(primary_), "cuCtxSetCurrent")) return;
    if (!open(main)) {
      release(main);
      return;
    }
    while (Clock::now() < deadline && totals_.errors.load() < 1000) {
      if (percent(opt_.ctx_percent)) {
        own_context(deadline);
        ok(cuCtxSetCurrent(primary_), "cuCtxSetCurrent(primary)");
      }
      episode(main);
      if (broken_) recover(main);
    }
    release(main);
  }

 private:
  // Counts one call; a failure counts as an error and marks the scope broken.
  bool ok(CUresult r, const char* what) {
    totals_.calls.fetch_add(1, std::memory_order_relaxed);
    if (r == CUDA_SUCCESS) return true;
    totals_.errors.fetch_add(1);
    broken_ = true;
    totals_.note("error thread=" + std::to_string(index_) + " call=" + what + " result=" + err_name(r));
    return false;
  }

  uint64_t uniform(uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_); }
  bool percent(unsigned p) { return uniform(0, 99) < p; }

  // Sizes from 1 byte to max_bytes, spread evenly over their logarithm.
  size_t random_size() {
    double l = std::uniform_real_distribution<double>(0, std::log(static_cast<double>(opt_.max_bytes)))(rng_);
    return std::clamp<size_t>(static_cast<size_t>(std::exp(l)), 1, opt_.max_bytes);
  }

  void fill_random(uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; i += 8) {
      uint64_t v = rng_();
      std::memcpy(p + i, &v, std::min<size_t>(8, n - i));
    }
  }

  bool open(Scope& s) {
    if (!ok(cuModuleLoadData(&s.module, ptx_.c_str()), "cuModuleLoadData")) return false;
    if (!ok(cuModuleGetFunction(&s.fn, s.module, "load_axpi"), "cuModuleGetFunction")) return false;
    void* p = nullptr;
    // Both ways of getting page-locked memory, one per kind of scope.
    CUresult r = s.owned ? cuMemHostAlloc(&p, kArenaBytes, 0) : cuMemAllocHost(&p, kArenaBytes);
    if (!ok(r, s.owned ? "cuMemHostAlloc" : "cuMemAllocHost")) return false;
    s.arena = static_cast<uint8_t*>(p);
    return true;
  }

  void release(Scope& s) {
    if (s.ctx != nullptr) ok(cuCtxSynchronize(), "cuCtxSynchronize(release)");
    for (auto& b : s.buffers) ok(cuMemFree(b.ptr), "cuMemFree");
    for (auto st : s.streams) ok(cuStreamDestroy(st), "cuStreamDestroy");
    if (s.arena) ok(cuMemFreeHost(s.arena), "cuMemFreeHost");
    if (s.module) ok(cuModuleUnload(s.module), "cuModuleUnload");
    s.buffers.clear();
    s.streams.clear();
    s.arena = nullptr;
    s.module = nullptr;
  }

  // After a failed call the expected contents are no longer known: drop
  // everything the scope holds (failures here are not counted again) and
  // start afresh.
  void recover(Scope& s) {
    cuCtxSynchronize();
    for (auto& b : s.buffers) cuMemFree(b.ptr);
    for (auto st : s.streams) cuStreamDestroy(st);
    s.buffers.clear();
    s.streams.clear();
    broken_ = false;
  }

  // A context of this thread's own: created, used for a few episodes, destroyed.
  void own_context(Clock::time_point deadline) {
    totals_.contexts.fetch_add(1, std::memory_order_relaxed);
    Scope s;
    s.owned = true;
    CUdevice dev;
    if (!ok(cuDeviceGet(&dev, 0), "cuDeviceGet") || !ok(cuCtxCreate(&s.ctx, nullptr, 0, dev), "cuCtxCreate")) {
      broken_ = false;
      return;
    }
    if (open(s)) {
      for (uint64_t n = uniform(1, 3); n > 0 && !broken_ && Clock::now() < deadline; --n) episode(s);
    }
    broken_ = false;
    release(s);
    ok(cuCtxDestroy(s.ctx), "cuCtxDestroy");
    broken_ = false;
  }

  // Page-locked staging from the scope's arena, or null when it is used up.
  uint8_t* pinned(Scope& s, size_t n) {
    if (!s.arena || s.arena_used + n > kArenaBytes) return nullptr;
    uint8_t* p = s.arena + s.arena_used;
    s.arena_used += (n + 63) & ~size_t{63};
    return p;
  }

  void episode(Scope& s) {
    totals_.episodes.fetch_add(1, std::memory_order_relaxed);
    s.arena_used = 0;
    // Between episodes everything is idle: free and destroy freely.
    while (!s.buffers.empty() && percent(15)) {
      size_t i = uniform(0, s.buffers.size() - 1);
      ok(cuMemFree(s.buffers[i].ptr), "cuMemFree");
      s.buffers.erase(s.buffers.begin() + static_cast<long>(i));
    }
    if (!s.streams.empty() && percent(20)) {
      size_t i = uniform(0, s.streams.size() - 1);
      ok(cuStreamDestroy(s.streams[i]), "cuStreamDestroy");
      s.streams.erase(s.streams.begin() + static_cast<long>(i));
    }
    while (s.streams.size() < 2 || (s.streams.size() < 4 && percent(10))) {
      CUstream st;
      if (!ok(cuStreamCreate(&st, percent(50) ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT), "cuStreamCreate")) {
        return;
      }
      s.streams.push_back(st);
    }
    const bool sync = percent(35);
    // Buffer i belongs to lanes[i % lanes.size()] for the whole episode, so
    // its calls are ordered by that stream alone.
    std::vector<CUstream> lanes;
    if (sync) {
      lanes.push_back(nullptr);
    } else {
      lanes.push_back(s.streams[uniform(0, s.streams.size() - 1)]);
      if (percent(50)) {
        CUstream other = s.streams[uniform(0, s.streams.size() - 1)];
        if (other != lanes[0]) lanes.push_back(other);
      }
    }
    if (s.buffers.empty()) alloc(s, sync ? nullptr : &lanes);
    if (broken_) return;
    std::vector<std::vector<uint8_t>> keep;  // pageable sources and targets alive until idle
    std::vector<PendingRead> reads;
    for (uint64_t n = uniform(1, 12); n > 0 && !broken_; --n) {
      size_t bi = uniform(0, s.buffers.size() - 1);
      CUstream st = lanes[bi % lanes.size()];
      switch (uniform(0, 6)) {
        case 0: alloc(s, sync ? nullptr : &lanes); break;
        case 1: write(s, bi, st, keep); break;
        case 2: kernel(s, bi, lanes); break;
        case 3: read(s, bi, st, keep, reads); break;
        case 4: memset32(s, bi, st); break;
        case 5: memset8(s, bi, st); break;
        default: write(s, bi, st, keep); read(s, bi, st, keep, reads); break;
      }
    }
    if (!broken_) finish(sync, lanes);
    if (broken_) return;
    for (auto& r : reads) check(r, waited_by_);
  }

  // Waits until the episode's calls are complete, by one of four means.
  void finish(bool sync, const std::vector<CUstream>& lanes) {
    if (sync) {
      ok(cuCtxSynchronize(), "cuCtxSynchronize");
      waited_by_ = "ctx-sync";
      return;
    }
    waited_by_ = "";
    for (CUstream st : lanes) {
      uint64_t how = uniform(0, 3);
      while ((opt_.waits >> how & 1) == 0) how = (how + 1) % 4;
      waited_by_ = waited_by_[0] == '\0' ? kWaits[how] : "mixed";
      if (how == 0) {
        ok(cuStreamSynchronize(st), "cuStreamSynchronize");
        continue;
      }
      if (how == 3) {
        ok(cuCtxSynchronize(), "cuCtxSynchronize");
        continue;
      }
      CUevent ev;
      if (!ok(cuEventCreate(&ev, percent(50) ? CU_EVENT_DISABLE_TIMING : CU_EVENT_DEFAULT), "cuEventCreate")) return;
      if (ok(cuEventRecord(ev, st), "cuEventRecord")) {
        if (how == 1) {
          ok(cuEventSynchronize(ev), "cuEventSynchronize");
        } else {
          poll_event(ev);
        }
      }
      ok(cuEventDestroy(ev), "cuEventDestroy");
    }
  }

  // Polls cuEventQuery until the event completes (bounded): not-ready is the
  // expected answer meanwhile, anything else is an error.
  void poll_event(CUevent ev) {
    const auto limit = Clock::now() + std::chrono::seconds(60);
    for (;;) {
      CUresult r = cuEventQuery(ev);
      if (r == CUDA_ERROR_NOT_READY) {
        totals_.calls.fetch_add(1, std::memory_order_relaxed);
        if (Clock::now() > limit) {
          ok(CUDA_ERROR_LAUNCH_TIMEOUT, "cuEventQuery(never completed)");
          return;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        continue;
      }
      ok(r, "cuEventQuery");
      return;
    }
  }

  void alloc(Scope& s, const std::vector<CUstream>* lanes) {
    if (s.buffers.size() >= kMaxBuffers) return;
    Buffer b;
    size_t n = random_size();
    if (!ok(cuMemAlloc(&b.ptr, n), "cuMemAlloc")) return;
    // A new buffer's contents are undefined: give it known ones at once, on
    // the stream that owns its index (where its later calls will be queued).
    uint8_t v = static_cast<uint8_t>(rng_());
    b.expect.assign(n, v);
    size_t index = s.buffers.size();
    s.buffers.push_back(std::move(b));
    Buffer& nb = s.buffers.back();
    if (lanes == nullptr) {
      ok(cuMemsetD8(nb.ptr, v, n), "cuMemsetD8(alloc)");
    } else {
      ok(cuMemsetD8Async(nb.ptr, v, n, (*lanes)[index % lanes->size()]), "cuMemsetD8Async(alloc)");
    }
  }

  // A random range [offset, offset + len) of a buffer of n bytes, len >= 1.
  std::pair<size_t, size_t> range(size_t n) {
    if (percent(40)) return {0, n};
    size_t off = uniform(0, n - 1);
    return {off, uniform(1, n - off)};
  }

  void write(Scope& s, size_t bi, CUstream st, std::vector<std::vector<uint8_t>>& keep) {
    Buffer& b = s.buffers[bi];
    auto [off, len] = range(b.size());
    uint8_t* src = nullptr;
    if (st != nullptr && percent(50)) src = pinned(s, len);
    if (src == nullptr) {
      keep.emplace_back(len);
      src = keep.back().data();
    }
    fill_random(src, len);
    std::memcpy(b.expect.data() + off, src, len);
    if (st == nullptr) {
      ok(cuMemcpyHtoD(b.ptr + off, src, len), "cuMemcpyHtoD");
    } else {
      ok(cuMemcpyHtoDAsync(b.ptr + off, src, len, st), "cuMemcpyHtoDAsync");
    }
  }

  void read(Scope& s, size_t bi, CUstream st, std::vector<std::vector<uint8_t>>& keep,
            std::vector<PendingRead>& reads) {
    Buffer& b = s.buffers[bi];
    auto [off, len] = range(b.size());
    uint8_t* dst = nullptr;
    if (st != nullptr && percent(60)) dst = pinned(s, len);
    if (dst == nullptr) {
      keep.emplace_back(len);
      dst = keep.back().data();
    }
    // Poison the target so that a copy that never lands cannot pass.
    std::memset(dst, static_cast<uint8_t>(~b.expect[off]), len);
    const bool locked = dst >= s.arena && dst < s.arena + kArenaBytes;
    PendingRead r{dst, std::vector<uint8_t>(b.expect.begin() + off, b.expect.begin() + off + len), b.size(), off,
                  st == nullptr ? "sync" : locked ? "async-pinned" : "async-pageable"};
    if (opt_.inject_wrong && !injected_) {
      r.expect[0] ^= 0x5a;
      injected_ = true;
    }
    if (st == nullptr) {
      if (ok(cuMemcpyDtoH(dst, b.ptr + off, len), "cuMemcpyDtoH")) check(r);
    } else if (ok(cuMemcpyDtoHAsync(dst, b.ptr + off, len, st), "cuMemcpyDtoHAsync")) {
      reads.push_back(std::move(r));
    }
  }

  void check(const PendingRead& r, const char* wait = "none") {
    const size_t n = r.expect.size();
    totals_.verified_bytes.fetch_add(n, std::memory_order_relaxed);
    if (std::memcmp(r.host, r.expect.data(), n) == 0) return;
    size_t bad = 0, first = n;
    for (size_t i = 0; i < n; ++i) {
      if (r.host[i] != r.expect[i]) {
        ++bad;
        first = std::min(first, i);
      }
    }
    totals_.wrong.fetch_add(1);
    totals_.wrong_bytes.fetch_add(bad);
    char text[256];
    std::snprintf(text, sizeof text,
                  "wrong thread=%d copy=%s wait=%s buffer_bytes=%zu read_offset=%zu read_bytes=%zu bad_bytes=%zu "
                  "first_bad=%zu expected=0x%02x got=0x%02x",
                  index_, r.how, wait, r.buffer_size, r.offset, n, bad, first, r.expect[first], r.host[first]);
    totals_.note(text);
  }

  void kernel(Scope& s, size_t bi, const std::vector<CUstream>& lanes) {
    Buffer& x = s.buffers[bi];
    if (x.size() < 4) return;
    unsigned n = static_cast<unsigned>(std::min<size_t>(x.size() / 4, uniform(1, opt_.max_kernel_elems)));
    // The output: another buffer on the same lane when one is big enough.
    size_t yi = bi;
    size_t cand = uniform(0, s.buffers.size() - 1);
    if (cand % lanes.size() == bi % lanes.size() && s.buffers[cand].size() >= size_t{n} * 4) yi = cand;
    Buffer& y = s.buffers[yi];
    unsigned a = static_cast<unsigned>(rng_()) | 1u;
    CUdeviceptr xp = x.ptr, yp = y.ptr;
    void* params[] = {&xp, &yp, &a, &n};
    CUstream st = lanes[bi % lanes.size()];
    if (!ok(cuLaunchKernel(s.fn, (n + 127) / 128, 1, 1, 128, 1, 1, 0, st, params, nullptr), "cuLaunchKernel")) return;
    totals_.kernels.fetch_add(1, std::memory_order_relaxed);
    for (unsigned i = 0; i < n; ++i) {
      uint32_t v;
      std::memcpy(&v, x.expect.data() + size_t{i} * 4, 4);
      v = v * a + i;
      std::memcpy(y.expect.data() + size_t{i} * 4, &v, 4);
    }
  }

  void memset32(Scope& s, size_t bi, CUstream st) {
    Buffer& b = s.buffers[bi];
    if (b.size() < 4) return;
    auto [first, count] = range(b.size() / 4);
    uint32_t v = static_cast<uint32_t>(rng_());
    for (size_t i = first; i < first + count; ++i) std::memcpy(b.expect.data() + i * 4, &v, 4);
    CUdeviceptr p = b.ptr + first * 4;
    if (st == nullptr) {
      ok(cuMemsetD32(p, v, count), "cuMemsetD32");
    } else {
      ok(cuMemsetD32Async(p, v, count, st), "cuMemsetD32Async");
    }
  }

  void memset8(Scope& s, size_t bi, CUstream st) {
    Buffer& b = s.buffers[bi];
    auto [off, len] = range(b.size());
    uint8_t v = static_cast<uint8_t>(rng_());
    std::memset(b.expect.data() + off, v, len);
    if (st == nullptr) {
      ok(cuMemsetD8(b.ptr + off, v, len), "cuMemsetD8");
    } else {
      ok(cuMemsetD8Async(b.ptr + off, v, len, st), "cuMemsetD8Async");
    }
  }

  const int index_;
  const Options& opt_;
  Totals& totals_;
  const CUcontext primary_;
  const std::string& ptx_;
  std::mt19937_64 rng_;
  const char* waited_by_ = "none";
  bool broken_ = false;
  bool injected_ = false;
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](const char** out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    const char* v = nullptr;
    if (a == "--inject-wrong") {
      o->inject_wrong = true;
    } else if (!next(&v)) {
      return false;
    } else if (a == "--seconds") {
      o->seconds = std::atof(v);
    } else if (a == "--seed") {
      o->seed = std::strtoull(v, nullptr, 10);
    } else if (a == "--threads") {
      o->threads = std::atoi(v);
    } else if (a == "--max-bytes") {
      o->max_bytes = std::strtoull(v, nullptr, 10);
    } else if (a == "--max-kernel-elems") {
      o->max_kernel_elems = static_cast<unsigned>(std::strtoul(v, nullptr, 10));
    } else if (a == "--ctx-percent") {
      o->ctx_percent = static_cast<unsigned>(std::strtoul(v, nullptr, 10));
    } else if (a == "--ptx") {
      o->ptx = v;
    } else if (a == "--waits") {
      o->waits = 0;
      std::stringstream list(v);
      for (std::string w; std::getline(list, w, ',');) {
        auto at = std::find_if(std::begin(kWaits), std::end(kWaits), [&](const char* k) { return w == k; });
        if (at == std::end(kWaits)) return false;
        o->waits |= 1u << (at - std::begin(kWaits));
      }
    } else {
      return false;
    }
  }
  return o->seconds > 0 && o->threads > 0 && o->threads <= 64 && o->max_bytes >= 1 &&
         o->max_bytes <= kArenaBytes && o->max_kernel_elems >= 1 && o->ctx_percent <= 100 && o->waits != 0;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse(argc, argv, &opt)) {
    std::fprintf(stderr,
                 "usage: load_client [--seconds S] [--seed K] [--threads T] [--max-bytes B]\n"
                 "                   [--max-kernel-elems N] [--ctx-percent P] [--ptx FILE]\n"
                 "                   [--waits stream-sync,event-sync,event-query,ctx-sync] [--inject-wrong]\n");
    return 2;
  }
  std::ifstream f(opt.ptx);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string ptx = ss.str();
  if (ptx.empty()) {
    std::fprintf(stderr, "load_client: cannot read %s\n", opt.ptx.c_str());
    return 2;
  }

  Totals totals;
  CUcontext primary = nullptr;
  CUdevice dev = 0;
  CUresult r = cuInit(0);
  if (r == CUDA_SUCCESS) r = cuDeviceGet(&dev, 0);
  if (r == CUDA_SUCCESS) r = cuDevicePrimaryCtxRetain(&primary, dev);
  totals.calls += 3;
  if (r != CUDA_SUCCESS) {
    totals.errors += 1;
    totals.note(std::string("error setup result=") + err_name(r));
  } else {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(opt.seconds));
    std::vector<std::thread> threads;
    for (int i = 0; i < opt.threads; ++i) {
      threads.emplace_back([&, i] { Worker(i, opt, totals, primary, ptx).run(deadline); });
    }
    for (auto& t : threads) t.join();
    totals.calls += 1;
    if ((r = cuDevicePrimaryCtxRelease(dev)) != CUDA_SUCCESS) {
      totals.errors += 1;
      totals.note(std::string("error call=cuDevicePrimaryCtxRelease result=") + err_name(r));
    }
  }

  std::string first = totals.notes.empty() ? "" : totals.notes.front();
  std::printf(
      "{\"seed\":%llu,\"seconds\":%g,\"threads\":%d,\"calls\":%llu,\"wrong\":%llu,\"errors\":%llu,"
      "\"wrong_bytes\":%llu,\"verified_bytes\":%llu,\"episodes\":%llu,\"contexts\":%llu,\"kernels\":%llu,"
      "\"first_problem\":\"%s\"}\n",
      static_cast<unsigned long long>(opt.seed), opt.seconds, opt.threads,
      static_cast<unsigned long long>(totals.calls.load()), static_cast<unsigned long long>(totals.wrong.load()),
      static_cast<unsigned long long>(totals.errors.load()),
      static_cast<unsigned long long>(totals.wrong_bytes.load()),
      static_cast<unsigned long long>(totals.verified_bytes.load()),
      static_cast<unsigned long long>(totals.episodes.load()),
      static_cast<unsigned long long>(totals.contexts.load()), static_cast<unsigned long long>(totals.kernels.load()),
      json_escape(first).c_str());
  std::fflush(stdout);
  return totals.wrong.load() == 0 && totals.errors.load() == 0 ? 0 : 1;
}
