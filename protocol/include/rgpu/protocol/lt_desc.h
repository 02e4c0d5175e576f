// cuBLASLt's descriptors (matmul descriptor, matrix layout, matmul
// preference) as rgpu keeps them: a bag of attribute values, the same on
// both sides. The client creates, sets, reads and destroys them locally with
// cuBLASLt's sizes; a call that uses one sends it whole; rgpud decodes it
// with read(), checks it and rebuilds the library's own descriptor from it.
// The attributes (value, size, default, flags) are generated from
// api/cublasLt.api into protocol/generated/lt_attributes.h.
//
// Values are kept canonical, as 64 bits: a signed attribute sign-extended,
// an unsigned one zero-extended, a float as its 32-bit pattern. On the wire
// a bag is its kind, the mask of the attributes set, then one 8-byte item
// per set attribute in ascending order; read() refuses anything else (an
// unknown attribute, a value that its type cannot hold), so one bag has one
// encoding. Every function here is a pure function of its arguments
// (protocol/src/lt_desc.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lt_attributes.h"
#include "rgpu/protocol/args.h"
#include "rgpu/protocol/library_sizes.h"

namespace rgpu::protocol::lt {

// What one attribute is.
struct AttrInfo {
  uint32_t kind;      // attr::kMatmul, kLayout, kPreference
  const char* name;   // its cublasLt.h enumerator
  uint32_t id;        // the enumerator's value (below 64)
  uint32_t bytes;     // the size SetAttribute and GetAttribute take
  bool is_signed;
  bool is_float;
  bool device;        // a device pointer rgpud checks
  bool refused;       // answered CUBLAS_STATUS_NOT_SUPPORTED when set
  uint64_t fallback;  // the value an unset attribute reads as
};

inline constexpr AttrInfo kAttributes[] = {
#define RGPU_LT_ATTR_ROW(kind, name, id, bytes, sgn, flt, dev, ref, dflt) \
  {kind, #name, id, bytes, sgn, flt, dev, ref, static_cast<uint64_t>(dflt)},
    RGPU_LT_ATTRIBUTES(RGPU_LT_ATTR_ROW)
#undef RGPU_LT_ATTR_ROW
};

// The attribute `id` of descriptor `kind`, or null when it has none.
constexpr const AttrInfo* find_attr(uint32_t kind, uint32_t id) {
  for (const AttrInfo& a : kAttributes) {
    if (a.kind == kind && a.id == id) return &a;
  }
  return nullptr;
}

// A descriptor: its kind and the values of the attributes set. The client
// hands out a pointer to one as the cuBLASLt handle type, so `magic` tells
// rgpu's descriptors from a foreign pointer.
struct Desc {
  static constexpr uint32_t kMagic = 0x6c744453;  // "SDtl"
  uint32_t magic = kMagic;
  uint32_t kind = 0;
  uint64_t set = 0;          // bit `id`: attribute `id` was set
  uint64_t values[64] = {};  // canonical values, by id
};

// The outcome of setting or reading an attribute.
enum class AttrStatus { kOk, kInvalid, kRefused };

// The canonical form of `bytes` bytes of `a`'s type.
inline uint64_t canonical(const AttrInfo& a, const void* buf) {
  uint64_t v = 0;
  std::memcpy(&v, buf, a.bytes);  // little-endian, as every host rgpu runs on
  if (a.is_signed && a.bytes < 8 && (v >> (8 * a.bytes - 1)) & 1) v |= ~uint64_t{0} << (8 * a.bytes);
  return v;
}

// Whether `v` is the canonical form of some value of `a`'s type.
inline bool is_canonical(const AttrInfo& a, uint64_t v) {
  if (a.bytes == 8) return true;
  uint64_t low = v & ((uint64_t{1} << (8 * a.bytes)) - 1);
  return canonical(a, &low) == v;
}

// The value of attribute `id`: the one set, else its default.
inline uint64_t value(const Desc& d, uint32_t id) {
  if (id < 64 && (d.set >> id) & 1) return d.values[id];
  const AttrInfo* a = find_attr(d.kind, id);
  return a ? a->fallback : 0;
}
inline int64_t signed_value(const Desc& d, uint32_t id) { return static_cast<int64_t>(value(d, id)); }

// cublasLt*SetAttribute: `size` must be the attribute's own; a refused
// attribute is not stored.
AttrStatus set_attr(Desc& d, uint32_t id, const void* buf, size_t size);

// cublasLt*GetAttribute: size 0 asks for the size (in *written); otherwise
// the buffer must hold exactly the attribute.
AttrStatus get_attr(const Desc& d, uint32_t id, void* buf, size_t size, size_t* written);

void write(ArgWriter& w, const Desc& d);

// Reads a bag of kind `kind`; leaves `r` failed when it is not one (another
// kind, an attribute the kind does not have, a value its type cannot hold).
bool read(ArgReader& r, uint32_t kind, Desc* d);

// The first refused attribute set in `d`, or null.
inline const AttrInfo* refused_attr(const Desc& d) {
  for (const AttrInfo& a : kAttributes) {
    if (a.kind == d.kind && a.refused && ((d.set >> a.id) & 1)) return &a;
  }
  return nullptr;
}

// A matmul descriptor's pointer mode (cublasLtPointerMode_t): 0 host, 1
// device, the vector modes above.
inline uint32_t pointer_mode(const Desc& d) {
  return static_cast<uint32_t>(value(d, attr::CUBLASLT_MATMUL_DESC_POINTER_MODE));
}

}  // namespace rgpu::protocol::lt

// The lengths the description's expressions name (cublasLt.api), global as
// library_sizes.h's are.

// Bytes of a matmul's alpha and beta: one value of its scale type.
inline uint64_t rgpu_lt_scale_bytes(const rgpu::protocol::lt::Desc& d) {
  return rgpu_data_type_bytes(rgpu::protocol::lt::signed_value(d, rgpu::protocol::lt::attr::CUBLASLT_MATMUL_DESC_SCALE_TYPE));
}
inline uint64_t rgpu_lt_scale_bytes(const rgpu::protocol::lt::Desc* d) { return d ? rgpu_lt_scale_bytes(*d) : kNoExtent; }

// Bytes of device memory a matrix layout spans: its batch, `stride`
// elements apart, each rows x cols with leading dimension ld in its order
// (column: ld >= rows; row: ld >= cols). kNoExtent for what cannot be
// sized here: another order, a pointer-array batch, planar complex, an
// unknown or sub-byte type, a batch at a negative stride (lt_check refuses
// those first).
inline uint64_t rgpu_lt_matrix_bytes(const rgpu::protocol::lt::Desc& d) {
  namespace a = rgpu::protocol::lt::attr;
  using rgpu::protocol::lt::signed_value;
  using rgpu::protocol::lt::value;
  const int64_t order = signed_value(d, a::CUBLASLT_MATRIX_LAYOUT_ORDER);
  if ((order != 0 && order != 1) || value(d, a::CUBLASLT_MATRIX_LAYOUT_BATCH_MODE) != 0 ||
      value(d, a::CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET) != 0) {
    return kNoExtent;  // CUBLASLT_ORDER_COL 0, CUBLASLT_ORDER_ROW 1; strided batches only
  }
  const uint64_t rows = value(d, a::CUBLASLT_MATRIX_LAYOUT_ROWS), cols = value(d, a::CUBLASLT_MATRIX_LAYOUT_COLS);
  const int64_t ld = signed_value(d, a::CUBLASLT_MATRIX_LAYOUT_LD);
  const int64_t batch = signed_value(d, a::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
  const int64_t stride = signed_value(d, a::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
  const uint64_t elem = rgpu_data_type_bytes(signed_value(d, a::CUBLASLT_MATRIX_LAYOUT_TYPE));
  if (rows > uint64_t{INT64_MAX} || cols > uint64_t{INT64_MAX} || batch < 1) return kNoExtent;
  // Stored as column-major `inner` x `outer`: a row-major matrix is its transpose.
  const long long inner = static_cast<long long>(order == 0 ? rows : cols);
  const long long outer = static_cast<long long>(order == 0 ? cols : rows);
  // One matrix has no stride to speak of; a batch's must not be negative.
  return rgpu_blas_batch_bytes(0, inner, outer, ld, batch == 1 ? 0 : stride, batch, elem);
}
