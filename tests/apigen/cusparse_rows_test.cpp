// cuSPARSE's hand-written rows (server/src/cusparse_rows.cpp) against a fake
// session and a fake cuSPARSE table: a valid SpMM and SpMV reach the library
// with its descriptors rebuilt from the wire and destroyed after; every
// array a descriptor names is checked for the extent its sizes give (row
// offsets, column indices, values, dense operands with their leading
// dimension, batches), so a too-short array is refused before the library
// runs; shapes that disagree, a forged handle, a pointer mode the handle
// does not have, a buffer shorter than the library asks for, and every
// truncation are refused too.
#include <gtest/gtest.h>
#include <cusparse.h>

#include <cstring>
#include <vector>

#include "fakes.h"
#include "library_tables.h"
#include "rgpu/protocol/cusparse_wire.h"

namespace rgpu::server::apigen_test {
namespace {

namespace sw = protocol::cusparse;
using protocol::ArgWriter;
constexpr auto kKind = static_cast<protocol::HandleKind>(sw::kHandleKind);

// What the fake cuSPARSE saw.
struct FakeSparse {
  int created = 0, destroyed = 0, spmm = 0, spmv = 0;
  size_t buffer = 0;  // what _bufferSize answers
  cusparsePointerMode_t mode = CUSPARSE_POINTER_MODE_HOST;
  int64_t rows = -1, nnz = -1, batch = 1, ld = -1;
  float alpha = 0;
};
FakeSparse g;
int g_object[8];  // addresses handed out as the library's objects

cusparseStatus_t fake_get_mode(cusparseHandle_t, cusparsePointerMode_t* m) {
  *m = g.mode;
  return CUSPARSE_STATUS_SUCCESS;
}
cusparseStatus_t fake_csr(cusparseSpMatDescr_t* d, int64_t rows, int64_t, int64_t nnz, void*, void*, void*,
                          cusparseIndexType_t, cusparseIndexType_t, cusparseIndexBase_t, cudaDataType) {
  ++g.created;
  g.rows = rows;
  g.nnz = nnz;
  *d = reinterpret_cast<cusparseSpMatDescr_t>(&g_object[0]);
  return CUSPARSE_STATUS_SUCCESS;
}
cusparseStatus_t fake_coo(cusparseSpMatDescr_t* d, int64_t rows, int64_t, int64_t nnz, void*, void*, void*,
                          cusparseIndexType_t, cusparseIndexBase_t, cudaDataType) {
  ++g.created;
  g.rows = rows;
  g.nnz = nnz;
  *d = reinterpret_cast<cusparseSpMatDescr_t>(&g_object[1]);
  return CUSPARSE_STATUS_SUCCESS;
}
cusparseStatus_t fake_dnmat(cusparseDnMatDescr_t* d, int64_t, int64_t, int64_t ld, void*, cudaDataType,
                            cusparseOrder_t) {
  ++g.created;
  g.ld = ld;
  *d = reinterpret_cast<cusparseDnMatDescr_t>(&g_object[2]);
  return CUSPARSE_STATUS_SUCCESS;
}
cusparseStatus_t fake_dnvec(cusparseDnVecDescr_t* d, int64_t, void*, cudaDataType) {
  ++g.created;
  *d = reinterpret_cast<cusparseDnVecDescr_t>(&g_object[3]);
  return CUSPARSE_STATUS_SUCCESS;
}
cusparseStatus_t fake_destroy_sp(cusparseConstSpMatDescr_t) { return ++g.destroyed, CUSPARSE_STATUS_SUCCESS; }
cusparseStatus_t fake_destroy_dm(cusparseConstDnMatDescr_t) { return ++g.destroyed, CUSPARSE_STATUS_SUCCESS; }
cusparseStatus_t fake_destroy_dv(cusparseConstDnVecDescr_t) { return ++g.destroyed, CUSPARSE_STATUS_SUCCESS; }
cusparseStatus_t fake_csr_batch(cusparseSpMatDescr_t, int b, int64_t, int64_t) {
  g.batch = b;
  return CUSPARSE_STATUS_SUCCESS;
}
cusparseStatus_t fake_dnmat_batch(cusparseDnMatDescr_t, int, int64_t) { return CUSPARSE_STATUS_SUCCESS; }
cusparseStatus_t fake_spmm_size(cusparseHandle_t, cusparseOperation_t, cusparseOperation_t, const void*,
                                cusparseConstSpMatDescr_t, cusparseConstDnMatDescr_t, const void*,
                                cusparseDnMatDescr_t, cudaDataType, cusparseSpMMAlg_t, size_t* size) {
  *size = g.buffer;
  return CUSPARSE_STATUS_SUCCESS;
}
cusparseStatus_t fake_spmm(cusparseHandle_t, cusparseOperation_t, cusparseOperation_t, const void* alpha,
                           cusparseConstSpMatDescr_t, cusparseConstDnMatDescr_t, const void*, cusparseDnMatDescr_t,
                           cudaDataType, cusparseSpMMAlg_t, void*) {
  ++g.spmm;
  if (g.mode == CUSPARSE_POINTER_MODE_HOST) std::memcpy(&g.alpha, alpha, 4);
  return CUSPARSE_STATUS_SUCCESS;
}
cusparseStatus_t fake_spmv_size(cusparseHandle_t, cusparseOperation_t, const void*, cusparseConstSpMatDescr_t,
                                cusparseConstDnVecDescr_t, const void*, cusparseDnVecDescr_t, cudaDataType,
                                cusparseSpMVAlg_t, size_t* size) {
  *size = g.buffer;
  return CUSPARSE_STATUS_SUCCESS;
}
cusparseStatus_t fake_spmv(cusparseHandle_t, cusparseOperation_t, const void*, cusparseConstSpMatDescr_t,
                           cusparseConstDnVecDescr_t, const void*, cusparseDnVecDescr_t, cudaDataType,
                           cusparseSpMVAlg_t, void*) {
  ++g.spmv;
  return CUSPARSE_STATUS_SUCCESS;
}

int g_sddmm = 0;
cusparseStatus_t fake_sddmm_size(cusparseHandle_t, cusparseOperation_t, cusparseOperation_t, const void*,
                                 cusparseConstDnMatDescr_t, cusparseConstDnMatDescr_t, const void*,
                                 cusparseSpMatDescr_t, cudaDataType, cusparseSDDMMAlg_t, size_t* size) {
  *size = g.buffer;
  return CUSPARSE_STATUS_SUCCESS;
}
cusparseStatus_t fake_sddmm(cusparseHandle_t, cusparseOperation_t, cusparseOperation_t, const void*,
                            cusparseConstDnMatDescr_t, cusparseConstDnMatDescr_t, const void*, cusparseSpMatDescr_t,
                            cudaDataType, cusparseSDDMMAlg_t, void*) {
  ++g_sddmm;
  return CUSPARSE_STATUS_SUCCESS;
}

std::span<const std::byte> view(const std::vector<std::byte>& v) { return {v.data(), v.size()}; }

// A 6 x 5 CSR matrix with 9 stored entries, B 5 x 3, C 6 x 3, float.
class CusparseRows : public ::testing::Test {
 protected:
  void SetUp() override {
    g = FakeSparse{};
    table.cusparseGetPointerMode = fake_get_mode;
    table.cusparseCreateCsr = fake_csr;
    table.cusparseCreateCoo = fake_coo;
    table.cusparseCreateDnMat = fake_dnmat;
    table.cusparseCreateDnVec = fake_dnvec;
    table.cusparseDestroySpMat = fake_destroy_sp;
    table.cusparseDestroyDnMat = fake_destroy_dm;
    table.cusparseDestroyDnVec = fake_destroy_dv;
    table.cusparseCsrSetStridedBatch = fake_csr_batch;
    table.cusparseDnMatSetStridedBatch = fake_dnmat_batch;
    table.cusparseSpMM_bufferSize = fake_spmm_size;
    table.cusparseSpMM = fake_spmm;
    table.cusparseSpMV_bufferSize = fake_spmv_size;
    table.cusparseSpMV = fake_spmv;
    table.cusparseSDDMM_bufferSize = fake_sddmm_size;
    table.cusparseSDDMM_preprocess = fake_sddmm;
    table.cusparseSDDMM = fake_sddmm;
    g_sddmm = 0;
    env.set_library(CusparseTable::kIndex, &table);
    env.put(kKind, handle, &g_object[7]);
    offsets = env.allocate(7 * 4);
    cols = env.allocate(9 * 4);
    vals = env.allocate(9 * 4);
    bmem = env.allocate(5 * 3 * 4);
    cmem = env.allocate(6 * 3 * 4);
    a.format = sw::kFormatCsr;
    a.rows = 6;
    a.cols = 5;
    a.nnz = 9;
    a.rows_ptr = offsets;
    a.cols_ptr = cols;
    a.values = vals;
    a.offsets_type = a.index_type = CUSPARSE_INDEX_32I;
    a.value_type = CUDA_R_32F;
    b = dense(5, 3, bmem);
    c = dense(6, 3, cmem);
  }
  static sw::DnMat dense(int64_t rows, int64_t cols, uint64_t p) {
    sw::DnMat m;
    m.rows = rows;
    m.cols = cols;
    m.ld = rows;
    m.values = p;
    m.value_type = CUDA_R_32F;
    return m;
  }
  // The client's packing (client-shim/src/cusparse/calls.cpp).
  void scalar(ArgWriter& w, float v, uint64_t device = 0) {
    w.u64(device ? sw::kPointerDevice : sw::kPointerHost);
    if (device) {
      w.u64(device);
    } else {
      w.buffer(&v, 4);
    }
  }
  ArgWriter spmm(bool query, uint64_t buffer = 0, uint64_t device_scalar = 0) {
    ArgWriter w;
    w.u64(handle);
    w.scalar(int32_t(0));
    w.scalar(int32_t(0));
    w.scalar(int32_t(CUDA_R_32F));
    w.scalar(int32_t(0));
    scalar(w, 2.5f, device_scalar);
    sw::write(w, a);
    sw::write(w, b);
    scalar(w, 0.0f, device_scalar);
    sw::write(w, c);
    if (!query) w.u64(buffer);
    return w;
  }
  InvokeOutcome run(uint32_t fn, const ArgWriter& w) {
    const DispatchRow* row = find_row(wire::Api::CUSPARSE, fn);
    EXPECT_NE(nullptr, row);
    return row ? row->run(env, view(w.bytes())) : InvokeOutcome{};
  }
  void expect_refused(const ArgWriter& w, const char* what) {
    InvokeOutcome out = run(sw::kSpMM, w);
    EXPECT_EQ(uint32_t(CUSPARSE_STATUS_INVALID_VALUE), out.code) << what;
    EXPECT_EQ(0, g.spmm) << what;
    EXPECT_EQ(0, g.created) << what << ": refused before any descriptor is made";
  }

