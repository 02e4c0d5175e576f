// The cuSPARSE stand-in: SpMM and SpMV on CSR and COO matrices against a
// dense reference (transposes, row-major operands, one-based indices,
// alpha and beta, float and double, device scalars, a strided batch), the
// COO-to-CSR conversion, SDDMM, and untrusted input: an index out of range, CSR
// offsets that go backwards or past nnz, and arrays shorter than their
// descriptors are refused with an error and never read or written past.
#include <cusparse.h>
#include <dlfcn.h>

#include <vector>

#include "../cpu-device/cuda_lib.h"

namespace {

#define RGPU_SPARSE_FUNCTIONS(X)                                                                        \
  X(cusparseCreate) X(cusparseDestroy) X(cusparseSetStream) X(cusparseSetPointerMode)                   \
  X(cusparseCreateCsr) X(cusparseCreateCoo) X(cusparseCreateDnMat) X(cusparseCreateDnVec)               \
  X(cusparseDestroySpMat) X(cusparseDestroyDnMat) X(cusparseDestroyDnVec) X(cusparseCsrSetStridedBatch)  \
  X(cusparseDnMatSetStridedBatch) X(cusparseSpMM_bufferSize) X(cusparseSpMM) X(cusparseSpMV_bufferSize)  \
  X(cusparseSpMV) X(cusparseXcoo2csr) X(cusparseSDDMM_bufferSize) X(cusparseSDDMM_preprocess) X(cusparseSDDMM)

struct SparseLib {
#define RGPU_SPARSE_MEMBER(name) decltype(&::name) name = nullptr;
  RGPU_SPARSE_FUNCTIONS(RGPU_SPARSE_MEMBER)
#undef RGPU_SPARSE_MEMBER
  void* handle = nullptr;
  std::string missing;
};

SparseLib& sparse() {
  static SparseLib* shared = [] {
    rgpu::cpudev::test::lib();  // the CPU device first: the stand-in's DT_NEEDED resolves to it
    auto* l = new SparseLib();  // lives for the process, like the loaded library
    l->handle = dlopen(RGPU_CPU_CUSPARSE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (l->handle) {
#define RGPU_SPARSE_RESOLVE(name)                                             \
  l->name = reinterpret_cast<decltype(l->name)>(dlsym(l->handle, #name));     \
  if (!l->name) l->missing += #name " ";
      RGPU_SPARSE_FUNCTIONS(RGPU_SPARSE_RESOLVE)
#undef RGPU_SPARSE_RESOLVE
    }
    return l;
  }();
  return *shared;
}

#define SP_OK(expr) ASSERT_EQ(CUSPARSE_STATUS_SUCCESS, (expr))

// A 4 x 5 matrix with an empty row:
//   [1 0 2 0 0]
//   [0 0 0 0 0]
//   [0 3 0 4 5]
//   [6 0 0 0 7]
const std::vector<int32_t> kOffsets = {0, 2, 2, 5, 7};
const std::vector<int32_t> kRows = {0, 0, 2, 2, 2, 3, 3};
const std::vector<int32_t> kCols = {0, 2, 1, 3, 4, 0, 4};
const std::vector<double> kVals = {1, 2, 3, 4, 5, 6, 7};
constexpr int64_t kM = 4, kK = 5;

double a_at(int64_t i, int64_t j) {
  for (size_t e = 0; e < kRows.size(); ++e) {
    if (kRows[e] == i && kCols[e] == j) return kVals[e];
  }
  return 0;
}

class SparseTest : public rgpu::cpudev::test::CpuDeviceTest {
 public:  // the free helpers below use the fixture's helpers
  void SetUp() override {
    CpuDeviceTest::SetUp();
    ASSERT_NE(nullptr, s.handle) << dlerror();
    ASSERT_EQ("", s.missing);
    SP_OK(s.cusparseCreate(&h));
  }
  void TearDown() override {
    for (auto d : sp_) s.cusparseDestroySpMat(d);
    for (auto d : dm_) s.cusparseDestroyDnMat(d);
    for (auto d : dv_) s.cusparseDestroyDnVec(d);
    if (ctx) {
      EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSynchronize());
    }
    if (h) {
      EXPECT_EQ(CUSPARSE_STATUS_SUCCESS, s.cusparseDestroy(h));
    }
    for (CUdeviceptr p : allocations_) cu.cuMemFree(p);
    CpuDeviceTest::TearDown();
  }
  template <class T>
  CUdeviceptr upload(const std::vector<T>& v) {
    CUdeviceptr p = 0;
    EXPECT_EQ(CUDA_SUCCESS, cu.cuMemAlloc(&p, std::max<size_t>(1, v.size()) * sizeof(T)));
    if (!p) return 0;
    allocations_.push_back(p);
    if (!v.empty()) {
      EXPECT_EQ(CUDA_SUCCESS, cu.cuMemcpyHtoD(p, v.data(), v.size() * sizeof(T)));
    }
    return p;
  }
  template <class T>
  std::vector<T> download(CUdeviceptr p, size_t n) {
    std::vector<T> v(n);
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSynchronize());
    EXPECT_EQ(CUDA_SUCCESS, cu.cuMemcpyDtoH(v.data(), p, n * sizeof(T)));
    return v;
  }
  template <class T>
  std::vector<T> values() {
    return std::vector<T>(kVals.begin(), kVals.end());
  }
  cusparseSpMatDescr_t csr(CUdeviceptr off, CUdeviceptr col, CUdeviceptr val, cudaDataType t, int64_t nnz = 7,
                           cusparseIndexBase_t base = CUSPARSE_INDEX_BASE_ZERO) {
    cusparseSpMatDescr_t d = nullptr;
    EXPECT_EQ(CUSPARSE_STATUS_SUCCESS, s.cusparseCreateCsr(&d, kM, kK, nnz, (void*)off, (void*)col, (void*)val,
                                                           CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, base, t));
    sp_.push_back(d);
    return d;
  }
  cusparseSpMatDescr_t coo(CUdeviceptr row, CUdeviceptr col, CUdeviceptr val, cudaDataType t) {
    cusparseSpMatDescr_t d = nullptr;
    EXPECT_EQ(CUSPARSE_STATUS_SUCCESS, s.cusparseCreateCoo(&d, kM, kK, 7, (void*)row, (void*)col, (void*)val,
                                                           CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, t));
    sp_.push_back(d);
    return d;
  }
  cusparseDnMatDescr_t dense(int64_t rows, int64_t cols, int64_t ld, CUdeviceptr p, cudaDataType t,
                             cusparseOrder_t order = CUSPARSE_ORDER_COL) {
    cusparseDnMatDescr_t d = nullptr;
    EXPECT_EQ(CUSPARSE_STATUS_SUCCESS, s.cusparseCreateDnMat(&d, rows, cols, ld, (void*)p, t, order));
    dm_.push_back(d);
    return d;
  }
  cusparseDnVecDescr_t vec(int64_t n, CUdeviceptr p, cudaDataType t) {
    cusparseDnVecDescr_t d = nullptr;
    EXPECT_EQ(CUSPARSE_STATUS_SUCCESS, s.cusparseCreateDnVec(&d, n, (void*)p, t));
    dv_.push_back(d);
    return d;
  }

  CUresult synchronize() { return cu.cuCtxSynchronize(); }

  SparseLib& s = sparse();
  cusparseHandle_t h = nullptr;

 private:
  std::vector<CUdeviceptr> allocations_;
  std::vector<cusparseSpMatDescr_t> sp_;
  std::vector<cusparseDnMatDescr_t> dm_;
  std::vector<cusparseDnVecDescr_t> dv_;
};

double b_val(int64_t i, int64_t j) { return double((i * 7 + j * 3) % 11) - 5; }

// C (m x n, column-major unless row_major) = alpha op(A) B + beta C0,
// where C0(i, j) = i - j.
std::vector<double> reference(bool ta, int64_t n, double alpha, double beta) {
  const int64_t m = ta ? kK : kM, k = ta ? kM : kK;
  std::vector<double> c(size_t(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t l = 0; l < k; ++l) sum += (ta ? a_at(l, i) : a_at(i, l)) * b_val(l, j);
      c[size_t(i + j * m)] = alpha * sum + beta * double(i - j);
    }
  }
  return c;
}

template <class T>
std::vector<T> b_matrix(int64_t k, int64_t n, bool row_major) {
  std::vector<T> b(size_t(k * n));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j) b[size_t(row_major ? i * n + j : i + j * k)] = T(b_val(i, j));
  return b;
}

