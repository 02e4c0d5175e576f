// A client for the slice tests (slices_e2e_test.cpp), run with rgpu's client
// library preloaded. Modes:
//   quota  for each device it sees: name, total, cuMemGetInfo, an
//          allocation of exactly the total and one byte more, through the
//          driver and the runtime API; prints "device=D total=T uuid=U" per
//          device, then "ready count=N", and holds its session until stdin
//          closes. A failed check prints "FAIL ..." and exits 1; a failed
//          cuInit prints "init=NAME" and exits 3.
//   spin   launches a busy kernel over and over (three in flight) and prints
//          "launches=COUNT" after each one completes, until stdin closes.
//   fill PATH
//          takes all the memory its slice allows on device 0 by one path
//          (alloc: cuMemAlloc; globals: modules whose .global arrays take
//          device memory; vmm: cuMemCreate chunks, never mapped), then
//          tries each path once more past the quota; prints "held=BYTES"
//          and "ready", and holds it all until stdin closes. Anything past
//          the quota that is not refused prints "FAIL ..." and exits 1.
#include <cuda.h>
#include <dlfcn.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <deque>
#include <string>

namespace {

const char* err_name(CUresult r) {
  const char* n = nullptr;
  if (cuGetErrorName(r, &n) != CUDA_SUCCESS || !n) return "?";
  return n;
}

int fail(const std::string& what) {
  std::printf("FAIL %s\n", what.c_str());
  return 1;
}

#define CHECK_CU(call)                                                          \
  do {                                                                          \
    CUresult r_ = (call);                                                       \
    if (r_ != CUDA_SUCCESS) return fail(std::string(#call) + ": " + err_name(r_)); \
  } while (0)

// Whether stdin has closed (or has anything: the test closes it to stop us).
bool stdin_closed() {
  pollfd p{0, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

void hold_until_stdin_closes() {
  char c;
  while (read(0, &c, 1) > 0) {
  }
}

// The runtime API, from the client library's libcudart (LD_LIBRARY_PATH).
struct Runtime {
  int (*set_device)(int) = nullptr;
  int (*malloc)(void**, size_t) = nullptr;
  int (*free)(void*) = nullptr;
  bool load() {
    void* lib = dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL);
    if (lib == nullptr) lib = dlopen("libcudart.so.12", RTLD_NOW | RTLD_GLOBAL);
    if (lib == nullptr) return false;
    set_device = reinterpret_cast<int (*)(int)>(dlsym(lib, "cudaSetDevice"));
    malloc = reinterpret_cast<int (*)(void**, size_t)>(dlsym(lib, "cudaMalloc"));
    free = reinterpret_cast<int (*)(void*)>(dlsym(lib, "cudaFree"));
    return set_device && malloc && free;
  }
};
constexpr int kCudaErrorMemoryAllocation = 2;

// Each thread of 64 blocks of 64 counts to n: a launch of a few tens of
// milliseconds on the CPU device, all of it in the kernel.
const char kBusyPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry busy(.param .u64 out, .param .u32 n) {
  .reg .u32 %r<6>;
  .reg .u64 %rd<4>;
  .reg .pred %p;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, 0;
  mov.u32 %r3, %tid.x;
LOOP:
  add.u32 %r2, %r2, 1;
  xor.b32 %r3, %r3, %r2;
  setp.lt.u32 %p, %r2, %r1;
  @%p bra LOOP;
  mov.u32 %r4, %ctaid.x;
  mul.wide.u32 %rd2, %r4, 4;
  add.u64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r3;
  ret;
}
)";

int quota() {
  int count = 0;
  CHECK_CU(cuDeviceGetCount(&count));
  if (count < 1) return fail("no devices");
  Runtime rt;
  if (!rt.load()) return fail(std::string("no runtime library: ") + dlerror());
  for (int d = 0; d < count; ++d) {
    CUdevice dev;
    CHECK_CU(cuDeviceGet(&dev, d));
    size_t total = 0;
    CHECK_CU(cuDeviceTotalMem(&total, dev));
    CUuuid uuid;
    CHECK_CU(cuDeviceGetUuid(&uuid, dev));
    char uuid_hex[33] = {};
    for (int i = 0; i < 16; ++i) std::snprintf(uuid_hex + 2 * i, 3, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    CUcontext ctx;
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));
    size_t free_b = 0, total_b = 0;
    CHECK_CU(cuMemGetInfo(&free_b, &total_b));
    if (total_b != total || free_b != total) {
      return fail("device " + std::to_string(d) + ": cuMemGetInfo free=" + std::to_string(free_b) +
                  " total=" + std::to_string(total_b) + ", cuDeviceTotalMem " + std::to_string(total));
    }
    // Exactly the quota, then one byte past it.
    CUdeviceptr all = 0, one = 0;
    CHECK_CU(cuMemAlloc(&all, total));
    CUresult r = cuMemAlloc(&one, 1);
    if (r != CUDA_ERROR_OUT_OF_MEMORY) return fail(std::string("one byte past the quota: ") + err_name(r));
    CHECK_CU(cuMemGetInfo(&free_b, &total_b));
    if (free_b != 0) return fail("free after the whole quota: " + std::to_string(free_b));
    CHECK_CU(cuMemFree(all));
    // The same through the runtime API.
    if (rt.set_device(d) != 0) return fail("cudaSetDevice");
    void* p = nullptr;
    void* q = nullptr;
    if (int e = rt.malloc(&p, total); e != 0) return fail("cudaMalloc of the quota: " + std::to_string(e));
    if (int e = rt.malloc(&q, 1); e != kCudaErrorMemoryAllocation) {
      return fail("cudaMalloc one byte past the quota: " + std::to_string(e));
    }
    if (rt.free(p) != 0) return fail("cudaFree");
    // A module's image counts too: what is left after loading one can be
    // allocated, to the byte, and not one byte more.
    CUmodule module;
    CHECK_CU(cuModuleLoadData(&module, kBusyPtx));
    CHECK_CU(cuMemGetInfo(&free_b, &total_b));
    if (free_b >= total) return fail("the module image was not counted: free=" + std::to_string(free_b));
    CHECK_CU(cuMemAlloc(&all, free_b));
    r = cuMemAlloc(&one, 1);
    if (r != CUDA_ERROR_OUT_OF_MEMORY) return fail(std::string("one byte past image and allocation: ") + err_name(r));
    CHECK_CU(cuModuleUnload(module));
    CHECK_CU(cuMemFree(all));
    CHECK_CU(cuMemGetInfo(&free_b, &total_b));
    if (free_b != total) return fail("free after unloading and freeing: " + std::to_string(free_b));
    std::printf("device=%d total=%zu uuid=%s\n", d, total, uuid_hex);
  }
  std::printf("ready count=%d\n", count);
  hold_until_stdin_closes();
  return 0;
}

int spin(unsigned iterations) {
  CUcontext ctx;
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
  CHECK_CU(cuCtxSetCurrent(ctx));
  CUmodule module;
  CUfunction busy;
  CHECK_CU(cuModuleLoadData(&module, kBusyPtx));
  CHECK_CU(cuModuleGetFunction(&busy, module, "busy"));
  constexpr unsigned kBlocks = 64;
  CUdeviceptr out;
  CHECK_CU(cuMemAlloc(&out, kBlocks * 4));
  void* params[] = {&out, &iterations};
  std::deque<CUevent> in_flight;
  unsigned long long done = 0;
  while (!stdin_closed()) {
    while (in_flight.size() < 3) {
      CHECK_CU(cuLaunchKernel(busy, kBlocks, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr));
      CUevent e;
      CHECK_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
      CHECK_CU(cuEventRecord(e, nullptr));
      in_flight.push_back(e);
    }
    CHECK_CU(cuEventSynchronize(in_flight.front()));
    CHECK_CU(cuEventDestroy(in_flight.front()));
    in_flight.pop_front();
    std::printf("launches=%llu\n", ++done);
  }
  CHECK_CU(cuCtxSynchronize());
  return 0;
}

// PTX whose .global array takes `bytes` of device memory when it loads.
std::string globals_ptx(size_t bytes) {
  return ".version 7.0\n.target sm_75\n.address_size 64\n.visible .global .align 8 .b8 big[" +
         std::to_string(bytes) + "];\n.visible .entry touch(.param .u64 out)\n{\n  ret;\n}\n";
}

int fill(const std::string& path) {
  CUcontext ctx;
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
  CHECK_CU(cuCtxSetCurrent(ctx));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t granularity = 0;
  CHECK_CU(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const size_t step = ((size_t{8} << 20) + granularity - 1) / granularity * granularity;
  // One more piece of `bytes` by `how`: CUDA_SUCCESS, or why not.
  auto take = [&](const std::string& how, size_t bytes) -> CUresult {
    if (how == "alloc") {
      CUdeviceptr p = 0;
      return cuMemAlloc(&p, bytes);
    }
    if (how == "globals") {
      CUmodule m = nullptr;
      return cuModuleLoadData(&m, globals_ptx(bytes).c_str());
    }
    CUmemGenericAllocationHandle h = 0;
    return cuMemCreate(&h, bytes, &prop, 0);
  };
  if (path != "alloc" && path != "globals" && path != "vmm") return fail("unknown path '" + path + "'");
  size_t held = 0;
  for (int i = 0; i < 4096; ++i) {
    const CUresult r = take(path, step);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) break;
    if (r != CUDA_SUCCESS) return fail(path + " of " + std::to_string(step) + " bytes: " + err_name(r));
    held += step;
  }
  size_t free_bytes = 0, total = 0;
  CHECK_CU(cuMemGetInfo(&free_bytes, &total));
  if (held > total) return fail("held " + std::to_string(held) + " bytes on a quota of " + std::to_string(total));
  // The quota is full to within a step: every path is refused past it.
  for (const char* how : {"alloc", "globals", "vmm"}) {
    const CUresult r = take(how, step);
    if (r != CUDA_ERROR_OUT_OF_MEMORY) {
      return fail(std::string(how) + " past the quota after filling it by " + path + ": " + err_name(r));
    }
  }
  std::printf("held=%zu\nready\n", held);
  hold_until_stdin_closes();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  const std::string mode = argc > 1 ? argv[1] : "";
  CUresult r = cuInit(0);
  if (r != CUDA_SUCCESS) {
    std::printf("init=%s\n", err_name(r));
    return 3;
  }
  if (mode == "quota") return quota();
  if (mode == "spin") return spin(argc > 2 ? static_cast<unsigned>(std::stoul(argv[2])) : 2000);
  if (mode == "fill") return fill(argc > 2 ? argv[2] : "");
  return fail("unknown mode '" + mode + "'");
}
