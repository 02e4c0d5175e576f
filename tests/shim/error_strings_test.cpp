// cuGetErrorName and cuGetErrorString: every CUresult has a name and a
// description; unknown codes are rejected as CUDA rejects them.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "shim_library.h"

namespace rgpu::shim::test {
namespace {

#define RGPU_ERROR_CASE(e) std::pair<CUresult, const char*>{e, #e}

PFN_cuGetErrorName_v6000 error_name() { return function<PFN_cuGetErrorName_v6000>("cuGetErrorName"); }
PFN_cuGetErrorString_v6000 error_string() {
  return function<PFN_cuGetErrorString_v6000>("cuGetErrorString");
}

TEST(ErrorStrings, NamesAreTheEnumeratorNames) {
  auto name = error_name();
  ASSERT_NE(name, nullptr);
  for (auto [code, want] : {RGPU_ERROR_CASE(CUDA_SUCCESS), RGPU_ERROR_CASE(CUDA_ERROR_INVALID_VALUE),
                            RGPU_ERROR_CASE(CUDA_ERROR_OUT_OF_MEMORY),
                            RGPU_ERROR_CASE(CUDA_ERROR_NOT_INITIALIZED),
                            RGPU_ERROR_CASE(CUDA_ERROR_ILLEGAL_ADDRESS),
                            RGPU_ERROR_CASE(CUDA_ERROR_NOT_SUPPORTED), RGPU_ERROR_CASE(CUDA_ERROR_NOT_FOUND),
                            RGPU_ERROR_CASE(CUDA_ERROR_STUB_LIBRARY), RGPU_ERROR_CASE(CUDA_ERROR_UNKNOWN)}) {
    const char* got = nullptr;
    EXPECT_EQ(name(code, &got), CUDA_SUCCESS) << want;
    ASSERT_NE(got, nullptr) << want;
    EXPECT_STREQ(got, want);
  }
}

TEST(ErrorStrings, DescriptionsComeFromTheHeaderComments) {
  auto str = error_string();
  ASSERT_NE(str, nullptr);
  const char* text = nullptr;
  ASSERT_EQ(str(CUDA_ERROR_INVALID_VALUE, &text), CUDA_SUCCESS);
  ASSERT_NE(text, nullptr);
  EXPECT_NE(std::string(text).find("parameters"), std::string::npos) << text;
  ASSERT_EQ(str(CUDA_ERROR_OUT_OF_MEMORY, &text), CUDA_SUCCESS);
  EXPECT_NE(std::string(text).find("memory"), std::string::npos) << text;
  ASSERT_EQ(str(CUDA_SUCCESS, &text), CUDA_SUCCESS);
  EXPECT_NE(std::string(text).find("no errors"), std::string::npos) << text;
}

TEST(ErrorStrings, EveryKnownCodeHasNameAndDescription) {
  auto name = error_name();
  auto str = error_string();
  ASSERT_NE(name, nullptr);
  ASSERT_NE(str, nullptr);
  int known = 0;
  for (int code = 0; code <= 1000; ++code) {
    const char* n = nullptr;
    const char* s = nullptr;
    CUresult rn = name(static_cast<CUresult>(code), &n);
    CUresult rs = str(static_cast<CUresult>(code), &s);
    EXPECT_EQ(rn, rs) << code;
    if (rn != CUDA_SUCCESS) continue;
    ++known;
    ASSERT_TRUE(n != nullptr && s != nullptr) << code;
    EXPECT_EQ(std::strncmp(n, "CUDA_", 5), 0) << n;
    EXPECT_GT(std::strlen(s), 5u) << n;
    EXPECT_STRNE(n, s);
  }
  EXPECT_GE(known, 90);
}

TEST(ErrorStrings, UnknownCodeIsInvalidValueAndNullString) {
  auto name = error_name();
  auto str = error_string();
  ASSERT_NE(name, nullptr);
  ASSERT_NE(str, nullptr);
  for (int code : {12345, 998, -1, 10000}) {
    const char* out = "sentinel";
    EXPECT_EQ(name(static_cast<CUresult>(code), &out), CUDA_ERROR_INVALID_VALUE) << code;
    EXPECT_EQ(out, nullptr);
    out = "sentinel";
    EXPECT_EQ(str(static_cast<CUresult>(code), &out), CUDA_ERROR_INVALID_VALUE) << code;
    EXPECT_EQ(out, nullptr);
  }
  EXPECT_EQ(name(CUDA_SUCCESS, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(str(CUDA_SUCCESS, nullptr), CUDA_ERROR_INVALID_VALUE);
}

}  // namespace
}  // namespace rgpu::shim::test
