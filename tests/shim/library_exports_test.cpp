// The CUDA libraries librgpu.so answers for (api/*.api): every
// listed name under its soname's version node (none where NVIDIA exports it
// unversioned), one entry point for a name two sonames share, the symlinks,
// each stub's own library status, and NVTX's no-tool answers.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "shim_library.h"

namespace rgpu::shim::test {
namespace {

// The sonames whose names NVIDIA exports unversioned (nccl.api, nvml.api).
const std::set<std::string> kUnversioned = {"libnccl.so.2", "libnvidia-ml.so.1"};

const DynamicSymbols& dynamic_symbols() {
  static const DynamicSymbols syms = [] {
    std::string error;
    DynamicSymbols s = read_dynamic_symbols(RGPU_SHIM_TEST_LIBRARY, &error);
    EXPECT_TRUE(error.empty()) << error;
    return s;
  }();
  return syms;
}

TEST(LibraryExports, EveryNameIsUnderItsSonamesNode) {
  const auto& syms = dynamic_symbols();
  auto entries = library_exports_by_soname();
  ASSERT_GE(entries.size(), 3000u);
  std::map<std::string, int> per_soname;
  for (const auto& [soname, name] : entries) {
    ++per_soname[soname];
    auto it = syms.versions.find(name);
    ASSERT_NE(it, syms.versions.end()) << soname << " " << name;
    const std::string node = kUnversioned.count(soname) ? "" : soname;
    EXPECT_TRUE(it->second.count(node)) << name << " not under " << (node.empty() ? "no node" : node);
  }
  for (const char* soname : {"libcublas.so.12", "libcublas.so.13", "libcublasLt.so.12", "libcublasLt.so.13",
                             "libcudnn.so.9", "libcusparse.so.12", "libcufft.so.11", "libcurand.so.10",
                             "libcusolver.so.11", "libcusolver.so.12", "libnccl.so.2", "libnvToolsExt.so.1", "libnvidia-ml.so.1"}) {
    EXPECT_GT(per_soname[soname], 0) << soname;
  }
}

TEST(LibraryExports, UnversionedNamesHaveNoVersion) {
  const auto& syms = dynamic_symbols();
  for (const char* name : {"ncclAllReduce", "ncclGetVersion", "nvmlInit_v2", "nvmlInit", "nvmlDeviceGetCount_v2"}) {
    auto it = syms.versions.find(name);
    ASSERT_NE(it, syms.versions.end()) << name;
    EXPECT_EQ(it->second, std::set<std::string>{""}) << name;
  }
}

TEST(LibraryExports, OneEntryPointServesBothCublasSonames) {
  ASSERT_NE(library(), nullptr);
  void* v12 = dlvsym(library(), "cublasSgemm_v2", "libcublas.so.12");
  void* v13 = dlvsym(library(), "cublasSgemm_v2", "libcublas.so.13");
  ASSERT_NE(v12, nullptr);
  EXPECT_EQ(v12, v13);
  EXPECT_EQ(symbol("cublasSgemm_v2"), v13);  // the default node
  EXPECT_NE(dlvsym(library(), "cublasLtMatmul", "libcublasLt.so.12"), nullptr);
}

TEST(LibraryExports, CusolverElevenSharesTwelvesEntryPointsAndKeepsItsOwnNames) {
  ASSERT_NE(library(), nullptr);
  void* v11 = dlvsym(library(), "cusolverDnSpotrf", "libcusolver.so.11");
  ASSERT_NE(v11, nullptr);
  EXPECT_EQ(v11, dlvsym(library(), "cusolverDnSpotrf", "libcusolver.so.12"));
  // cuSOLVER 12 dropped cusolverRf: its names are defined under 11's node alone.
  EXPECT_NE(dlvsym(library(), "cusolverRfAnalyze", "libcusolver.so.11"), nullptr);
  EXPECT_EQ(dlvsym(library(), "cusolverRfAnalyze", "libcusolver.so.12"), nullptr);
}

TEST(LibraryExports, EverySonameIsASymlinkToTheLibrary) {
  struct stat ours {};
  ASSERT_EQ(stat(RGPU_SHIM_TEST_LIBRARY, &ours), 0);
  std::set<std::string> sonames;
  for (const auto& [soname, name] : library_exports_by_soname()) sonames.insert(soname);
  for (const auto& soname : sonames) {
    struct stat link {};
    const std::string path = std::string(RGPU_SHIM_LIBRARY_DIR) + "/" + soname;
    ASSERT_EQ(stat(path.c_str(), &link), 0) << path;
    EXPECT_EQ(link.st_ino, ours.st_ino) << path;
  }
}

TEST(LibraryExports, EveryStubAnswersItsLibrarysNotSupported) {
  std::ifstream in(RGPU_SHIM_LIBRARY_STUBS);
  ASSERT_TRUE(in) << RGPU_SHIM_LIBRARY_STUBS;
  std::string line;
  int checked = 0;
  std::map<std::string, int> codes;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string name;
    int code = -1;
    words >> name >> code;
    auto fn = function<int (*)()>(name.c_str());  // stubs ignore their arguments
    ASSERT_NE(fn, nullptr) << name;
    EXPECT_EQ(fn(), code) << name;
    codes[name] = code;
    ++checked;
  }
  EXPECT_GE(checked, 2000);
  // Each library's own code, spelled out (cublas_api.h, cudnn_graph.h, cufft.h,
  // nvml.h, nccl.h, cusparse.h, cusolver_common.h, curand.h).
  EXPECT_EQ(codes["cublasSrotg_v2"], 15);       // CUBLAS_STATUS_NOT_SUPPORTED
  EXPECT_EQ(codes["cublasLtMatrixTransform"], 15);
  EXPECT_EQ(codes["cudnnCreateCTCLossDescriptor"], 3000);  // CUDNN_STATUS_NOT_SUPPORTED
  EXPECT_EQ(codes["cufftXtSetGPUs"], 16);       // CUFFT_NOT_SUPPORTED
  EXPECT_EQ(codes["nvmlDeviceGetTemperature"], 3);  // NVML_ERROR_NOT_SUPPORTED
  EXPECT_EQ(codes["ncclCommInitRank"], 5);      // ncclInvalidUsage
  EXPECT_EQ(codes["cusparseSpGEMM_compute"], 10);  // CUSPARSE_STATUS_NOT_SUPPORTED
  EXPECT_EQ(codes["cusolverDnCgetrf"], 9);      // CUSOLVER_STATUS_NOT_SUPPORTED
  EXPECT_EQ(codes["curandCreateGeneratorHost"], 103);  // CURAND_STATUS_TYPE_ERROR
}

TEST(LibraryExports, StubsWithoutStatusReturnNothingOrZero) {
  // cublas.h's legacy API: void and float results.
  auto sdot = function<float (*)()>("cublasSdot");
  ASSERT_NE(sdot, nullptr);
  EXPECT_EQ(sdot(), 0.0f);
  auto text = function<const char* (*)()>("cublasLtGetStatusString");
  ASSERT_NE(text, nullptr);
  ASSERT_NE(text(), nullptr);
  EXPECT_NE(std::string(text()).find("not supported"), std::string::npos);
}

TEST(LibraryExports, NvtxAnswersAsWithNoToolAttached) {
  auto push = function<int (*)(const char*)>("nvtxRangePushA");
  auto pop = function<int (*)()>("nvtxRangePop");
  auto start = function<uint64_t (*)(const char*)>("nvtxRangeStartA");
  auto mark = function<void (*)(const char*)>("nvtxMarkA");
  ASSERT_TRUE(push && pop && start && mark);
  EXPECT_EQ(push("range"), -2);  // NVTX_NO_PUSH_POP_TRACKING
  EXPECT_EQ(pop(), -2);
  EXPECT_EQ(start("range"), 0u);
  mark("mark");
  EXPECT_NE(dlvsym(library(), "nvtxRangePushA", "libnvToolsExt.so.1"), nullptr);
}

}  // namespace
}  // namespace rgpu::shim::test
