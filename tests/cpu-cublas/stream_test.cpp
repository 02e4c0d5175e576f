// Stream order and asynchrony: a GEMM runs when its stream reaches it, after
// the call returns; device-mode scalars are read then; a free of an operand
// waits for it.
#include <atomic>
#include <chrono>
#include <thread>

#include "blas_lib.h"
// After cuda.h (through blas_lib.h), which defines CUDA_CB.
#include "../cpu-device/gate.h"

namespace rgpu::cpublas::test {
namespace {

using cpudev::test::Gate;

class BlasStreamTest : public BlasTest {
 protected:
  void SetUp() override {
    BlasTest::SetUp();
    CU_OK(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    BLAS_OK(b.cublasSetStream_v2(h, reinterpret_cast<cudaStream_t>(stream)));
  }
  void TearDown() override {
    if (stream) {
      EXPECT_EQ(CUDA_SUCCESS, cu.cuStreamDestroy(stream));
    }
    BlasTest::TearDown();
  }
  // Reads device memory without waiting for any stream (a synchronous copy on
  // the legacy stream does not wait for a non-blocking stream).
  std::vector<float> peek(CUdeviceptr p, size_t n) { return download<float>(p, n); }

  CUstream stream = nullptr;
};

TEST_F(BlasStreamTest, GemmWaitsForEarlierWorkOnItsStream) {
  std::vector<float> a = {1, 2, 3, 4}, bb = {1, 0, 0, 1}, c = {-1, -1, -1, -1};
  CUdeviceptr da = upload(a), db = upload(bb), dc = upload(c);
  Gate gate;
  CU_OK(cu.cuLaunchHostFunc(stream, Gate::hold, &gate));
  ASSERT_TRUE(gate.wait_entered(1));
  float one = 1, zero = 0;
  BLAS_OK(b.cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, reinterpret_cast<float*>(da), 2,
                           reinterpret_cast<float*>(db), 2, &zero, reinterpret_cast<float*>(dc), 2));
  // Queued behind the held host function: C is untouched and the stream busy.
  EXPECT_EQ(c, peek(dc, 4));
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cu.cuStreamQuery(stream));
  gate.open();
  CU_OK(cu.cuStreamSynchronize(stream));
  EXPECT_EQ(a, peek(dc, 4));
}

TEST_F(BlasStreamTest, DefaultStreamIsTheLegacyStream) {
  cudaStream_t s = reinterpret_cast<cudaStream_t>(1);
  BLAS_OK(b.cublasGetStream_v2(h, &s));
  EXPECT_EQ(reinterpret_cast<cudaStream_t>(stream), s);
  BLAS_OK(b.cublasSetStream_v2(h, nullptr));
  BLAS_OK(b.cublasGetStream_v2(h, &s));
  EXPECT_EQ(nullptr, s);
  std::vector<float> a = {2}, c = {5};
  CUdeviceptr da = upload(a), dc = upload(c);
  float one = 1, zero = 0;
  BLAS_OK(b.cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, reinterpret_cast<float*>(da), 1,
                           reinterpret_cast<float*>(da), 1, &zero, reinterpret_cast<float*>(dc), 1));
  CU_OK(cu.cuStreamSynchronize(nullptr));
  EXPECT_EQ(std::vector<float>{4}, peek(dc, 1));
}

// Device pointer mode: alpha and beta are read when the stream runs the GEMM,
// so a copy queued before it on the same stream decides their values.
TEST_F(BlasStreamTest, DevicePointerModeReadsScalarsInStreamOrder) {
  std::vector<float> a = {1, 2, 3, 4}, bb = {1, 0, 0, 1}, c = {10, 20, 30, 40}, scalars = {1, 0};
  CUdeviceptr da = upload(a), db = upload(bb), dc = upload(c), ds = upload(scalars);
  BLAS_OK(b.cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE));
  cublasPointerMode_t mode;
  BLAS_OK(b.cublasGetPointerMode_v2(h, &mode));
  EXPECT_EQ(CUBLAS_POINTER_MODE_DEVICE, mode);
  Gate gate;
  CU_OK(cu.cuLaunchHostFunc(stream, Gate::hold, &gate));
  static const float later[2] = {3, 0.5f};  // alpha 3, beta 0.5
  CU_OK(cu.cuMemcpyHtoDAsync(ds, later, sizeof later, stream));
  BLAS_OK(b.cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, reinterpret_cast<float*>(ds),
                           reinterpret_cast<float*>(da), 2, reinterpret_cast<float*>(db), 2,
                           reinterpret_cast<float*>(ds) + 1, reinterpret_cast<float*>(dc), 2));
  gate.open();
  CU_OK(cu.cuStreamSynchronize(stream));
  EXPECT_EQ((std::vector<float>{8, 16, 24, 32}), peek(dc, 4));  // 3 a + 0.5 c
}

TEST_F(BlasStreamTest, DevicePointerModeZeroBetaIgnoresNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {2}, c = {nan}, scalars = {1.5f, 0};
  CUdeviceptr da = upload(a), dc = upload(c), ds = upload(scalars);
  BLAS_OK(b.cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE));
  BLAS_OK(b.cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, reinterpret_cast<float*>(ds),
                           reinterpret_cast<float*>(da), 1, reinterpret_cast<float*>(da), 1,
                           reinterpret_cast<float*>(ds) + 1, reinterpret_cast<float*>(dc), 1));
  CU_OK(cu.cuStreamSynchronize(stream));
  EXPECT_EQ(std::vector<float>{6}, peek(dc, 1));
}

// The handle holds nothing the queued work needs.
TEST_F(BlasStreamTest, HandleDestroyedWhileGemmIsQueued) {
  std::vector<float> a = {3}, c = {0};
  CUdeviceptr da = upload(a), dc = upload(c);
  Gate gate;
  CU_OK(cu.cuLaunchHostFunc(stream, Gate::hold, &gate));
  float one = 1, zero = 0;
  BLAS_OK(b.cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, reinterpret_cast<float*>(da), 1,
                           reinterpret_cast<float*>(da), 1, &zero, reinterpret_cast<float*>(dc), 1));
  BLAS_OK(b.cublasDestroy_v2(h));
  h = nullptr;
  gate.open();
  CU_OK(cu.cuStreamSynchronize(stream));
  EXPECT_EQ(std::vector<float>{9}, peek(dc, 1));
}

// A client that frees an operand while its GEMM is queued: the free waits
// for the GEMM, as on a GPU, and the GEMM reads the operand intact.
TEST_F(BlasStreamTest, FreeOfAQueuedOperandWaitsForTheGemm) {
  std::vector<float> a(16, 1), c(16, 0);
  CUdeviceptr da = 0, dc = upload(c);
  CU_OK(cu.cuMemAlloc(&da, a.size() * sizeof(float)));
  CU_OK(cu.cuMemcpyHtoD(da, a.data(), a.size() * sizeof(float)));
  Gate gate;
  CU_OK(cu.cuLaunchHostFunc(stream, Gate::hold, &gate));
  float one = 1, zero = 0;
  BLAS_OK(b.cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, reinterpret_cast<float*>(da), 4,
                           reinterpret_cast<float*>(da), 4, &zero, reinterpret_cast<float*>(dc), 4));
  EXPECT_TRUE(gate.call_waits_for_opening([&] { CU_OK(cu.cuMemFree(da)); }));
  CU_OK(cu.cuStreamSynchronize(stream));
  EXPECT_EQ(std::vector<float>(16, 4), peek(dc, 16));
}

}  // namespace
}  // namespace rgpu::cpublas::test
