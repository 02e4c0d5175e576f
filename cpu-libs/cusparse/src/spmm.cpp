// The stand-in's sparse products (spmm.h): validate every index of A, then
// scale C by beta and add alpha op(A) op(B) one stored entry at a time. A
// CSR product without a transpose splits its rows over threads: each thread
// writes only its own rows of C.
#include "spmm.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace rgpu::cpusparse {
namespace {

int64_t index_at(const void* p, bool is64, int64_t i) {
  return is64 ? static_cast<const int64_t*>(p)[i] : static_cast<const int32_t*>(p)[i];
}

// One batch of A, with its indices made zero-based.
struct Batch {
  const SparseView& a;
  int64_t off0 = 0;  // first element of rows_idx
  int64_t val0 = 0;  // first element of cols_idx and values
  int64_t row_ptr(int64_t i) const { return index_at(a.rows_idx, a.rows_64, off0 + i) - a.base; }
  int64_t row(int64_t e) const { return index_at(a.rows_idx, a.rows_64, off0 + e) - a.base; }
  int64_t col(int64_t e) const { return index_at(a.cols_idx, a.cols_64, val0 + e) - a.base; }
};

Batch batch_of(const SparseView& a, int i) {
  const int64_t b = a.batch == 1 ? 0 : i;
  return Batch{a, b * a.offsets_stride, b * a.values_stride};
}

// Every index one batch of A holds is inside the matrix (and CSR's offsets
// are non-decreasing, inside [0, nnz]).
bool valid(const Batch& b) {
  const SparseView& a = b.a;
  if (a.csr) {
    int64_t prev = b.row_ptr(0);
    if (prev < 0 || prev > a.nnz) return false;
    for (int64_t i = 1; i <= a.rows; ++i) {
      const int64_t next = b.row_ptr(i);
      if (next < prev || next > a.nnz) return false;
      prev = next;
    }
    for (int64_t e = b.row_ptr(0); e < b.row_ptr(a.rows); ++e) {
      const int64_t c = b.col(e);
      if (c < 0 || c >= a.cols) return false;
    }
    return true;
  }
  for (int64_t e = 0; e < a.nnz; ++e) {
    const int64_t r = b.row(e), c = b.col(e);
    if (r < 0 || r >= a.rows || c < 0 || c >= a.cols) return false;
  }
  return true;
}

template <class T>
struct Dense {
  T* v;
  int64_t ld;
  bool row_major;
  T& at(int64_t i, int64_t j) const { return row_major ? v[i * ld + j] : v[i + j * ld]; }
};

template <class T>
Dense<T> dense_of(const DenseView& d, int i) {
  const int64_t b = d.batch == 1 ? 0 : i;
  return Dense<T>{static_cast<T*>(d.values) + b * d.stride, d.ld, d.row_major};
}

// Adds alpha * v * op(B)(k, :) to C(i, :).
template <class T>
void axpy_row(T alpha, T v, const Dense<T>& b, bool tb, int64_t k, const Dense<T>& c, int64_t i, int64_t n) {
  const T s = alpha * v;
  for (int64_t j = 0; j < n; ++j) c.at(i, j) += s * (tb ? b.at(j, k) : b.at(k, j));
}

}  // namespace

template <class T>
bool spmm(int op_a, int op_b, T alpha, const SparseView& a, const DenseView& b, T beta, const DenseView& c) {
  for (int i = 0; i < c.batch; ++i) {
    if (!valid(batch_of(a, i))) return false;
  }
  const bool ta = op_a != 0, tb = op_b != 0;
  const int64_t m = c.rows, n = c.cols;
  const auto* vals = static_cast<const T*>(a.values);
  for (int bi = 0; bi < c.batch; ++bi) {
    const Batch ab = batch_of(a, bi);
    const Dense<T> bb = dense_of<T>(b, bi), cb = dense_of<T>(c, bi);
    auto rows = [&](int64_t r0, int64_t r1) {  // C's rows [r0, r1) when A is CSR, not transposed
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t j = 0; j < n; ++j) cb.at(r, j) = beta == T(0) ? T(0) : beta * cb.at(r, j);
        for (int64_t e = ab.row_ptr(r); e < ab.row_ptr(r + 1); ++e) {
          axpy_row(alpha, vals[ab.val0 + e], bb, tb, ab.col(e), cb, r, n);
        }
      }
    };
    if (a.csr && !ta) {
      const int64_t work = (ab.row_ptr(m) - ab.row_ptr(0) + m) * std::max<int64_t>(n, 1);
      const int64_t threads = std::min<int64_t>({int64_t(std::max(1u, std::thread::hardware_concurrency())), 8,
                                                 std::max<int64_t>(1, work >> 16), std::max<int64_t>(1, m)});
      if (threads <= 1) {
        rows(0, m);
      } else {
        std::vector<std::thread> pool;
        for (int64_t t = 0; t < threads; ++t) pool.emplace_back(rows, m * t / threads, m * (t + 1) / threads);
        for (auto& th : pool) th.join();
      }
      continue;
    }
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t j = 0; j < n; ++j) cb.at(r, j) = beta == T(0) ? T(0) : beta * cb.at(r, j);
    }
    auto add = [&](int64_t row, int64_t col, int64_t e) {
      if (ta) {
        axpy_row(alpha, vals[ab.val0 + e], bb, tb, row, cb, col, n);
      } else {
        axpy_row(alpha, vals[ab.val0 + e], bb, tb, col, cb, row, n);
      }
    };
    if (a.csr) {
      for (int64_t r = 0; r < a.rows; ++r) {
        for (int64_t e = ab.row_ptr(r); e < ab.row_ptr(r + 1); ++e) add(r, ab.col(e), e);
      }
    } else {
      for (int64_t e = 0; e < a.nnz; ++e) add(ab.row(e), ab.col(e), e);
    }
  }
  return true;
}

template <class T>
bool sddmm(int op_a, int op_b, T alpha, const DenseView& a, const DenseView& b, T beta, const SparseView& c,
           T* c_values) {
  for (int i = 0; i < c.batch; ++i) {
    if (!valid(batch_of(c, i))) return false;
  }
  const bool ta = op_a != 0, tb = op_b != 0;
  const int64_t k = ta ? a.rows : a.cols;
  for (int bi = 0; bi < c.batch; ++bi) {
    const Batch cb = batch_of(c, bi);
    const Dense<T> ab = dense_of<T>(a, bi), bb = dense_of<T>(b, bi);
    for (int64_t r = 0; r < c.rows; ++r) {
      for (int64_t e = cb.row_ptr(r); e < cb.row_ptr(r + 1); ++e) {
        const int64_t col = cb.col(e);
        T sum = 0;
        for (int64_t l = 0; l < k; ++l) sum += (ta ? ab.at(l, r) : ab.at(r, l)) * (tb ? bb.at(col, l) : bb.at(l, col));
        T& v = c_values[cb.val0 + e];
        v = beta == T(0) ? alpha * sum : alpha * sum + beta * v;
      }
    }
  }
  return true;
}

template bool sddmm<float>(int, int, float, const DenseView&, const DenseView&, float, const SparseView&, float*);
template bool sddmm<double>(int, int, double, const DenseView&, const DenseView&, double, const SparseView&, double*);
template bool spmm<float>(int, int, float, const SparseView&, const DenseView&, float, const DenseView&);
template bool spmm<double>(int, int, double, const SparseView&, const DenseView&, double, const DenseView&);

}  // namespace rgpu::cpusparse