template <class T>
std::vector<T> c_matrix(int64_t m, int64_t n, bool row_major) {
  std::vector<T> c(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[size_t(row_major ? i * n + j : i + j * m)] = T(i - j);
  return c;
}

struct Case {
  bool coo, transpose, row_major, f64;
};

class SpMMCases : public SparseTest, public ::testing::WithParamInterface<Case> {};

template <class T>
void run_case(SparseTest& t, SparseLib& s, cusparseHandle_t h, const Case& c, CUdeviceptr rows, CUdeviceptr cols,
              CUdeviceptr vals, cusparseSpMatDescr_t a) {
  (void)rows, (void)cols, (void)vals;
  const cudaDataType type = c.f64 ? CUDA_R_64F : CUDA_R_32F;
  const int64_t n = 3, m = c.transpose ? kK : kM, k = c.transpose ? kM : kK;
  const auto order = c.row_major ? CUSPARSE_ORDER_ROW : CUSPARSE_ORDER_COL;
  CUdeviceptr bp = t.upload(b_matrix<T>(k, n, c.row_major)), cp = t.upload(c_matrix<T>(m, n, c.row_major));
  auto bd = t.dense(k, n, c.row_major ? n : k, bp, type, order), cd = t.dense(m, n, c.row_major ? n : m, cp, type, order);
  const T alpha = T(1.5), beta = T(-0.5);
  const auto op = c.transpose ? CUSPARSE_OPERATION_TRANSPOSE : CUSPARSE_OPERATION_NON_TRANSPOSE;
  size_t bytes = 1;
  SP_OK(s.cusparseSpMM_bufferSize(h, op, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a, bd, &beta, cd, type,
                                  CUSPARSE_SPMM_ALG_DEFAULT, &bytes));
  EXPECT_EQ(0u, bytes);
  SP_OK(s.cusparseSpMM(h, op, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a, bd, &beta, cd, type,
                       CUSPARSE_SPMM_ALG_DEFAULT, nullptr));
  auto got = t.download<T>(cp, size_t(m * n));
  auto want = reference(c.transpose, n, 1.5, -0.5);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      EXPECT_NEAR(want[size_t(i + j * m)], double(got[size_t(c.row_major ? i * n + j : i + j * m)]), 1e-5)
          << "at " << i << "," << j;
}

TEST_P(SpMMCases, MatchesTheDenseReference) {
  const Case c = GetParam();
  const cudaDataType type = c.f64 ? CUDA_R_64F : CUDA_R_32F;
  CUdeviceptr rows = upload(c.coo ? kRows : kOffsets), cols = upload(kCols);
  CUdeviceptr vals = c.f64 ? upload(values<double>()) : upload(values<float>());
  auto a = c.coo ? coo(rows, cols, vals, type) : csr(rows, cols, vals, type);
  if (c.f64) {
    run_case<double>(*this, s, h, c, rows, cols, vals, a);
  } else {
    run_case<float>(*this, s, h, c, rows, cols, vals, a);
  }
}

INSTANTIATE_TEST_SUITE_P(All, SpMMCases,
                         ::testing::Values(Case{false, false, false, false}, Case{false, true, false, false},
                                           Case{false, false, true, true}, Case{false, true, true, true},
                                           Case{true, false, false, true}, Case{true, true, false, false},
                                           Case{true, false, true, false}, Case{true, true, true, true}));

TEST_F(SparseTest, SpMVWithOneBasedIndicesAndDeviceScalars) {
  std::vector<int32_t> off1 = kOffsets, col1 = kCols;
  for (auto& v : off1) ++v;
  for (auto& v : col1) ++v;
  CUdeviceptr off = upload(off1), col = upload(col1), val = upload(values<double>());
  auto a = csr(off, col, val, CUDA_R_64F, 7, CUSPARSE_INDEX_BASE_ONE);
  std::vector<double> x = {1, -1, 2, 0.5, 3}, y0 = {10, 20, 30, 40};
  CUdeviceptr xp = upload(x), yp = upload(y0), scal = upload(std::vector<double>{2.0, 0.25});
  auto xd = vec(kK, xp, CUDA_R_64F), yd = vec(kM, yp, CUDA_R_64F);
  SP_OK(s.cusparseSetPointerMode(h, CUSPARSE_POINTER_MODE_DEVICE));
  SP_OK(s.cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, (void*)scal, a, xd, (void*)(scal + 8), yd, CUDA_R_64F,
                       CUSPARSE_SPMV_ALG_DEFAULT, nullptr));
  auto y = download<double>(yp, 4);
  for (int64_t i = 0; i < kM; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < kK; ++j) sum += a_at(i, j) * x[size_t(j)];
    EXPECT_DOUBLE_EQ(2.0 * sum + 0.25 * y0[size_t(i)], y[size_t(i)]) << "row " << i;
  }
}

