// The hand-written rows of cuSPARSE (cusparse_rows.h). Before the library
// sees a call, every array its descriptors name is checked against the
// calling context's memory for the extent the descriptor's sizes give (a
// CSR matrix's row offsets for rows+1 entries, its column indices and
// values for nnz, each batch included; a dense matrix for its leading
// dimension and order), the shapes of the operands must agree, alpha and
// beta follow the handle's pointer mode, and the work buffer is checked for
// the size the library itself asks for. The index values inside those
// arrays are the library's to check: the CPU stand-in bounds-checks every
// one; NVIDIA's library trusts them (docs/cpu-device.md).
#include "cusparse_rows.h"

#include <cusparse.h>

#include <cstring>
#include <string>

#include "library_tables.h"
#include "rgpu/protocol/cusparse_wire.h"

namespace rgpu::server {
namespace {

namespace sw = ::rgpu::protocol::cusparse;
using ::rgpu::protocol::ArgReader;
using ::rgpu::protocol::ArgWriter;
using ::rgpu::protocol::HandleKind;
using dispatch::refuse;
constexpr auto kApi = wire::Api::CUSPARSE;
constexpr auto kHandle = static_cast<HandleKind>(sw::kHandleKind);

InvokeOutcome bad(const char* fn, const std::string& what) {
  return refuse(kApi, CUSPARSE_STATUS_INVALID_VALUE, std::string(fn) + ": " + what);
}

InvokeOutcome status(uint32_t code, const char* fn, const std::string& what) {
  InvokeOutcome o;
  o.api = kApi;
  o.code = code;
  if (code != 0) o.message = std::string(fn) + ": " + what;
  return o;
}

// alpha or beta as the client packed it: the pointer mode, then the value
// or the device address.
struct Scalar {
  uint32_t mode = 0;
  alignas(16) std::byte value[16] = {};
  uint64_t address = 0;
  const void* ptr() const {
    return mode == sw::kPointerDevice ? reinterpret_cast<const void*>(static_cast<uintptr_t>(address)) : value;
  }
};

bool read_scalar(ArgReader& r, uint64_t bytes, Scalar* s) {
  uint64_t mode = 0;
  if (!r.u64(&mode)) return false;
  if (mode == sw::kPointerDevice) {
    s->mode = sw::kPointerDevice;
    return r.u64(&s->address);
  }
  if (mode != sw::kPointerHost) return r.reject();
  s->mode = sw::kPointerHost;
  std::span<const std::byte> b;
  if (!r.buffer(&b, 16)) return false;
  if (b.size() != bytes) return r.reject();
  std::memcpy(s->value, b.data(), b.size());
  return true;
}

bool op_ok(int32_t op) { return op >= 0 && op <= 2; }

// The library's descriptors of one call, made through the table and
// destroyed with it.
class Descriptors {
 public:
  explicit Descriptors(const CusparseTable& t) : t_(t) {}
  ~Descriptors() {
    for (cusparseSpMatDescr_t d : sp_) t_.cusparseDestroySpMat(d);
    for (cusparseDnMatDescr_t d : dm_) t_.cusparseDestroyDnMat(d);
    for (cusparseDnVecDescr_t d : dv_) t_.cusparseDestroyDnVec(d);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

  cusparseStatus_t make(const sw::SpMat& m, cusparseSpMatDescr_t* out) {
    if (!t_.cusparseCreateCsr || !t_.cusparseCreateCoo || !t_.cusparseDestroySpMat) return CUSPARSE_STATUS_NOT_SUPPORTED;
    auto p = [](uint64_t a) { return reinterpret_cast<void*>(static_cast<uintptr_t>(a)); };
    cusparseStatus_t s;
    if (m.format == sw::kFormatCsr) {
      s = t_.cusparseCreateCsr(out, m.rows, m.cols, m.nnz, p(m.rows_ptr), p(m.cols_ptr), p(m.values),
                               cusparseIndexType_t(m.offsets_type), cusparseIndexType_t(m.index_type),
                               cusparseIndexBase_t(m.base), cudaDataType(m.value_type));
    } else {
      s = t_.cusparseCreateCoo(out, m.rows, m.cols, m.nnz, p(m.rows_ptr), p(m.cols_ptr), p(m.values),
                               cusparseIndexType_t(m.index_type), cusparseIndexBase_t(m.base),
                               cudaDataType(m.value_type));
    }
    if (s != CUSPARSE_STATUS_SUCCESS) return s;
    sp_.push_back(*out);
    if (m.batch != 1) {
      if (m.format == sw::kFormatCsr) {
        s = t_.cusparseCsrSetStridedBatch ? t_.cusparseCsrSetStridedBatch(*out, m.batch, m.offsets_stride, m.values_stride)
                                          : CUSPARSE_STATUS_NOT_SUPPORTED;
      } else {
        s = t_.cusparseCooSetStridedBatch ? t_.cusparseCooSetStridedBatch(*out, m.batch, m.values_stride)
                                          : CUSPARSE_STATUS_NOT_SUPPORTED;
      }
      if (s != CUSPARSE_STATUS_SUCCESS) return s;
    }
    for (auto [bit, attr, value] : {std::tuple{1u, CUSPARSE_SPMAT_FILL_MODE, m.fill_mode},
                                    std::tuple{2u, CUSPARSE_SPMAT_DIAG_TYPE, m.diag_type}}) {
      if (!(m.attrs_set & bit)) continue;
      int32_t v = value;
      s = t_.cusparseSpMatSetAttribute ? t_.cusparseSpMatSetAttribute(*out, attr, &v, sizeof v)
                                       : CUSPARSE_STATUS_NOT_SUPPORTED;
      if (s != CUSPARSE_STATUS_SUCCESS) return s;
    }
    return CUSPARSE_STATUS_SUCCESS;
  }

  cusparseStatus_t make(const sw::DnMat& m, cusparseDnMatDescr_t* out) {
    if (!t_.cusparseCreateDnMat || !t_.cusparseDestroyDnMat) return CUSPARSE_STATUS_NOT_SUPPORTED;
    cusparseStatus_t s = t_.cusparseCreateDnMat(out, m.rows, m.cols, m.ld,
                                                reinterpret_cast<void*>(static_cast<uintptr_t>(m.values)),
                                                cudaDataType(m.value_type), cusparseOrder_t(m.order));
    if (s != CUSPARSE_STATUS_SUCCESS) return s;
    dm_.push_back(*out);
    if (m.batch == 1) return s;
    return t_.cusparseDnMatSetStridedBatch ? t_.cusparseDnMatSetStridedBatch(*out, m.batch, m.stride)
                                           : CUSPARSE_STATUS_NOT_SUPPORTED;
  }

  cusparseStatus_t make(const sw::DnVec& v, cusparseDnVecDescr_t* out) {
    if (!t_.cusparseCreateDnVec || !t_.cusparseDestroyDnVec) return CUSPARSE_STATUS_NOT_SUPPORTED;
    cusparseStatus_t s = t_.cusparseCreateDnVec(out, v.size, reinterpret_cast<void*>(static_cast<uintptr_t>(v.values)),
                                                cudaDataType(v.value_type));
    if (s == CUSPARSE_STATUS_SUCCESS) dv_.push_back(*out);
    return s;
  }

 private:
  const CusparseTable& t_;
  std::vector<cusparseSpMatDescr_t> sp_;
  std::vector<cusparseDnMatDescr_t> dm_;
  std::vector<cusparseDnVecDescr_t> dv_;
};

// Checks every array of a sparse matrix against the context's memory.
bool check_sparse(CallEnv& env, const sw::SpMat& m, std::string* why) {
  sw::Extent ext[3];
  const char* reason = "";
  if (!sw::extents(m, ext, &reason)) {
    *why = reason;
    return false;
  }
  const char* names[3] = {m.format == sw::kFormatCsr ? "row offsets" : "row indices", "column indices", "values"};
  for (int i = 0; i < 3; ++i) {
    if (ext[i].bytes == kNoExtent) {
      *why = std::string(names[i]) + ": impossible sizes";
      return false;
    }
    if (ext[i].bytes != 0 && !env.device_range(ext[i].ptr, ext[i].bytes)) {
      *why = std::string(names[i]) + ": not memory of this context for the matrix's extent";
      return false;
    }
  }
  return true;
}

bool check_dense(CallEnv& env, uint64_t ptr, uint64_t bytes, const char* name, std::string* why) {
  if (bytes == kNoExtent) {
    *why = std::string(name) + ": impossible sizes";
    return false;
  }
  if (bytes != 0 && !env.device_range(ptr, bytes)) {
    *why = std::string(name) + ": not memory of this context for its extent";
    return false;
  }
  return true;
}

// The handle, the table, and the scalars' pointer mode against the handle's.
struct Start {
  const CusparseTable* table = nullptr;
  cusparseHandle_t handle = nullptr;
  InvokeOutcome refusal;
  bool ok() const { return table != nullptr; }
};

Start start(CallEnv& env, uint64_t handle, const Scalar& alpha, const Scalar& beta, uint64_t scalar_bytes,
            const char* fn) {
  Start s;
  void* h = env.find(kHandle, handle);
  if (!h) {
    s.refusal = bad(fn, "handle is not a live cusparse handle");
    return s;
  }
  const auto* t = library_table<CusparseTable>(env);
  if (!t) {
    s.refusal = refuse(kApi, CUSPARSE_STATUS_NOT_SUPPORTED, "cusparse: not on this server");
    return s;
  }
  cusparsePointerMode_t mode{};
  if (!t->cusparseGetPointerMode || t->cusparseGetPointerMode(static_cast<cusparseHandle_t>(h), &mode) != 0 ||
      uint32_t(mode) != alpha.mode || alpha.mode != beta.mode) {
    s.refusal = bad(fn, "the handle's pointer mode is not the one the client packed alpha and beta by");
    return s;
  }
  if (alpha.mode == sw::kPointerDevice &&
      (!env.device_range(alpha.address, scalar_bytes) || !env.device_range(beta.address, scalar_bytes))) {
    s.refusal = bad(fn, "alpha or beta is not memory of this context");
    return s;
  }
  s.table = t;
  s.handle = static_cast<cusparseHandle_t>(h);
  return s;
}

InvokeOutcome size_reply(size_t bytes) {
  InvokeOutcome out = status(0, "", "");
  ArgWriter w;
  w.u64(bytes);
  out.out = w.take();
  return out;
}

InvokeOutcome run_spmm(CallEnv& env, std::span<const std::byte> args, bool query) {
  const char* fn = query ? "cusparseSpMM_bufferSize" : "cusparseSpMM";
  ArgReader rd(args);
  uint64_t h = 0, buffer = 0;
  int32_t op_a = 0, op_b = 0, compute = 0, alg = 0;
  Scalar alpha, beta;
  sw::SpMat a;
  sw::DnMat b, c;
  rd.u64(&h);
  rd.scalar(&op_a);
  rd.scalar(&op_b);
  rd.scalar(&compute);
  rd.scalar(&alg);
  const uint64_t sbytes = rgpu_data_type_bytes(compute);
  if (sbytes == kNoExtent || sbytes > 16) return bad(fn, "unknown compute type");
  read_scalar(rd, sbytes, &alpha);
  sw::read(rd, &a);
  sw::read(rd, &b);
  read_scalar(rd, sbytes, &beta);
  sw::read(rd, &c);
  if (!query) rd.u64(&buffer);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  if (!op_ok(op_a) || !op_ok(op_b)) return bad(fn, "unknown operation");
  std::string why;
  const char* reason = "";
  if (!sw::spmm_shapes(op_a, op_b, a, b, c, &reason)) return bad(fn, reason);
  if (!check_sparse(env, a, &why) || !check_dense(env, b.values, sw::extent_bytes(b), "B", &why) ||
      !check_dense(env, c.values, sw::extent_bytes(c), "C", &why)) {
    return bad(fn, why);
  }
  Start st = start(env, h, alpha, beta, sbytes, fn);
  if (!st.ok()) return st.refusal;
  const CusparseTable& t = *st.table;
  if (!t.cusparseSpMM_bufferSize || !t.cusparseSpMM) return refuse(kApi, CUSPARSE_STATUS_NOT_SUPPORTED, "cusparse: no SpMM");
  Descriptors d(t);
  cusparseSpMatDescr_t da = nullptr;
  cusparseDnMatDescr_t db = nullptr, dc = nullptr;
  cusparseStatus_t s = d.make(a, &da);
  if (s == CUSPARSE_STATUS_SUCCESS) s = d.make(b, &db);
  if (s == CUSPARSE_STATUS_SUCCESS) s = d.make(c, &dc);
  if (s != CUSPARSE_STATUS_SUCCESS) return status(s, fn, "the library refused a descriptor");
  // The buffer's extent is what the library asks for, asked here rather
  // than believed from the client.
  size_t need = 0;
  s = t.cusparseSpMM_bufferSize(st.handle, cusparseOperation_t(op_a), cusparseOperation_t(op_b), alpha.ptr(), da, db,
                                beta.ptr(), dc, cudaDataType(compute), cusparseSpMMAlg_t(alg), &need);
  if (s != CUSPARSE_STATUS_SUCCESS) return status(s, fn, "buffer size");
  if (query) return size_reply(need);
  if (need != 0 && !env.device_range(buffer, need)) return bad(fn, "the buffer is shorter than the library needs");
  s = t.cusparseSpMM(st.handle, cusparseOperation_t(op_a), cusparseOperation_t(op_b), alpha.ptr(), da, db, beta.ptr(),
                     dc, cudaDataType(compute), cusparseSpMMAlg_t(alg),
                     reinterpret_cast<void*>(static_cast<uintptr_t>(buffer)));
  return status(s, fn, "the library failed");
}

InvokeOutcome run_spmv(CallEnv& env, std::span<const std::byte> args, bool query) {
  const char* fn = query ? "cusparseSpMV_bufferSize" : "cusparseSpMV";
  ArgReader rd(args);
  uint64_t h = 0, buffer = 0;
  int32_t op_a = 0, compute = 0, alg = 0;
  Scalar alpha, beta;
  sw::SpMat a;
  sw::DnVec x, y;
  rd.u64(&h);
  rd.scalar(&op_a);
  rd.scalar(&compute);
  rd.scalar(&alg);
  const uint64_t sbytes = rgpu_data_type_bytes(compute);
  if (sbytes == kNoExtent || sbytes > 16) return bad(fn, "unknown compute type");
  read_scalar(rd, sbytes, &alpha);
  sw::read(rd, &a);
  sw::read(rd, &x);
  read_scalar(rd, sbytes, &beta);
  sw::read(rd, &y);
  if (!query) rd.u64(&buffer);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  if (!op_ok(op_a)) return bad(fn, "unknown operation");
  std::string why;
  const char* reason = "";
  if (!sw::spmv_shapes(op_a, a, x, y, &reason)) return bad(fn, reason);
  if (!check_sparse(env, a, &why) || !check_dense(env, x.values, sw::extent_bytes(x), "x", &why) ||
      !check_dense(env, y.values, sw::extent_bytes(y), "y", &why)) {
    return bad(fn, why);
  }
  Start st = start(env, h, alpha, beta, sbytes, fn);
  if (!st.ok()) return st.refusal;
  const CusparseTable& t = *st.table;
  if (!t.cusparseSpMV_bufferSize || !t.cusparseSpMV) return refuse(kApi, CUSPARSE_STATUS_NOT_SUPPORTED, "cusparse: no SpMV");
  Descriptors d(t);
  cusparseSpMatDescr_t da = nullptr;
  cusparseDnVecDescr_t dx = nullptr, dy = nullptr;
  cusparseStatus_t s = d.make(a, &da);
  if (s == CUSPARSE_STATUS_SUCCESS) s = d.make(x, &dx);
  if (s == CUSPARSE_STATUS_SUCCESS) s = d.make(y, &dy);
  if (s != CUSPARSE_STATUS_SUCCESS) return status(s, fn, "the library refused a descriptor");
  size_t need = 0;
  s = t.cusparseSpMV_bufferSize(st.handle, cusparseOperation_t(op_a), alpha.ptr(), da, dx, beta.ptr(), dy,
                                cudaDataType(compute), cusparseSpMVAlg_t(alg), &need);
  if (s != CUSPARSE_STATUS_SUCCESS) return status(s, fn, "buffer size");
  if (query) return size_reply(need);
  if (need != 0 && !env.device_range(buffer, need)) return bad(fn, "the buffer is shorter than the library needs");
  s = t.cusparseSpMV(st.handle, cusparseOperation_t(op_a), alpha.ptr(), da, dx, beta.ptr(), dy, cudaDataType(compute),
                     cusparseSpMVAlg_t(alg), reinterpret_cast<void*>(static_cast<uintptr_t>(buffer)));
  return status(s, fn, "the library failed");
}

// SDDMM (kSDDMM), its preprocess (kSDDMMPreprocess) and its size query.
InvokeOutcome run_sddmm(CallEnv& env, std::span<const std::byte> args, uint32_t which) {
  const bool query = which == sw::kSDDMMBufferSize;
  const char* fn = query ? "cusparseSDDMM_bufferSize" : which == sw::kSDDMM ? "cusparseSDDMM" : "cusparseSDDMM_preprocess";
  ArgReader rd(args);
  uint64_t h = 0, buffer = 0;
  int32_t op_a = 0, op_b = 0, compute = 0, alg = 0;
  Scalar alpha, beta;
  sw::DnMat a, b;
  sw::SpMat c;
  rd.u64(&h);
  rd.scalar(&op_a);
  rd.scalar(&op_b);
  rd.scalar(&compute);
  rd.scalar(&alg);
  const uint64_t sbytes = rgpu_data_type_bytes(compute);
  if (sbytes == kNoExtent || sbytes > 16) return bad(fn, "unknown compute type");
  read_scalar(rd, sbytes, &alpha);
  sw::read(rd, &a);
  sw::read(rd, &b);
  read_scalar(rd, sbytes, &beta);
  sw::read(rd, &c);
  if (!query) rd.u64(&buffer);
  if (!rd.finish()) return bad(fn, "undecodable arguments");
  if (!op_ok(op_a) || !op_ok(op_b)) return bad(fn, "unknown operation");
  std::string why;
  const char* reason = "";
  if (!sw::sddmm_shapes(op_a, op_b, a, b, c, &reason)) return bad(fn, reason);
  if (!check_dense(env, a.values, sw::extent_bytes(a), "A", &why) ||
      !check_dense(env, b.values, sw::extent_bytes(b), "B", &why) || !check_sparse(env, c, &why)) {
    return bad(fn, why);
  }
  Start st = start(env, h, alpha, beta, sbytes, fn);
  if (!st.ok()) return st.refusal;
  const CusparseTable& t = *st.table;
  if (!t.cusparseSDDMM_bufferSize || !t.cusparseSDDMM_preprocess || !t.cusparseSDDMM) {
    return refuse(kApi, CUSPARSE_STATUS_NOT_SUPPORTED, "cusparse: no SDDMM");
  }
  Descriptors d(t);
  cusparseDnMatDescr_t da = nullptr, db = nullptr;
  cusparseSpMatDescr_t dc = nullptr;
  cusparseStatus_t s = d.make(a, &da);
  if (s == CUSPARSE_STATUS_SUCCESS) s = d.make(b, &db);
  if (s == CUSPARSE_STATUS_SUCCESS) s = d.make(c, &dc);
  if (s != CUSPARSE_STATUS_SUCCESS) return status(s, fn, "the library refused a descriptor");
  size_t need = 0;
  s = t.cusparseSDDMM_bufferSize(st.handle, cusparseOperation_t(op_a), cusparseOperation_t(op_b), alpha.ptr(), da, db,
                                 beta.ptr(), dc, cudaDataType(compute), cusparseSDDMMAlg_t(alg), &need);
  if (s != CUSPARSE_STATUS_SUCCESS) return status(s, fn, "buffer size");
  if (query) return size_reply(need);
  if (need != 0 && !env.device_range(buffer, need)) return bad(fn, "the buffer is shorter than the library needs");
  auto call = which == sw::kSDDMM ? t.cusparseSDDMM : t.cusparseSDDMM_preprocess;
  s = call(st.handle, cusparseOperation_t(op_a), cusparseOperation_t(op_b), alpha.ptr(), da, db, beta.ptr(), dc,
           cudaDataType(compute), cusparseSDDMMAlg_t(alg), reinterpret_cast<void*>(static_cast<uintptr_t>(buffer)));
  return status(s, fn, "the library failed");
}

InvokeOutcome spmm_size(CallEnv& env, std::span<const std::byte> args) { return run_spmm(env, args, true); }
InvokeOutcome spmm(CallEnv& env, std::span<const std::byte> args) { return run_spmm(env, args, false); }
InvokeOutcome spmv_size(CallEnv& env, std::span<const std::byte> args) { return run_spmv(env, args, true); }
InvokeOutcome spmv(CallEnv& env, std::span<const std::byte> args) { return run_spmv(env, args, false); }
InvokeOutcome sddmm_size(CallEnv& env, std::span<const std::byte> args) {
  return run_sddmm(env, args, sw::kSDDMMBufferSize);
}
InvokeOutcome sddmm_preprocess(CallEnv& env, std::span<const std::byte> args) {
  return run_sddmm(env, args, sw::kSDDMMPreprocess);
}
InvokeOutcome sddmm(CallEnv& env, std::span<const std::byte> args) { return run_sddmm(env, args, sw::kSDDMM); }

const DispatchRow kRows[] = {
    {"cusparseSpMM_bufferSize", kApi, sw::kSpMMBufferSize, true, false, &spmm_size},
    {"cusparseSpMM", kApi, sw::kSpMM, false, false, &spmm},
    {"cusparseSpMV_bufferSize", kApi, sw::kSpMVBufferSize, true, false, &spmv_size},
    {"cusparseSpMV", kApi, sw::kSpMV, false, false, &spmv},
    {"cusparseSDDMM_bufferSize", kApi, sw::kSDDMMBufferSize, true, false, &sddmm_size},
    {"cusparseSDDMM_preprocess", kApi, sw::kSDDMMPreprocess, false, false, &sddmm_preprocess},
    {"cusparseSDDMM", kApi, sw::kSDDMM, false, false, &sddmm},
};

}  // namespace

const DispatchRow* find_cusparse_hand_row(uint32_t function) {
  for (const DispatchRow& r : kRows) {
    if (r.function == function) return &r;
  }
  return nullptr;
}

}  // namespace rgpu::server
