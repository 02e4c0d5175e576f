// The stand-in's sparse products on host copies of their operands:
// C = alpha op(A) op(B) + beta C for a CSR or COO matrix A and dense B and C
// (SpMV is the one-column case), and SDDMM. Every index A holds is checked before
// anything is written: a bad one leaves C untouched and answers false.
#pragma once

#include <cstdint>

namespace rgpu::cpusparse {

// A sparse matrix's host arrays, every batch included. For CSR `rows_idx`
// holds rows+1 offsets per batch, for COO nnz row indices per batch.
struct SparseView {
  bool csr = true;
  int64_t rows = 0, cols = 0, nnz = 0;
  int64_t base = 0;
  const void* rows_idx = nullptr;
  bool rows_64 = false;  // 64-bit indices, else 32-bit
  const void* cols_idx = nullptr;
  bool cols_64 = false;
  const void* values = nullptr;
  int batch = 1;
  int64_t offsets_stride = 0;  // elements between batches of rows_idx
  int64_t values_stride = 0;   // elements between batches of cols_idx and values
};

// A dense matrix (or batch of them) in host memory.
struct DenseView {
  void* values = nullptr;
  int64_t rows = 0, cols = 0, ld = 0;
  bool row_major = false;
  int batch = 1;
  int64_t stride = 0;
};

// T is float or double (the values' and the compute type). op_a, op_b:
// cusparseOperation_t (a conjugate transpose of real data is a transpose).
// The shapes and batch counts are the caller's to have checked.
template <class T>
bool spmm(int op_a, int op_b, T alpha, const SparseView& a, const DenseView& b, T beta, const DenseView& c);

// C's values at its stored entries = alpha (op(A) op(B))(r, c) + beta C
// (SDDMM) for dense A and B and a CSR C whose values are `c_values` (C's
// host values array, written in place). False, C untouched, for a bad index.
template <class T>
bool sddmm(int op_a, int op_b, T alpha, const DenseView& a, const DenseView& b, T beta, const SparseView& c,
           T* c_values);

extern template bool sddmm<float>(int, int, float, const DenseView&, const DenseView&, float, const SparseView&,
                                  float*);
extern template bool sddmm<double>(int, int, double, const DenseView&, const DenseView&, double, const SparseView&,
                                   double*);
extern template bool spmm<float>(int, int, float, const SparseView&, const DenseView&, float, const DenseView&);
extern template bool spmm<double>(int, int, double, const SparseView&, const DenseView&, double, const DenseView&);

}  // namespace rgpu::cpusparse