TEST_F(SparseTest, StridedBatchOfCsrMatrices) {
  // Two batches: the same pattern, the second's values doubled.
  std::vector<int32_t> off = kOffsets, col = kCols;
  off.insert(off.end(), kOffsets.begin(), kOffsets.end());
  col.insert(col.end(), kCols.begin(), kCols.end());
  std::vector<float> val = values<float>();
  for (double v : kVals) val.push_back(float(2 * v));
  CUdeviceptr offp = upload(off), colp = upload(col), valp = upload(val);
  auto a = csr(offp, colp, valp, CUDA_R_32F);
  SP_OK(s.cusparseCsrSetStridedBatch(a, 2, 5, 7));
  std::vector<float> b = b_matrix<float>(kK, 2, false);
  b.insert(b.end(), b.begin(), b.end());
  CUdeviceptr bp = upload(b), cp = upload(std::vector<float>(2 * kM * 2, 99.0f));
  auto bd = dense(kK, 2, kK, bp, CUDA_R_32F), cd = dense(kM, 2, kM, cp, CUDA_R_32F);
  SP_OK(s.cusparseDnMatSetStridedBatch(bd, 2, kK * 2));
  SP_OK(s.cusparseDnMatSetStridedBatch(cd, 2, kM * 2));
  const float one = 1, zero = 0;
  SP_OK(s.cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, bd, &zero, cd,
                       CUDA_R_32F, CUSPARSE_SPMM_CSR_ALG1, nullptr));
  auto c = download<float>(cp, size_t(2 * kM * 2));
  auto want = reference(false, 2, 1.0, 0.0);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_FLOAT_EQ(float(want[i]), c[i]) << i;
    EXPECT_FLOAT_EQ(float(2 * want[i]), c[want.size() + i]) << i;
  }
}

