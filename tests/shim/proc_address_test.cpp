// cuGetProcAddress resolves API names by CUDA version and default-stream
// flavour to the library's own functions; cuGetExportTable is refused.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>

#include "proc_address_names.h"
#include "shim_library.h"

namespace rgpu::shim::test {
namespace {

constexpr cuuint64_t kLegacy = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
constexpr cuuint64_t kPerThread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

struct Found {
  CUresult rc;
  void* fn;
  CUdriverProcAddressQueryResult status;
};

Found get(const char* api, int version, cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT) {
  auto v2 = function<PFN_cuGetProcAddress_v12000>("cuGetProcAddress_v2");
  Found f{CUDA_ERROR_UNKNOWN, reinterpret_cast<void*>(&get),
          static_cast<CUdriverProcAddressQueryResult>(-1)};
  if (v2 == nullptr) {
    ADD_FAILURE() << "cuGetProcAddress_v2 not exported";
    return f;
  }
  f.rc = v2(api, &f.fn, version, flags, &f.status);
  return f;
}

// Expects `api` at `version` with `flags` to be the exported `symbol`.
void expect_resolves(const char* api, int version, cuuint64_t flags, const char* symbol_name) {
  Found f = get(api, version, flags);
  void* want = symbol(symbol_name);
  ASSERT_NE(want, nullptr) << symbol_name << " is not exported";
  EXPECT_EQ(f.rc, CUDA_SUCCESS) << api << "@" << version;
  EXPECT_EQ(f.status, CU_GET_PROC_ADDRESS_SUCCESS) << api << "@" << version;
  Dl_info info{};
  const char* got_name = f.fn && dladdr(f.fn, &info) && info.dli_sname ? info.dli_sname : "(null)";
  EXPECT_EQ(f.fn, want) << api << "@" << version << " flags=" << flags << ": got " << got_name
                        << ", want " << symbol_name;
}

TEST(ProcAddress, PicksTheNewestVariantTheVersionKnows) {
  expect_resolves("cuMemAlloc", 2000, kLegacy, "cuMemAlloc");
  expect_resolves("cuMemAlloc", 3010, kLegacy, "cuMemAlloc");
  expect_resolves("cuMemAlloc", 3020, kLegacy, "cuMemAlloc_v2");
  expect_resolves("cuMemAlloc", 13000, kLegacy, "cuMemAlloc_v2");
  expect_resolves("cuCtxCreate", 2000, kLegacy, "cuCtxCreate");
  expect_resolves("cuCtxCreate", 3020, kLegacy, "cuCtxCreate_v2");
  expect_resolves("cuCtxCreate", 11040, kLegacy, "cuCtxCreate_v3");
  expect_resolves("cuCtxCreate", 12040, kLegacy, "cuCtxCreate_v3");
  expect_resolves("cuCtxCreate", 12050, kLegacy, "cuCtxCreate_v4");
  expect_resolves("cuGetProcAddress", 11030, kLegacy, "cuGetProcAddress");
  expect_resolves("cuGetProcAddress", 12000, kLegacy, "cuGetProcAddress_v2");
  expect_resolves("cuStreamGetCaptureInfo", 11030, kLegacy, "cuStreamGetCaptureInfo_v2");
  expect_resolves("cuStreamGetCaptureInfo", 12030, kLegacy, "cuStreamGetCaptureInfo_v3");
  expect_resolves("cuEventElapsedTime", 12000, kLegacy, "cuEventElapsedTime");
  expect_resolves("cuEventElapsedTime", 12080, kLegacy, "cuEventElapsedTime_v2");
  expect_resolves("cuGraphInstantiate", 11000, kLegacy, "cuGraphInstantiate_v2");
  expect_resolves("cuGraphInstantiate", 12000, kLegacy, "cuGraphInstantiateWithFlags");
  // A _v2 that cuda.h also spells out as its own name follows the PFN typedefs.
  expect_resolves("cuStreamGetCtx", 12040, kLegacy, "cuStreamGetCtx");
  expect_resolves("cuStreamGetCtx", 12050, kLegacy, "cuStreamGetCtx_v2");
  expect_resolves("cuCtxGetDevice", 12090, kLegacy, "cuCtxGetDevice");
  expect_resolves("cuCtxGetDevice", 13000, kLegacy, "cuCtxGetDevice_v2");
  expect_resolves("cuProfilerStart", 4000, kLegacy, "cuProfilerStart");
}

TEST(ProcAddress, PerThreadFlagSelectsPerThreadVariants) {
  expect_resolves("cuStreamSynchronize", 13000, kLegacy, "cuStreamSynchronize");
  expect_resolves("cuStreamSynchronize", 13000, kPerThread, "cuStreamSynchronize_ptsz");
  expect_resolves("cuStreamSynchronize", 6050, kPerThread, "cuStreamSynchronize");  // before 7.0
  expect_resolves("cuMemcpyHtoD", 13000, kPerThread, "cuMemcpyHtoD_v2_ptds");
  expect_resolves("cuMemcpyHtoD", 13000, kLegacy, "cuMemcpyHtoD_v2");
  expect_resolves("cuMemcpy", 7000, kPerThread, "cuMemcpy_ptds");
  expect_resolves("cuStreamGetCaptureInfo", 11030, kPerThread, "cuStreamGetCaptureInfo_v2_ptsz");
  expect_resolves("cuStreamBeginCapture", 10000, kPerThread, "cuStreamBeginCapture_ptsz");
  expect_resolves("cuStreamBeginCapture", 10010, kPerThread, "cuStreamBeginCapture_v2_ptsz");
  // No per-thread variant: the legacy one.
  expect_resolves("cuMemAlloc", 13000, kPerThread, "cuMemAlloc_v2");
}

TEST(ProcAddress, DefaultFlagMeansLegacyStream) {
  expect_resolves("cuStreamSynchronize", 13000, CU_GET_PROC_ADDRESS_DEFAULT, "cuStreamSynchronize");
  expect_resolves("cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_DEFAULT, "cuMemcpyHtoD_v2");
}

TEST(ProcAddress, AgreesWithCudaHeaderMacros) {
  const ApiName legacy[] = {
      RGPU_API_NAME(cuMemAlloc),         RGPU_API_NAME(cuMemFree),
      RGPU_API_NAME(cuCtxCreate),        RGPU_API_NAME(cuCtxDestroy),
      RGPU_API_NAME(cuMemcpyHtoD),       RGPU_API_NAME(cuMemcpyDtoHAsync),
      RGPU_API_NAME(cuMemsetD32),        RGPU_API_NAME(cuStreamSynchronize),
      RGPU_API_NAME(cuLaunchKernel),     RGPU_API_NAME(cuStreamBeginCapture),
      RGPU_API_NAME(cuStreamGetCaptureInfo), RGPU_API_NAME(cuMemPrefetchAsync),
      RGPU_API_NAME(cuDeviceGetUuid),    RGPU_API_NAME(cuDeviceTotalMem),
      RGPU_API_NAME(cuLinkCreate),       RGPU_API_NAME(cuModuleGetGlobal),
      RGPU_API_NAME(cuMemGetInfo),       RGPU_API_NAME(cuGraphInstantiate),
      RGPU_API_NAME(cuEventElapsedTime), RGPU_API_NAME(cuGetProcAddress),
      RGPU_API_NAME(cuDevicePrimaryCtxRelease), RGPU_API_NAME(cuIpcOpenMemHandle),
      RGPU_API_NAME(cuGraphAddKernelNode), RGPU_API_NAME(cuTexRefSetAddress2D),
  };
  for (const ApiName& n : legacy) expect_resolves(n.api, CUDA_VERSION, kLegacy, n.symbol);
  auto per_thread = per_thread_names();
  ASSERT_FALSE(per_thread.empty());
  EXPECT_STREQ(per_thread[1].symbol, "cuMemcpyHtoD_v2_ptds");  // the macros really were per-thread
  for (const ApiName& n : per_thread) expect_resolves(n.api, CUDA_VERSION, kPerThread, n.symbol);
}

TEST(ProcAddress, EveryExportedFunctionIsReachable) {
  // Ask for every API name (exported names without _vN/_ptds/_ptsz) at every
  // version in steps of 10 with both flavours; every export must come back.
  std::map<void*, std::string> by_address;
  std::set<std::string> apis;
  const std::regex suffix("(_v[0-9]+)?(_ptds|_ptsz)?$");
  for (const auto& name : driver_exported_names()) {
    by_address[symbol(name.c_str())] = name;
    apis.insert(std::regex_replace(name, suffix, ""));
  }
  std::set<std::string> reached;
  for (const auto& api : apis) {
    for (int version = 2000; version <= CUDA_VERSION; version += 10) {
      for (cuuint64_t flags : {kLegacy, kPerThread}) {
        Found f = get(api.c_str(), version, flags);
        if (f.rc != CUDA_SUCCESS) continue;
        auto it = by_address.find(f.fn);
        ASSERT_NE(it, by_address.end()) << api << "@" << version << " is no exported function";
        reached.insert(it->second);
      }
    }
    EXPECT_EQ(get(api.c_str(), CUDA_VERSION).rc, CUDA_SUCCESS) << api;
  }
  for (const auto& name : driver_exported_names()) EXPECT_TRUE(reached.count(name)) << name;
}

TEST(ProcAddress, UnknownNameIsNotFound) {
  Found f = get("cuNoSuchFunction", 13000);
  EXPECT_EQ(f.rc, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(f.status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(f.fn, nullptr);
  // Versioned symbol names are not API names.
  EXPECT_EQ(get("cuMemAlloc_v2", 13000).rc, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(get("", 13000).rc, CUDA_ERROR_NOT_FOUND);
}

TEST(ProcAddress, TooOldVersionIsNotSufficient) {
  Found f = get("cuCtxCreate", 1000);
  EXPECT_EQ(f.rc, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(f.status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(f.fn, nullptr);
  f = get("cuGetProcAddress", 11020);
  EXPECT_EQ(f.rc, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(f.status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

TEST(ProcAddress, InvalidArgumentsAreRejected) {
  auto v2 = function<PFN_cuGetProcAddress_v12000>("cuGetProcAddress_v2");
  ASSERT_NE(v2, nullptr);
  void* fn = &fn;
  EXPECT_EQ(v2(nullptr, &fn, 13000, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fn, nullptr);
  EXPECT_EQ(v2("cuInit", nullptr, 13000, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(v2("cuInit", &fn, 13000, 1u << 5, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(v2("cuInit", &fn, 13000, kLegacy | kPerThread, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(v2("cuInit", &fn, 0, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  // Newer than this driver's CUDA version: refused, as documented for cuGetProcAddress.
  EXPECT_EQ(v2("cuInit", &fn, CUDA_VERSION + 10, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(v2("cuInit", &fn, CUDA_VERSION, 0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(fn, symbol("cuInit"));
}

TEST(ProcAddress, V1EntryPointResolvesLikeV2) {
  auto v1 = function<PFN_cuGetProcAddress_v11030>("cuGetProcAddress");
  ASSERT_NE(v1, nullptr);
  void* fn = nullptr;
  EXPECT_EQ(v1("cuMemAlloc", &fn, 13000, kLegacy), CUDA_SUCCESS);
  EXPECT_EQ(fn, symbol("cuMemAlloc_v2"));
  EXPECT_EQ(v1("cuStreamQuery", &fn, 13000, kPerThread), CUDA_SUCCESS);
  EXPECT_EQ(fn, symbol("cuStreamQuery_ptsz"));
  EXPECT_EQ(v1("cuNoSuchFunction", &fn, 13000, 0), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(fn, nullptr);
  // Asked through itself, cuGetProcAddress gives back the entry points.
  EXPECT_EQ(v1("cuGetProcAddress", &fn, 13000, 0), CUDA_SUCCESS);
  EXPECT_EQ(fn, symbol("cuGetProcAddress_v2"));
}

TEST(ExportTable, IsNeverProvided) {
  auto get_table = function<PFN_cuGetExportTable_v3000>("cuGetExportTable");
  ASSERT_NE(get_table, nullptr);
  CUuuid id{};
  for (int i = 0; i < 16; ++i) id.bytes[i] = static_cast<char>(i * 17);
  const void* table = &id;
  EXPECT_EQ(get_table(&table, &id), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(table, nullptr);
  EXPECT_EQ(get_table(nullptr, nullptr), CUDA_ERROR_NOT_SUPPORTED);
}

}  // namespace
}  // namespace rgpu::shim::test
