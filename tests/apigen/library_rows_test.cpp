// The generated calls of a library description (cublas.api) in one process:
// the client's pack function, the row against a fake session and a fake
// cuBLAS table, the unpack of the reply. What a library's rows add to the
// driver's: client-minted library handles created and destroyed through the
// table, scalar= by the handle's pointer mode, typed device pointers checked
// for the extent the call reaches, the library's own status codes, and a
// library (or a function) the server lacks.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "../../protocol/generated/cublas_pack.h"
#include "fakes.h"
#include "library_tables.h"

namespace rgpu::server::apigen_test {
namespace {

namespace blas = apigen::cublas;
using protocol::ArgReader;
using protocol::ArgWriter;
constexpr auto kCublasKind = static_cast<protocol::HandleKind>(16);

// What the fake cuBLAS saw.
struct FakeCublas {
  int handles = 0;
  int destroyed = 0;
  cublasPointerMode_t mode = CUBLAS_POINTER_MODE_HOST;
  int gemms = 0;
  float alpha = 0;
  const float* alpha_ptr = nullptr;
  const float* a = nullptr;
  float* c = nullptr;
};
FakeCublas g_blas;
int g_context_object;  // the address the fake hands out as a cublasHandle_t

cublasStatus_t fake_create(cublasHandle_t* h) {
  ++g_blas.handles;
  *h = reinterpret_cast<cublasHandle_t>(&g_context_object);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t fake_destroy(cublasHandle_t) {
  ++g_blas.destroyed;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t fake_get_mode(cublasHandle_t, cublasPointerMode_t* m) {
  *m = g_blas.mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t fake_sgemm(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float* alpha,
                          const float* a, int, const float*, int, const float*, float* c, int) {
  ++g_blas.gemms;
  g_blas.alpha_ptr = alpha;
  if (g_blas.mode == CUBLAS_POINTER_MODE_HOST) g_blas.alpha = *alpha;
  g_blas.a = a;
  g_blas.c = c;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t fake_sdot(cublasHandle_t, int, const float*, int, const float*, int, float* result) {
  if (g_blas.mode == CUBLAS_POINTER_MODE_HOST) *result = 42.5f;
  return CUBLAS_STATUS_SUCCESS;
}

std::span<const std::byte> view(const std::vector<std::byte>& v) { return {v.data(), v.size()}; }

class LibraryRows : public ::testing::Test {
 protected:
  void SetUp() override {
    g_blas = FakeCublas{};
    table.cublasCreate_v2 = fake_create;
    table.cublasDestroy_v2 = fake_destroy;
    table.cublasGetPointerMode_v2 = fake_get_mode;
    table.cublasSgemm_v2 = fake_sgemm;
    table.cublasSdot_v2 = fake_sdot;
    env.set_library(CublasTable::kIndex, &table);
    a = env.allocate(16 * 16 * 4);
    c = env.allocate(16 * 16 * 4);
    ArgWriter w;
    blas::pack_cublasCreate_v2(w, handle);
    ASSERT_EQ(0u, run(blas::k_cublasCreate_v2, w).code);
  }

  InvokeOutcome run(uint32_t function, const ArgWriter& w) {
    const DispatchRow* row = find_row(wire::Api::CUBLAS, function);
    EXPECT_NE(nullptr, row);
    return row ? row->run(env, view(w.bytes())) : InvokeOutcome{};
  }
  // beta as alpha is (by value, or at the same device address).
  ArgWriter sgemm(const float* alpha, uint32_t mode, int m, int lda) {
    const float zero = 0;
    const float* beta = mode == 0 ? &zero : alpha;
    ArgWriter w;
    blas::pack_cublasSgemm_v2(w, handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, alpha, mode, a, lda, a, lda, beta, mode, c,
                              m);
    return w;
  }

  CublasTable table;
  FakeEnv env{fake_driver()};
  const uint64_t handle = protocol::make_handle(kCublasKind, 0x900);
  uint64_t a = 0, c = 0;
};

TEST_F(LibraryRows, CreatedHandleIsTheLibrarysAndDestroyedOnce) {
  EXPECT_EQ(1, g_blas.handles);
  EXPECT_EQ(&g_context_object, env.find(kCublasKind, handle));
  ArgWriter again;
  blas::pack_cublasCreate_v2(again, handle);
  // The same handle again: the library's new one is destroyed at once.
  EXPECT_EQ(static_cast<uint32_t>(CUBLAS_STATUS_INVALID_VALUE), run(blas::k_cublasCreate_v2, again).code);
  EXPECT_EQ(2, g_blas.handles);
  EXPECT_EQ(1, g_blas.destroyed);
  ArgWriter w;
  blas::pack_cublasDestroy_v2(w, handle);
  EXPECT_EQ(0u, run(blas::k_cublasDestroy_v2, w).code);
  EXPECT_EQ(2, g_blas.destroyed);
  EXPECT_EQ(nullptr, env.find(kCublasKind, handle));
  EXPECT_EQ(static_cast<uint32_t>(CUBLAS_STATUS_INVALID_VALUE), run(blas::k_cublasDestroy_v2, w).code);
  EXPECT_EQ(2, g_blas.destroyed);
}

TEST_F(LibraryRows, HostScalarTravelsByValue) {
  const float alpha = 2.25f;
  InvokeOutcome out = run(blas::k_cublasSgemm_v2, sgemm(&alpha, 0, 16, 16));
  ASSERT_EQ(0u, out.code) << out.message;
  EXPECT_EQ(1, g_blas.gemms);
  EXPECT_EQ(2.25f, g_blas.alpha);
  EXPECT_NE(&alpha, g_blas.alpha_ptr);  // the row's own copy
  EXPECT_EQ(reinterpret_cast<const float*>(a), g_blas.a);
  EXPECT_EQ(reinterpret_cast<float*>(c), g_blas.c);
}

TEST_F(LibraryRows, DeviceScalarTravelsByAddressInTheHandlesMode) {
  g_blas.mode = CUBLAS_POINTER_MODE_DEVICE;
  const auto* alpha = reinterpret_cast<const float*>(c);
  ASSERT_EQ(0u, run(blas::k_cublasSgemm_v2, sgemm(alpha, 1, 16, 16)).code);
  EXPECT_EQ(alpha, g_blas.alpha_ptr);
  // A device address outside the session's memory, or a mode the handle is
  // not in, is refused before the library runs.
  EXPECT_EQ(7u, run(blas::k_cublasSgemm_v2, sgemm(reinterpret_cast<const float*>(0x1000), 1, 16, 16)).code);
  const float host_alpha = 1;
  EXPECT_EQ(7u, run(blas::k_cublasSgemm_v2, sgemm(&host_alpha, 0, 16, 16)).code);
  g_blas.mode = CUBLAS_POINTER_MODE_HOST;
  EXPECT_EQ(7u, run(blas::k_cublasSgemm_v2, sgemm(alpha, 1, 16, 16)).code);
  EXPECT_EQ(1, g_blas.gemms);
}

TEST_F(LibraryRows, MatricesAreCheckedForTheirWholeExtent) {
  const float alpha = 1;
  EXPECT_EQ(7u, run(blas::k_cublasSgemm_v2, sgemm(&alpha, 0, 17, 17)).code);   // one column past
  EXPECT_EQ(7u, run(blas::k_cublasSgemm_v2, sgemm(&alpha, 0, 16, 8)).code);    // lda below the rows
  EXPECT_EQ(7u, run(blas::k_cublasSgemm_v2, sgemm(&alpha, 0, -1, 16)).code);   // negative size
  EXPECT_EQ(0, g_blas.gemms);
}

TEST_F(LibraryRows, EveryTruncationIsRefused) {
  const float alpha = 1;
  ArgWriter w = sgemm(&alpha, 0, 16, 16);
  const std::vector<std::byte>& all = w.bytes();
  const DispatchRow* row = find_row(wire::Api::CUBLAS, blas::k_cublasSgemm_v2);
  for (size_t n = 0; n < all.size(); ++n) {
    InvokeOutcome out = row->run(env, std::span<const std::byte>(all.data(), n));
    EXPECT_EQ(7u, out.code) << n;
  }
  EXPECT_EQ(0, g_blas.gemms);
}

TEST_F(LibraryRows, HostResultComesBackInTheReply) {
  float result = 0;
  ArgWriter w;
  blas::pack_cublasSdot_v2(w, handle, 16, a, 1, a, 1, &result, 0);
  InvokeOutcome out = run(blas::k_cublasSdot_v2, w);
  ASSERT_EQ(0u, out.code) << out.message;
  ArgReader r(view(out.out));
  ASSERT_TRUE(blas::unpack_cublasSdot_v2(r, handle, 16, a, 1, a, 1, &result, 0));
  EXPECT_EQ(42.5f, result);
}

TEST_F(LibraryRows, AMissingLibraryOrFunctionIsNotSupported) {
  const float alpha = 1;
  table.cublasSgemm_v2 = nullptr;
  EXPECT_EQ(15u, run(blas::k_cublasSgemm_v2, sgemm(&alpha, 0, 16, 16)).code);  // CUBLAS_STATUS_NOT_SUPPORTED
  env.set_library(CublasTable::kIndex, nullptr);
  table.cublasSgemm_v2 = fake_sgemm;
  EXPECT_EQ(15u, run(blas::k_cublasSgemm_v2, sgemm(&alpha, 0, 16, 16)).code);
  EXPECT_EQ(nullptr, find_row(wire::Api::CUBLAS, 100000));
}

}  // namespace
}  // namespace rgpu::server::apigen_test