TEST_F(SparseTest, CooToCsr) {
  CUdeviceptr rows = upload(kRows), out = upload(std::vector<int32_t>(kM + 1, -1));
  SP_OK(s.cusparseXcoo2csr(h, reinterpret_cast<const int*>(rows), 7, int(kM), reinterpret_cast<int*>(out),
                           CUSPARSE_INDEX_BASE_ZERO));
  EXPECT_EQ(kOffsets, download<int32_t>(out, kM + 1));
}

TEST_F(SparseTest, SddmmSamplesTheDenseProductAtThePattern) {
  // C (kM x kK, the pattern above) = 2 * (A B)(r, c) - 1 * C at each stored entry,
  // A kM x 3 row-major, B 3 x kK column-major.
  const int64_t k = 3;
  std::vector<double> a(size_t(kM * k)), b(size_t(k * kK));
  for (int64_t i = 0; i < kM; ++i)
    for (int64_t l = 0; l < k; ++l) a[size_t(i * k + l)] = double(i + 2 * l) - 1;
  for (int64_t l = 0; l < k; ++l)
    for (int64_t j = 0; j < kK; ++j) b[size_t(l + j * k)] = double(3 * l - j);
  CUdeviceptr off = upload(kOffsets), col = upload(kCols), val = upload(values<double>());
  CUdeviceptr ap = upload(a), bp = upload(b);
  auto c = csr(off, col, val, CUDA_R_64F);
  auto ad = dense(kM, k, k, ap, CUDA_R_64F, CUSPARSE_ORDER_ROW), bd = dense(k, kK, k, bp, CUDA_R_64F);
  const double alpha = 2, beta = -1;
  const auto n = CUSPARSE_OPERATION_NON_TRANSPOSE;
  size_t bytes = 1;
  SP_OK(s.cusparseSDDMM_bufferSize(h, n, n, &alpha, ad, bd, &beta, c, CUDA_R_64F, CUSPARSE_SDDMM_ALG_DEFAULT, &bytes));
  EXPECT_EQ(0u, bytes);
  SP_OK(s.cusparseSDDMM_preprocess(h, n, n, &alpha, ad, bd, &beta, c, CUDA_R_64F, CUSPARSE_SDDMM_ALG_DEFAULT, nullptr));
  SP_OK(s.cusparseSDDMM(h, n, n, &alpha, ad, bd, &beta, c, CUDA_R_64F, CUSPARSE_SDDMM_ALG_DEFAULT, nullptr));
  auto got = download<double>(val, kVals.size());
  for (size_t e = 0; e < kVals.size(); ++e) {
    double dot = 0;
    for (int64_t l = 0; l < k; ++l) dot += a[size_t(kRows[e] * k + l)] * b[size_t(l + kCols[e] * k)];
    EXPECT_DOUBLE_EQ(alpha * dot + beta * kVals[e], got[e]) << e;
  }
  // A column index past B's columns: the values stay, the next call fails.
  std::vector<int32_t> bad = kCols;
  bad[0] = 99;
  CUdeviceptr badp = upload(bad), val2 = upload(values<double>());
  auto c2 = csr(off, badp, val2, CUDA_R_64F);
  SP_OK(s.cusparseSDDMM(h, n, n, &alpha, ad, bd, &beta, c2, CUDA_R_64F, CUSPARSE_SDDMM_ALG_DEFAULT, nullptr));
  EXPECT_EQ(kVals, download<double>(val2, kVals.size()));
  EXPECT_EQ(CUSPARSE_STATUS_EXECUTION_FAILED,
            s.cusparseSDDMM(h, n, n, &alpha, ad, bd, &beta, c2, CUDA_R_64F, CUSPARSE_SDDMM_ALG_DEFAULT, nullptr));
}

