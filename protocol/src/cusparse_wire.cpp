// cuSPARSE's descriptors on the wire and their extents
// (rgpu/protocol/cusparse_wire.h).
#include "rgpu/protocol/cusparse_wire.h"

namespace rgpu::protocol::cusparse {

SpMat csr(int64_t rows, int64_t cols, int64_t nnz, uint64_t row_offsets, uint64_t col_ind, uint64_t values,
          int32_t offsets_type, int32_t index_type, int32_t base, int32_t value_type) {
  SpMat m;
  m.format = kFormatCsr;
  m.rows = rows;
  m.cols = cols;
  m.nnz = nnz;
  m.rows_ptr = row_offsets;
  m.cols_ptr = col_ind;
  m.values = values;
  m.offsets_type = offsets_type;
  m.index_type = index_type;
  m.base = base;
  m.value_type = value_type;
  return m;
}

SpMat coo(int64_t rows, int64_t cols, int64_t nnz, uint64_t row_ind, uint64_t col_ind, uint64_t values,
          int32_t index_type, int32_t base, int32_t value_type) {
  SpMat m = csr(rows, cols, nnz, row_ind, col_ind, values, index_type, index_type, base, value_type);
  m.format = kFormatCoo;
  return m;
}

DnMat dense_matrix(int64_t rows, int64_t cols, int64_t ld, uint64_t values, int32_t value_type, int32_t order) {
  DnMat m;
  m.rows = rows;
  m.cols = cols;
  m.ld = ld;
  m.values = values;
  m.value_type = value_type;
  m.order = order;
  return m;
}

DnVec dense_vector(int64_t size, uint64_t values, int32_t value_type) {
  DnVec v;
  v.size = size;
  v.values = values;
  v.value_type = value_type;
  return v;
}

void write(ArgWriter& w, const SpMat& m) {
  w.scalar(m.format);
  w.scalar(m.rows);
  w.scalar(m.cols);
  w.scalar(m.nnz);
  w.u64(m.rows_ptr);
  w.u64(m.cols_ptr);
  w.u64(m.values);
  w.scalar(m.offsets_type);
  w.scalar(m.index_type);
  w.scalar(m.base);
  w.scalar(m.value_type);
  w.scalar(m.batch);
  w.scalar(m.offsets_stride);
  w.scalar(m.values_stride);
  w.scalar(m.fill_mode);
  w.scalar(m.diag_type);
  w.scalar(m.attrs_set);
}

bool read(ArgReader& r, SpMat* m) {
  r.scalar(&m->format);
  r.scalar(&m->rows);
  r.scalar(&m->cols);
  r.scalar(&m->nnz);
  r.u64(&m->rows_ptr);
  r.u64(&m->cols_ptr);
  r.u64(&m->values);
  r.scalar(&m->offsets_type);
  r.scalar(&m->index_type);
  r.scalar(&m->base);
  r.scalar(&m->value_type);
  r.scalar(&m->batch);
  r.scalar(&m->offsets_stride);
  r.scalar(&m->values_stride);
  r.scalar(&m->fill_mode);
  r.scalar(&m->diag_type);
  r.scalar(&m->attrs_set);
  return !r.failed();
}

void write(ArgWriter& w, const DnMat& m) {
  w.scalar(m.rows);
  w.scalar(m.cols);
  w.scalar(m.ld);
  w.u64(m.values);
  w.scalar(m.value_type);
  w.scalar(m.order);
  w.scalar(m.batch);
  w.scalar(m.stride);
}

bool read(ArgReader& r, DnMat* m) {
  r.scalar(&m->rows);
  r.scalar(&m->cols);
  r.scalar(&m->ld);
  r.u64(&m->values);
  r.scalar(&m->value_type);
  r.scalar(&m->order);
  r.scalar(&m->batch);
  r.scalar(&m->stride);
  return !r.failed();
}

void write(ArgWriter& w, const DnVec& v) {
  w.scalar(v.size);
  w.u64(v.values);
  w.scalar(v.value_type);
}

bool read(ArgReader& r, DnVec* v) {
  r.scalar(&v->size);
  r.u64(&v->values);
  r.scalar(&v->value_type);
  return !r.failed();
}

uint64_t index_bytes(int32_t type) {
  switch (type) {
    case 1: return 2;  // CUSPARSE_INDEX_16U
    case 2: return 4;  // CUSPARSE_INDEX_32I
    case 3: return 8;  // CUSPARSE_INDEX_64I
    default: return kNoExtent;
  }
}

namespace {

// `count` elements of `elem` bytes per batch, `batch` batches `stride`
// elements apart.
uint64_t batched(int64_t count, uint64_t elem, int64_t batch, int64_t stride) {
  if (count < 0 || batch < 1 || stride < 0 || elem == kNoExtent) return kNoExtent;
  const uint64_t one = rgpu_mul_extent(uint64_t(count), elem);
  if (one == 0) return 0;
  return rgpu_add_extent(rgpu_mul_extent(rgpu_mul_extent(uint64_t(stride), elem), uint64_t(batch - 1)), one);
}

}  // namespace

bool extents(const SpMat& m, Extent out[3], const char** why) {
  if (m.format != kFormatCsr && m.format != kFormatCoo) {
    *why = "only CSR and COO matrices are checked";
    return false;
  }
  if (m.batch < 1 || m.offsets_stride < 0 || m.values_stride < 0) {
    *why = "a batch count below 1 or a negative batch stride";
    return false;
  }
  if (m.rows < 0 || m.cols < 0 || m.nnz < 0) {
    *why = "a negative size";
    return false;
  }
  const uint64_t vbytes = rgpu_data_type_bytes(m.value_type);
  if (m.format == kFormatCsr) {
    out[0] = {m.rows_ptr, batched(m.rows + 1, index_bytes(m.offsets_type), m.batch, m.offsets_stride)};
  } else {
    // COO's batch stride covers its three arrays alike.
    out[0] = {m.rows_ptr, batched(m.nnz, index_bytes(m.index_type), m.batch, m.values_stride)};
  }
  out[1] = {m.cols_ptr, batched(m.nnz, index_bytes(m.index_type), m.batch, m.values_stride)};
  out[2] = {m.values, batched(m.nnz, vbytes, m.batch, m.values_stride)};
  return true;
}

uint64_t extent_bytes(const DnMat& m) {
  if (m.order != kOrderCol && m.order != kOrderRow) return kNoExtent;
  if (m.batch < 1 || m.stride < 0) return kNoExtent;
  // Row order is the transpose of column order with the same leading dimension.
  const uint64_t one = m.order == kOrderCol ? rgpu_blas_matrix_bytes(0, m.rows, m.cols, m.ld, rgpu_data_type_bytes(m.value_type))
                                            : rgpu_blas_matrix_bytes(0, m.cols, m.rows, m.ld, rgpu_data_type_bytes(m.value_type));
  if (one == kNoExtent) return kNoExtent;
  if (one == 0) return 0;
  const uint64_t step = rgpu_mul_extent(uint64_t(m.stride), rgpu_data_type_bytes(m.value_type));
  return rgpu_add_extent(rgpu_mul_extent(step, uint64_t(m.batch - 1)), one);
}

uint64_t extent_bytes(const DnVec& v) { return rgpu_blas_vector_bytes(v.size, 1, rgpu_data_type_bytes(v.value_type)); }

bool spmm_shapes(int32_t op_a, int32_t op_b, const SpMat& a, const DnMat& b, const DnMat& c, const char** why) {
  const int64_t m = op_a == kOpN ? a.rows : a.cols;
  const int64_t k = op_a == kOpN ? a.cols : a.rows;
  const int64_t bk = op_b == kOpN ? b.rows : b.cols;
  const int64_t n = op_b == kOpN ? b.cols : b.rows;
  if (m != c.rows || k != bk || n != c.cols) {
    *why = "op(A), op(B) and C do not agree in shape";
    return false;
  }
  if (b.batch != c.batch && b.batch != 1) {
    *why = "B's batch count is neither C's nor 1";
    return false;
  }
  if (a.batch != c.batch && a.batch != 1) {
    *why = "A's batch count is neither C's nor 1";
    return false;
  }
  return true;
}

bool sddmm_shapes(int32_t op_a, int32_t op_b, const DnMat& a, const DnMat& b, const SpMat& c, const char** why) {
  const int64_t m = op_a == kOpN ? a.rows : a.cols;
  const int64_t k = op_a == kOpN ? a.cols : a.rows;
  const int64_t bk = op_b == kOpN ? b.rows : b.cols;
  const int64_t n = op_b == kOpN ? b.cols : b.rows;
  if (c.format != kFormatCsr) {
    *why = "SDDMM's output must be CSR";
    return false;
  }
  if (m != c.rows || k != bk || n != c.cols) {
    *why = "op(A), op(B) and C do not agree in shape";
    return false;
  }
  if ((a.batch != c.batch && a.batch != 1) || (b.batch != c.batch && b.batch != 1)) {
    *why = "A's or B's batch count is neither C's nor 1";
    return false;
  }
  return true;
}

bool spmv_shapes(int32_t op_a, const SpMat& a, const DnVec& x, const DnVec& y, const char** why) {
  const int64_t m = op_a == kOpN ? a.rows : a.cols;
  const int64_t k = op_a == kOpN ? a.cols : a.rows;
  if (x.size != k || y.size != m) {
    *why = "op(A), x and y do not agree in shape";
    return false;
  }
  if (a.batch != 1) {
    *why = "SpMV takes no batch";
    return false;
  }
  return true;
}

}  // namespace rgpu::protocol::cusparse
