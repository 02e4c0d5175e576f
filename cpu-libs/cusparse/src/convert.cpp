// The stand-in's conversions: COO row indices to CSR row offsets (every
// index bounds-checked; a bad one leaves the offsets untouched and fails the
// handle's next call) and the identity permutation.
#include <vector>

#include "job.h"
#include "sparse.h"

using rgpu::cpusparse::guarded;
using rgpu::cpusparse::Job;

RGPU_EXPORT cusparseStatus_t cusparseXcoo2csr(cusparseHandle_t handle, const int* cooRowInd, int nnz, int m,
                                              int* csrSortedRowPtr, cusparseIndexBase_t idxBase) {
  return guarded("cusparseXcoo2csr", [&] {
    if (!handle) return CUSPARSE_STATUS_NOT_INITIALIZED;
    if (auto s = rgpu::cpusparse::take_failure(handle); s != CUSPARSE_STATUS_SUCCESS) return s;
    if (nnz < 0 || m < 0 || !csrSortedRowPtr || (nnz > 0 && !cooRowInd) ||
        (idxBase != CUSPARSE_INDEX_BASE_ZERO && idxBase != CUSPARSE_INDEX_BASE_ONE)) {
      return CUSPARSE_STATUS_INVALID_VALUE;
    }
    rgpu::cpusparse::ContextGuard guard(handle->ctx);
    if (!guard.ok()) return CUSPARSE_STATUS_NOT_INITIALIZED;
    auto job = std::make_unique<Job>();
    const size_t in = job->add({reinterpret_cast<CUdeviceptr>(cooRowInd), uint64_t(nnz) * 4, false});
    const size_t out = job->add({reinterpret_cast<CUdeviceptr>(csrSortedRowPtr), (uint64_t(m) + 1) * 4, true});
    job->failed = handle->failed;
    const int base = idxBase == CUSPARSE_INDEX_BASE_ONE ? 1 : 0;
    job->compute = [=](Job& j) {
      const auto* rows = nnz > 0 ? static_cast<const int32_t*>(j.host(in)) : nullptr;
      std::vector<int64_t> counts(size_t(m) + 1, 0);
      for (int e = 0; e < nnz; ++e) {
        const int64_t r = int64_t(rows[e]) - base;
        if (r < 0 || r >= m) return false;
        ++counts[size_t(r) + 1];
      }
      auto* ptr = static_cast<int32_t*>(j.host(out));
      ptr[0] = base;
      for (int i = 0; i < m; ++i) ptr[i + 1] = int32_t(ptr[i] + counts[size_t(i) + 1]);
      return true;
    };
    return rgpu::cpusparse::submit(std::move(job), handle->stream);
  });
}

RGPU_EXPORT cusparseStatus_t cusparseCreateIdentityPermutation(cusparseHandle_t handle, int n, int* p) {
  return guarded("cusparseCreateIdentityPermutation", [&] {
    if (!handle) return CUSPARSE_STATUS_NOT_INITIALIZED;
    if (n < 0 || (n > 0 && !p)) return CUSPARSE_STATUS_INVALID_VALUE;
    rgpu::cpusparse::ContextGuard guard(handle->ctx);
    if (!guard.ok()) return CUSPARSE_STATUS_NOT_INITIALIZED;
    auto job = std::make_unique<Job>();
    const size_t out = job->add({reinterpret_cast<CUdeviceptr>(p), uint64_t(n) * 4, true});
    job->compute = [=](Job& j) {
      auto* v = static_cast<int32_t*>(j.host(out));
      for (int i = 0; i < n; ++i) v[i] = i;
      return true;
    };
    return rgpu::cpusparse::submit(std::move(job), handle->stream);
  });
}