// --- untrusted input --------------------------------------------------------

// A product whose matrix has a bad index: C keeps its values, the handle's
// next call reports the failure once, and the handle works afterwards.
void expect_refused_then_recovered(SparseTest& t, SparseLib& s, cusparseHandle_t h, cusparseSpMatDescr_t a) {
  CUdeviceptr bp = t.upload(b_matrix<float>(kK, 2, false)), cp = t.upload(std::vector<float>(kM * 2, 42.0f));
  auto bd = t.dense(kK, 2, kK, bp, CUDA_R_32F), cd = t.dense(kM, 2, kM, cp, CUDA_R_32F);
  const float one = 1, zero = 0;
  SP_OK(s.cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, bd, &zero, cd,
                       CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, nullptr));
  EXPECT_EQ(std::vector<float>(kM * 2, 42.0f), t.download<float>(cp, kM * 2));
  EXPECT_EQ(CUSPARSE_STATUS_EXECUTION_FAILED,
            s.cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, bd, &zero,
                           cd, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, nullptr));
  ASSERT_EQ(CUDA_SUCCESS, t.synchronize());
}

TEST_F(SparseTest, ColumnIndexPastTheMatrixIsRefused) {
  std::vector<int32_t> bad = kCols;
  bad[3] = int32_t(kK);  // one past the last column
  CUdeviceptr off = upload(kOffsets), col = upload(bad), val = upload(values<float>());
  expect_refused_then_recovered(*this, s, h, csr(off, col, val, CUDA_R_32F));
}

