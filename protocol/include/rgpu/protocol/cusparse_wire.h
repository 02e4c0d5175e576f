// cuSPARSE's generic-API descriptors as rgpu sends them. The client keeps
// every sparse matrix, dense matrix and dense vector descriptor as a local
// object (what cusparseCreateCsr & co. set); SpMM and SpMV, and their buffer
// size queries, send the descriptors they use whole, in one message. rgpud
// checks every array a descriptor names against the calling context's
// memory for the extent its sizes give, then rebuilds the library's own
// descriptors through its table (server/src/cusparse_rows.cpp). Pure
// functions of their arguments (protocol/src/cusparse_wire.cpp).
//
// On the wire each descriptor is a fixed sequence of 8-byte items (args.h),
// in the order of its struct's members.
#pragma once

#include <cstdint>

#include "handle_kinds.h"
#include "rgpu/protocol/args.h"
#include "rgpu/protocol/library_sizes.h"

namespace rgpu::protocol::cusparse {

// The hand-written calls' ordinals (Call.invoke's function for api
// CUSPARSE), above the generated calls' (api/cusparse.lock).
//   SpMM: handle, opA, opB, computeType, alg, alpha, A, B, beta, C, buffer
//   SpMV: handle, opA, computeType, alg, alpha, A, x, beta, y, buffer
//   SDDMM: handle, opA, opB, computeType, alg, alpha, A, B, beta, C, buffer
//     (A and B dense, C the sparse output; its preprocess the same)
// A scalar is its pointer mode, then (host) its bytes as a buffer or
// (device) its address. The buffer size queries send no buffer and answer
// the size in their reply.
enum Fn : uint32_t {
  kFirstHandFn = 1000,
  kSpMMBufferSize = 1001,  // sync
  kSpMM = 1002,            // async
  kSpMVBufferSize = 1003,  // sync
  kSpMV = 1004,            // async
  kSDDMMBufferSize = 1005, // sync
  kSDDMMPreprocess = 1006, // async
  kSDDMM = 1007,           // async
  kLastHandFn = 1007,
};

// cusparse.api's @handle kind.
inline constexpr uint8_t kHandleKind = handle_kinds::kCusparse;

// cusparse.h's values, so this header needs no CUDA header.
inline constexpr int32_t kFormatCsr = 1;
inline constexpr int32_t kFormatCoo = 3;
inline constexpr int32_t kOrderCol = 1;
inline constexpr int32_t kOrderRow = 2;
inline constexpr int32_t kOpN = 0;
inline constexpr uint32_t kPointerHost = 0;
inline constexpr uint32_t kPointerDevice = 1;

// A sparse matrix in CSR or COO form. For CSR `rows_ptr` is the row
// offsets (rows+1 entries), for COO the row indices (nnz entries).
struct SpMat {
  int32_t format = 0;       // kFormatCsr or kFormatCoo
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t nnz = 0;
  uint64_t rows_ptr = 0;
  uint64_t cols_ptr = 0;
  uint64_t values = 0;
  int32_t offsets_type = 0;  // cusparseIndexType_t of rows_ptr
  int32_t index_type = 0;    // cusparseIndexType_t of cols_ptr
  int32_t base = 0;          // cusparseIndexBase_t
  int32_t value_type = 0;    // cudaDataType
  int32_t batch = 1;         // Csr/CooSetStridedBatch
  int64_t offsets_stride = 0;  // elements between batches of rows_ptr
  int64_t values_stride = 0;   // elements between batches of cols_ptr and values
  int32_t fill_mode = 0;     // SpMatSetAttribute, sent when attrs_set says
  int32_t diag_type = 0;
  uint32_t attrs_set = 0;    // bit 0: fill mode set, bit 1: diag type set
};

struct DnMat {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;
  uint64_t values = 0;
  int32_t value_type = 0;
  int32_t order = kOrderCol;
  int32_t batch = 1;
  int64_t stride = 0;  // elements between batches
};

struct DnVec {
  int64_t size = 0;
  uint64_t values = 0;
  int32_t value_type = 0;
};

// The records cusparseCreateCsr, cusparseCreateCoo, cusparseCreateDnMat and
// cusparseCreateDnVec make of their arguments: the client keeps and sends
// them, the CPU stand-in computes on them. Nothing is checked here; each
// side checks what it accepts.
SpMat csr(int64_t rows, int64_t cols, int64_t nnz, uint64_t row_offsets, uint64_t col_ind, uint64_t values,
          int32_t offsets_type, int32_t index_type, int32_t base, int32_t value_type);
SpMat coo(int64_t rows, int64_t cols, int64_t nnz, uint64_t row_ind, uint64_t col_ind, uint64_t values,
          int32_t index_type, int32_t base, int32_t value_type);
DnMat dense_matrix(int64_t rows, int64_t cols, int64_t ld, uint64_t values, int32_t value_type, int32_t order);
DnVec dense_vector(int64_t size, uint64_t values, int32_t value_type);
// cusparseIndexBase_t's two values.
inline bool base_ok(int32_t base) { return base == 0 || base == 1; }

void write(ArgWriter& w, const SpMat& m);
void write(ArgWriter& w, const DnMat& m);
void write(ArgWriter& w, const DnVec& v);
// Leave `r` failed when the items do not fit the members.
bool read(ArgReader& r, SpMat* m);
bool read(ArgReader& r, DnMat* m);
bool read(ArgReader& r, DnVec* v);

// Bytes of one index of cusparseIndexType_t `type` (16U, 32I, 64I), or
// kNoExtent.
uint64_t index_bytes(int32_t type);

// One array a descriptor names: its address and the bytes the library
// reaches from it. kNoExtent when the sizes are impossible (negative, a
// leading dimension below the rows, an unknown type, an overflow).
struct Extent {
  uint64_t ptr = 0;
  uint64_t bytes = 0;
};
// The sparse matrix's three arrays, every batch included: rows_ptr, cols_ptr,
// values. False (and *why) for a form rgpu does not check (a format other
// than CSR and COO, a batch below 1, a negative stride).
bool extents(const SpMat& m, Extent out[3], const char** why);
uint64_t extent_bytes(const DnMat& m);
uint64_t extent_bytes(const DnVec& v);

// The shapes of C = op(A) op(B) and y = op(A) x agree; false and *why
// otherwise.
bool spmm_shapes(int32_t op_a, int32_t op_b, const SpMat& a, const DnMat& b, const DnMat& c, const char** why);
// C = op(A) op(B) sampled at C's pattern: op(A) is m x k, op(B) k x n, C
// m x n, CSR.
bool sddmm_shapes(int32_t op_a, int32_t op_b, const DnMat& a, const DnMat& b, const SpMat& c, const char** why);
bool spmv_shapes(int32_t op_a, const SpMat& a, const DnVec& x, const DnVec& y, const char** why);

}  // namespace rgpu::protocol::cusparse
