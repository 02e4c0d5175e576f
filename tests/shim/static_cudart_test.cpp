// The static CUDA runtime detector on nvcc-built programs (static and shared,
// stripped and not), scripts and malformed files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "static_cudart.h"

namespace rgpu::tools {
namespace {

std::string data(const char* name) { return std::string(RGPU_CUDART_TEST_DIR) + "/" + name; }

CudartLinkage linkage(const std::string& path) { return inspect_cudart(path).linkage; }

TEST(StaticCudart, NvccDefaultBuildIsStatic) {
  EXPECT_EQ(linkage(data("runtime_vector_add_static")), CudartLinkage::kStatic);
  EXPECT_EQ(linkage(data("runtime_vector_add_static.stripped")), CudartLinkage::kStatic);
  EXPECT_EQ(refuse_static_cudart(data("runtime_vector_add_static.stripped")), 2);
}

TEST(StaticCudart, SharedBuildIsShared) {
  EXPECT_EQ(linkage(data("runtime_vector_add")), CudartLinkage::kShared);
  EXPECT_EQ(linkage(data("runtime_vector_add.stripped")), CudartLinkage::kShared);
  EXPECT_EQ(refuse_static_cudart(data("runtime_vector_add.stripped")), 0);
}

TEST(StaticCudart, OrdinaryProgramsAndScriptsAreLetThrough) {
  std::string sh = resolve_command("sh");
  ASSERT_FALSE(sh.empty());
  EXPECT_EQ(linkage(sh), CudartLinkage::kNone);
  EXPECT_EQ(refuse_static_cudart("sh"), 0);
  char path[] = "/tmp/rgpu_cudart_test_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    std::ofstream(path) << "#!/bin/sh\necho __cudaPopCallConfiguration cudaErrorInitializationError\n";
  }
  EXPECT_EQ(linkage(path), CudartLinkage::kUnknown);
  EXPECT_EQ(refuse_static_cudart(path), 0);
  EXPECT_EQ(linkage("/nonexistent/rgpu/program"), CudartLinkage::kUnknown);
  EXPECT_EQ(refuse_static_cudart("no-such-command-rgpu-test"), 0);
  unlink(path);
}

TEST(StaticCudart, TruncatedElfIsNotACrash) {
  std::ifstream in(data("runtime_vector_add_static"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 4096u);
  char path[] = "/tmp/rgpu_cudart_trunc_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  for (size_t cut : {size_t{16}, size_t{64}, size_t{1000}, bytes.size() / 2, bytes.size() - 1}) {
    {
      std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(cut));
    }
    CudartLinkage l = linkage(path);  // any answer, as long as it is one
    EXPECT_TRUE(l == CudartLinkage::kUnknown || l == CudartLinkage::kNone || l == CudartLinkage::kStatic) << cut;
  }
  unlink(path);
}

}  // namespace
}  // namespace rgpu::tools