TEST_F(SparseTest, NegativeAndHugeIndicesAreRefused) {
  for (int32_t v : {-1, 1 << 30, INT32_MIN}) {
    std::vector<int32_t> bad = kRows;
    bad[4] = v;
    CUdeviceptr row = upload(bad), col = upload(kCols), val = upload(values<float>());
    expect_refused_then_recovered(*this, s, h, coo(row, col, val, CUDA_R_32F));
  }
}

TEST_F(SparseTest, CsrOffsetsThatGoBackOrPastNnzAreRefused) {
  for (auto bad : {std::vector<int32_t>{0, 2, 1, 5, 7}, std::vector<int32_t>{0, 2, 2, 5, 1000},
                   std::vector<int32_t>{-3, 2, 2, 5, 7}}) {
    CUdeviceptr off = upload(bad), col = upload(kCols), val = upload(values<float>());
    expect_refused_then_recovered(*this, s, h, csr(off, col, val, CUDA_R_32F));
  }
}

TEST_F(SparseTest, ArraysShorterThanTheDescriptorAreRefusedAtTheCall) {
  // nnz says 7000: the column and value arrays hold 7.
  CUdeviceptr off = upload(kOffsets), col = upload(kCols), val = upload(values<float>());
  auto a = csr(off, col, val, CUDA_R_32F, 7000);
  CUdeviceptr bp = upload(b_matrix<float>(kK, 2, false)), cp = upload(std::vector<float>(kM * 2, 42.0f));
  auto bd = dense(kK, 2, kK, bp, CUDA_R_32F), cd = dense(kM, 2, kM, cp, CUDA_R_32F);
  const float one = 1, zero = 0;
  EXPECT_EQ(CUSPARSE_STATUS_INVALID_VALUE,
            s.cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, bd, &zero,
                           cd, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, nullptr));
  // A dense operand whose leading dimension reaches past its allocation.
  auto a_ok = csr(off, col, val, CUDA_R_32F);
  auto cd_long = dense(kM, 2, 100000, cp, CUDA_R_32F);
  EXPECT_EQ(CUSPARSE_STATUS_INVALID_VALUE,
            s.cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a_ok, bd,
                           &zero, cd_long, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, nullptr));
  EXPECT_EQ(std::vector<float>(kM * 2, 42.0f), download<float>(cp, kM * 2));
}

TEST_F(SparseTest, ShapesThatDisagreeAreRefused) {
  CUdeviceptr off = upload(kOffsets), col = upload(kCols), val = upload(values<float>());
  auto a = csr(off, col, val, CUDA_R_32F);
  CUdeviceptr xp = upload(std::vector<float>(kK)), yp = upload(std::vector<float>(kK));
  const float one = 1, zero = 0;
  EXPECT_EQ(CUSPARSE_STATUS_INVALID_VALUE,
            s.cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, vec(kK, xp, CUDA_R_32F), &zero,
                           vec(kK, yp, CUDA_R_32F), CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, nullptr));
}

TEST_F(SparseTest, CooToCsrWithARowPastTheMatrixLeavesTheOffsetsAndFailsTheNextCall) {
  std::vector<int32_t> bad = kRows;
  bad[6] = int32_t(kM);
  CUdeviceptr rows = upload(bad), out = upload(std::vector<int32_t>(kM + 1, -1));
  SP_OK(s.cusparseXcoo2csr(h, reinterpret_cast<const int*>(rows), 7, int(kM), reinterpret_cast<int*>(out),
                           CUSPARSE_INDEX_BASE_ZERO));
  EXPECT_EQ(std::vector<int32_t>(kM + 1, -1), download<int32_t>(out, kM + 1));
  EXPECT_EQ(CUSPARSE_STATUS_EXECUTION_FAILED,
            s.cusparseXcoo2csr(h, reinterpret_cast<const int*>(rows), 7, int(kM), reinterpret_cast<int*>(out),
                               CUSPARSE_INDEX_BASE_ZERO));
  // An nnz longer than the row array: refused before anything runs.
  EXPECT_EQ(CUSPARSE_STATUS_INVALID_VALUE,
            s.cusparseXcoo2csr(h, reinterpret_cast<const int*>(rows), 7000, int(kM), reinterpret_cast<int*>(out),
                               CUSPARSE_INDEX_BASE_ZERO));
}

}  // namespace