  CusparseTable table;
  FakeEnv env{fake_driver()};
  const uint64_t handle = protocol::make_handle(kKind, 0x700);
  uint64_t offsets = 0, cols = 0, vals = 0, bmem = 0, cmem = 0;
  sw::SpMat a;
  sw::DnMat b, c;
};

TEST_F(CusparseRows, ValidSpMMReachesTheLibraryWithItsDescriptorsRebuilt) {
  InvokeOutcome out = run(sw::kSpMM, spmm(false));
  ASSERT_EQ(0u, out.code) << out.message;
  EXPECT_EQ(1, g.spmm);
  EXPECT_EQ(2.5f, g.alpha);
  EXPECT_EQ(6, g.rows);
  EXPECT_EQ(9, g.nnz);
  EXPECT_EQ(3, g.created);
  EXPECT_EQ(3, g.destroyed);  // destroyed when the row returns
}

TEST_F(CusparseRows, BufferSizeIsTheLibrarysAndTheBufferIsCheckedForIt) {
  g.buffer = 256;
  InvokeOutcome out = run(sw::kSpMMBufferSize, spmm(true));
  ASSERT_EQ(0u, out.code) << out.message;
  protocol::ArgReader rd(view(out.out));
  uint64_t size = 0;
  ASSERT_TRUE(rd.u64(&size));
  EXPECT_EQ(256u, size);
  const uint64_t small = env.allocate(128), enough = env.allocate(256);
  EXPECT_EQ(uint32_t(CUSPARSE_STATUS_INVALID_VALUE), run(sw::kSpMM, spmm(false, small)).code);
  EXPECT_EQ(uint32_t(CUSPARSE_STATUS_INVALID_VALUE), run(sw::kSpMM, spmm(false, 0)).code);
  EXPECT_EQ(0, g.spmm);
  EXPECT_EQ(0u, run(sw::kSpMM, spmm(false, enough)).code);
  EXPECT_EQ(1, g.spmm);
}

TEST_F(CusparseRows, RowOffsetsShorterThanRowsPlusOneAreRefused) {
  a.rows = 7;  // 8 offsets: 32 bytes of a 28-byte array
  c = dense(7, 3, env.allocate(7 * 3 * 4));
  expect_refused(spmm(false), "row offsets");
}

TEST_F(CusparseRows, ColumnIndicesOrValuesShorterThanNnzAreRefused) {
  a.nnz = 10;
  expect_refused(spmm(false), "nnz past both arrays");
  a.nnz = 9;
  a.index_type = CUSPARSE_INDEX_64I;  // 72 bytes of a 36-byte array
  expect_refused(spmm(false), "64-bit column indices");
  a.index_type = CUSPARSE_INDEX_32I;
  a.value_type = CUDA_R_64F;
  b.value_type = c.value_type = CUDA_R_64F;
  expect_refused(spmm(false), "double values");
}

TEST_F(CusparseRows, ArraysOutsideTheSessionAreRefused) {
  a.cols_ptr = 0x1000;
  expect_refused(spmm(false), "column indices at a foreign address");
  a.cols_ptr = cols;
  a.values = vals + 4;  // inside, but 9 values then run past the end
  expect_refused(spmm(false), "values off by one element");
}

TEST_F(CusparseRows, DenseOperandsAreCheckedForTheirLeadingDimensionAndBatch) {
  c.ld = 7;  // (3 - 1) * 7 + 6 = 20 floats of an 18-float array
  expect_refused(spmm(false), "C's leading dimension");
  c.ld = 6;
  c.order = sw::kOrderRow;  // row order: ld must cover the 3 columns, and 6 rows of 6: past the array
  expect_refused(spmm(false), "C in row order with ld 6");
  c.order = sw::kOrderCol;
  b.batch = c.batch = 2;
  b.stride = 15;
  c.stride = 18;
  expect_refused(spmm(false), "a second batch past B and C");
  b.ld = 2;  // below its rows
  b.batch = c.batch = 1;
  expect_refused(spmm(false), "a leading dimension below the rows");
}

TEST_F(CusparseRows, ABatchOfCsrMatricesIsCheckedForEveryBatch) {
  a.batch = 2;
  a.offsets_stride = 7;
  a.values_stride = 9;
  c.batch = 2;
  c.stride = 18;
  c.values = env.allocate(2 * 18 * 4);
  expect_refused(spmm(false), "a second batch past A's arrays");
  a.rows_ptr = env.allocate(14 * 4);
  a.cols_ptr = env.allocate(18 * 4);
  a.values = env.allocate(18 * 4);
  InvokeOutcome out = run(sw::kSpMM, spmm(false));
  ASSERT_EQ(0u, out.code) << out.message;
  EXPECT_EQ(2, g.batch);
}

TEST_F(CusparseRows, ShapesThatDisagreeAndNegativeSizesAreRefused) {
  b = dense(4, 3, bmem);
  expect_refused(spmm(false), "B's rows are not A's columns");
  b = dense(5, 3, bmem);
  a.nnz = -1;
  expect_refused(spmm(false), "a negative nnz");
  a.nnz = 9;
  a.format = 6;  // BSR: not checked by rgpud
  expect_refused(spmm(false), "an unchecked format");
}

TEST_F(CusparseRows, ForgedHandleAndPointerModeMismatchAreRefused) {
  ArgWriter forged = spmm(false);
  auto bytes = forged.take();
  std::vector<std::byte> copy = bytes;
  const uint64_t wrong = protocol::make_handle(kKind, 0x701);
  std::memcpy(copy.data(), &wrong, 8);
  EXPECT_EQ(uint32_t(CUSPARSE_STATUS_INVALID_VALUE), find_row(wire::Api::CUSPARSE, sw::kSpMM)->run(env, view(copy)).code);
  g.mode = CUSPARSE_POINTER_MODE_DEVICE;  // the client packed host values
  EXPECT_EQ(uint32_t(CUSPARSE_STATUS_INVALID_VALUE), run(sw::kSpMM, spmm(false)).code);
  EXPECT_EQ(uint32_t(CUSPARSE_STATUS_INVALID_VALUE), run(sw::kSpMM, spmm(false, 0, 0x1000)).code)
      << "a device scalar outside the session";
  EXPECT_EQ(0u, run(sw::kSpMM, spmm(false, 0, cmem)).code);
  EXPECT_EQ(1, g.spmm);
}

TEST_F(CusparseRows, SpMVChecksTheVectors) {
  auto vec = [](int64_t n, uint64_t p) {
    sw::DnVec v;
    v.size = n;
    v.values = p;
    v.value_type = CUDA_R_32F;
    return v;
  };
  auto call = [&](const sw::DnVec& x, const sw::DnVec& y) {
    ArgWriter w;
    w.u64(handle);
    w.scalar(int32_t(0));
    w.scalar(int32_t(CUDA_R_32F));
    w.scalar(int32_t(0));
    scalar(w, 1.0f);
    sw::write(w, a);
    sw::write(w, x);
    scalar(w, 0.0f);
    sw::write(w, y);
    w.u64(0);
    return run(sw::kSpMV, w).code;
  };
  const uint64_t x = env.allocate(5 * 4), y = env.allocate(6 * 4);
  EXPECT_EQ(0u, call(vec(5, x), vec(6, y)));
  EXPECT_EQ(1, g.spmv);
  EXPECT_EQ(uint32_t(CUSPARSE_STATUS_INVALID_VALUE), call(vec(5, x), vec(6, x))) << "y past x's 5 floats";
  EXPECT_EQ(uint32_t(CUSPARSE_STATUS_INVALID_VALUE), call(vec(6, x), vec(6, y))) << "x's size is not A's columns";
  EXPECT_EQ(1, g.spmv);
}

TEST_F(CusparseRows, SddmmChecksItsSparseOutputAndDenseOperands) {
  // C (the sparse output) = A (6 x 4) B (4 x 5) at A's pattern above.
  auto call = [&](uint32_t fn, const sw::DnMat& da, const sw::DnMat& db, const sw::SpMat& c) {
    ArgWriter w;
    w.u64(handle);
    w.scalar(int32_t(0));
    w.scalar(int32_t(0));
    w.scalar(int32_t(CUDA_R_32F));
    w.scalar(int32_t(0));
    scalar(w, 1.0f);
    sw::write(w, da);
    sw::write(w, db);
    scalar(w, 0.0f);
    sw::write(w, c);
    w.u64(0);
    return run(fn, w).code;
  };
  const sw::DnMat da = dense(6, 4, env.allocate(6 * 4 * 4)), db = dense(4, 5, env.allocate(4 * 5 * 4));
  EXPECT_EQ(0u, call(sw::kSDDMMPreprocess, da, db, a));
  EXPECT_EQ(0u, call(sw::kSDDMM, da, db, a));
  EXPECT_EQ(2, g_sddmm);
  sw::SpMat c = a;
  c.nnz = 10;  // values and column indices hold 9
  EXPECT_EQ(uint32_t(CUSPARSE_STATUS_INVALID_VALUE), call(sw::kSDDMM, da, db, c));
  c = a;
  c.format = sw::kFormatCoo;
  EXPECT_EQ(uint32_t(CUSPARSE_STATUS_INVALID_VALUE), call(sw::kSDDMM, da, db, c)) << "SDDMM's output is CSR";
  sw::DnMat wide = db;
  wide.ld = 5;  // (5 - 1) * 5 + 4 = 24 floats of a 20-float array
  EXPECT_EQ(uint32_t(CUSPARSE_STATUS_INVALID_VALUE), call(sw::kSDDMM, da, wide, a));
  EXPECT_EQ(2, g_sddmm);
}

TEST_F(CusparseRows, EveryTruncationIsRefused) {
  const auto full = spmm(false).take();
  for (size_t n = 0; n < full.size(); n += 8) {
    std::vector<std::byte> cut(full.begin(), full.begin() + std::ptrdiff_t(n));
    EXPECT_EQ(uint32_t(CUSPARSE_STATUS_INVALID_VALUE),
              find_row(wire::Api::CUSPARSE, sw::kSpMM)->run(env, view(cut)).code) << n;
  }
  EXPECT_EQ(0, g.spmm);
}

}  // namespace
}  // namespace rgpu::server::apigen_test
