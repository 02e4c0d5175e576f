// cusolver.api's rows (and cuBLAS's batched rows) against a fake session and
// fake libraries: every device argument checked for the extent the call
// reaches (devInfo included), getrf's workspace for what the server's
// library asks, and arrays of device pointers in device memory (ptrs=)
// checked pointer by pointer, with the library given rgpud's own copy. Each
// refusal is the library's status; the library is never called with what
// was refused.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "../../protocol/generated/cublas_pack.h"
#include "../../protocol/generated/cusolver_pack.h"
#include "fakes.h"
#include "library_tables.h"

namespace rgpu::server::apigen_test {
namespace {

namespace sol = apigen::cusolver;
namespace blas = apigen::cublas;
using protocol::ArgWriter;
constexpr auto kSolverKind = static_cast<protocol::HandleKind>(40);
constexpr auto kCublasKind = static_cast<protocol::HandleKind>(16);
constexpr uint32_t kInvalid = CUSOLVER_STATUS_INVALID_VALUE;

// What the fake libraries saw.
struct Seen {
  int calls = 0;
  int lwork = 0;                // what the fake getrf_bufferSize answers
  float* const* array = nullptr;  // the pointer array the library got
  std::vector<uint64_t> pointers;  // what it held then
};
Seen g_seen;
int g_handle_object;

// The server-owned copies of pointer arrays: host memory here, as the fake
// env's device memory is.
std::set<void*> g_device;
CUresult CUDAAPI ctx_synchronize() { return CUDA_SUCCESS; }
CUresult CUDAAPI mem_alloc(CUdeviceptr* p, size_t n) {
  void* m = ::operator new(n);
  g_device.insert(m);
  *p = reinterpret_cast<CUdeviceptr>(m);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI mem_free(CUdeviceptr p) {
  void* m = reinterpret_cast<void*>(p);
  if (!g_device.erase(m)) return CUDA_ERROR_INVALID_VALUE;
  ::operator delete(m);
  return CUDA_SUCCESS;
}

cusolverStatus_t create(cusolverDnHandle_t* h) {
  *h = reinterpret_cast<cusolverDnHandle_t>(&g_handle_object);
  return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t destroy(cusolverDnHandle_t) { return CUSOLVER_STATUS_SUCCESS; }
cusolverStatus_t fake_potrf(cusolverDnHandle_t, cublasFillMode_t, int, float*, int, float*, int, int*) {
  ++g_seen.calls;
  return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t getrf_size(cusolverDnHandle_t, int, int, float*, int, int* lwork) {
  *lwork = g_seen.lwork;
  return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t getrf(cusolverDnHandle_t, int, int, float*, int, float*, int*, int*) {
  ++g_seen.calls;
  return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t fake_potrf_batched(cusolverDnHandle_t, cublasFillMode_t, int, float** a, int, int*, int batch) {
  ++g_seen.calls;
  g_seen.array = a;
  g_seen.pointers.assign(reinterpret_cast<const uint64_t*>(a), reinterpret_cast<const uint64_t*>(a) + batch);
  return CUSOLVER_STATUS_SUCCESS;
}
cublasStatus_t blas_create(cublasHandle_t* h) {
  *h = reinterpret_cast<cublasHandle_t>(&g_handle_object);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t blas_destroy(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t getrf_batched(cublasHandle_t, int, float* const a[], int, int*, int*, int batch) {
  ++g_seen.calls;
  g_seen.array = a;
  g_seen.pointers.assign(reinterpret_cast<const uint64_t*>(a), reinterpret_cast<const uint64_t*>(a) + batch);
  return CUBLAS_STATUS_SUCCESS;
}

std::span<const std::byte> view(const std::vector<std::byte>& v) { return {v.data(), v.size()}; }

std::shared_ptr<DriverTable> driver() {
  auto t = fake_driver();
  t->cuCtxSynchronize = ctx_synchronize;
  t->cuMemAlloc = mem_alloc;
  t->cuMemFree = mem_free;
  return t;
}

class CusolverRows : public ::testing::Test {
 protected:
  static constexpr int kN = 8;
  static constexpr size_t kMatrix = kN * kN * sizeof(float);

  void SetUp() override {
    g_seen = Seen{};
    table.cusolverDnCreate = create;
    table.cusolverDnDestroy = destroy;
    table.cusolverDnSpotrf = fake_potrf;
    table.cusolverDnSgetrf_bufferSize = getrf_size;
    table.cusolverDnSgetrf = getrf;
    table.cusolverDnSpotrfBatched = fake_potrf_batched;
    blas_table.cublasCreate_v2 = blas_create;
    blas_table.cublasDestroy_v2 = blas_destroy;
    blas_table.cublasSgetrfBatched = getrf_batched;
    env.set_library(CusolverTable::kIndex, &table);
    env.set_library(CublasTable::kIndex, &blas_table);
    a = env.allocate(kMatrix);
    small = env.allocate(kMatrix - 4);
    info = env.allocate(3 * sizeof(int));
    ArgWriter w;
    sol::pack_cusolverDnCreate(w, handle);
    ASSERT_EQ(0u, run(wire::Api::CUSOLVER, sol::k_cusolverDnCreate, w).code);
    ArgWriter b;
    blas::pack_cublasCreate_v2(b, blas_handle);
    ASSERT_EQ(0u, run(wire::Api::CUBLAS, blas::k_cublasCreate_v2, b).code);
  }
  void TearDown() override { EXPECT_TRUE(g_device.empty()) << "a checked pointer array was not freed"; }

  InvokeOutcome run(wire::Api api, uint32_t function, const ArgWriter& w) {
    const DispatchRow* row = find_row(api, function);
    EXPECT_NE(nullptr, row);
    return row ? row->run(env, view(w.bytes())) : InvokeOutcome{};
  }
  InvokeOutcome potrf(uint64_t matrix, uint64_t dev_info) {
    ArgWriter w;
    sol::pack_cusolverDnSpotrf(w, handle, CUBLAS_FILL_MODE_LOWER, kN, matrix, kN, 0, 0, dev_info);
    return run(wire::Api::CUSOLVER, sol::k_cusolverDnSpotrf, w);
  }
  // An array of `pointers` in device memory of this context.
  uint64_t array(const std::vector<uint64_t>& pointers) {
    const uint64_t at = env.allocate(pointers.size() * sizeof(uint64_t));
    std::memcpy(reinterpret_cast<void*>(at), pointers.data(), pointers.size() * sizeof(uint64_t));
    return at;
  }
  InvokeOutcome potrf_batched(uint64_t arr, int batch) {
    ArgWriter w;
    sol::pack_cusolverDnSpotrfBatched(w, handle, CUBLAS_FILL_MODE_LOWER, kN, arr, kN, info, batch);
    return run(wire::Api::CUSOLVER, sol::k_cusolverDnSpotrfBatched, w);
  }

  CusolverTable table;
  CublasTable blas_table;
  FakeEnv env{driver()};
  const uint64_t handle = protocol::make_handle(kSolverKind, 0x900);
  const uint64_t blas_handle = protocol::make_handle(kCublasKind, 0x901);
  uint64_t a = 0, small = 0, info = 0;
};

TEST_F(CusolverRows, MatricesAndDevInfoAreCheckedForWhatTheCallReaches) {
  EXPECT_EQ(0u, potrf(a, info).code);
  EXPECT_EQ(1, g_seen.calls);
  int on_stack = 0;
  // An address that is no allocation of this context.
  EXPECT_EQ(kInvalid, potrf(reinterpret_cast<uint64_t>(&on_stack), info).code);
  // An allocation one element short of n x n at lda n.
  EXPECT_EQ(kInvalid, potrf(small, info).code);
  // devInfo past the end of its allocation, and not memory at all.
  EXPECT_EQ(kInvalid, potrf(a, info + 3 * sizeof(int) - 2).code);
  EXPECT_EQ(kInvalid, potrf(a, 0).code);
  // A leading dimension below n: no extent, refused.
  ArgWriter w;
  sol::pack_cusolverDnSpotrf(w, handle, CUBLAS_FILL_MODE_LOWER, kN, a, kN - 1, 0, 0, info);
  EXPECT_EQ(kInvalid, run(wire::Api::CUSOLVER, sol::k_cusolverDnSpotrf, w).code);
  EXPECT_EQ(1, g_seen.calls);
}

TEST_F(CusolverRows, GetrfWorkspaceIsCheckedForWhatTheServersLibraryUses) {
  const uint64_t ws = env.allocate(64 * sizeof(float));
  auto getrf = [&](uint64_t workspace) {
    ArgWriter w;
    sol::pack_cusolverDnSgetrf(w, handle, kN, kN, a, kN, workspace, 0, info);
    return run(wire::Api::CUSOLVER, sol::k_cusolverDnSgetrf, w).code;
  };
  g_seen.lwork = 64;
  EXPECT_EQ(0u, getrf(ws));
  g_seen.lwork = 65;  // one element more than the client's buffer
  EXPECT_EQ(kInvalid, getrf(ws));
  EXPECT_EQ(kInvalid, getrf(0));
  g_seen.lwork = 0;  // no workspace: NULL is fine
  EXPECT_EQ(0u, getrf(0));
  EXPECT_EQ(2, g_seen.calls);
}

TEST_F(CusolverRows, EveryPointerOfABatchedCallsArrayIsChecked) {
  const uint64_t b = env.allocate(kMatrix);
  const uint64_t good = array({a, b, a});
  EXPECT_EQ(0u, potrf_batched(good, 3).code);
  ASSERT_EQ(1, g_seen.calls);
  // The library read rgpud's copy of the checked pointers, not the client's
  // array (which the client could rewrite once checked).
  EXPECT_NE(reinterpret_cast<uint64_t>(g_seen.array), good);
  EXPECT_EQ((std::vector<uint64_t>{a, b, a}), g_seen.pointers);

  int on_stack = 0;
  EXPECT_EQ(kInvalid, potrf_batched(array({a, reinterpret_cast<uint64_t>(&on_stack), b}), 3).code);
  EXPECT_EQ(kInvalid, potrf_batched(array({a, b, small}), 3).code);  // one matrix too small
  EXPECT_EQ(kInvalid, potrf_batched(array({a, 0, b}), 3).code);
  // A batch longer than the array, one whose infos do not fit, a negative one.
  EXPECT_EQ(kInvalid, potrf_batched(array({a, b}), 3).code);
  EXPECT_EQ(kInvalid, potrf_batched(array({a, b, a, b}), 4).code);
  EXPECT_EQ(kInvalid, potrf_batched(good, -1).code);
  // The array itself must be memory of this context.
  std::vector<uint64_t> host{a, b, a};
  EXPECT_EQ(kInvalid, potrf_batched(reinterpret_cast<uint64_t>(host.data()), 3).code);
  EXPECT_EQ(1, g_seen.calls);
}

TEST_F(CusolverRows, CublasBatchedLuChecksItsArrayTheSameWay) {
  auto getrf = [&](uint64_t arr, int batch) {
    ArgWriter w;
    blas::pack_cublasSgetrfBatched(w, blas_handle, kN, arr, kN, 0, info, batch);
    return run(wire::Api::CUBLAS, blas::k_cublasSgetrfBatched, w).code;
  };
  EXPECT_EQ(0u, getrf(array({a, a}), 2));
  int on_stack = 0;
  EXPECT_EQ(static_cast<uint32_t>(CUBLAS_STATUS_INVALID_VALUE),
            getrf(array({a, reinterpret_cast<uint64_t>(&on_stack)}), 2));
  EXPECT_EQ(static_cast<uint32_t>(CUBLAS_STATUS_INVALID_VALUE), getrf(array({small, a}), 2));
  EXPECT_EQ(1, g_seen.calls);
}

}  // namespace
}  // namespace rgpu::server::apigen_test
