// cuFFT's geometry on the wire and the extents it implies (cufft_wire.h).
#include "rgpu/protocol/cufft_wire.h"

namespace rgpu::protocol::cufft {

bool types_of(int32_t cufft_type, int32_t* itype, int32_t* otype, int32_t* etype) {
  switch (cufft_type) {
    case 0x29: *itype = kC32F; *otype = kC32F; *etype = kC32F; return true;  // CUFFT_C2C
    case 0x2a: *itype = kR32F; *otype = kC32F; *etype = kC32F; return true;  // CUFFT_R2C
    case 0x2c: *itype = kC32F; *otype = kR32F; *etype = kC32F; return true;  // CUFFT_C2R
    case 0x69: *itype = kC64F; *otype = kC64F; *etype = kC64F; return true;  // CUFFT_Z2Z
    case 0x6a: *itype = kR64F; *otype = kC64F; *etype = kC64F; return true;  // CUFFT_D2Z
    case 0x6c: *itype = kC64F; *otype = kR64F; *etype = kC64F; return true;  // CUFFT_Z2D
    default: return false;
  }
}

namespace {

// The complex type of a precision, and the real one.
int32_t complex_of(int32_t t) {
  switch (t) {
    case kR16F: case kC16F: return kC16F;
    case kR16BF: case kC16BF: return kC16BF;
    case kR32F: case kC32F: return kC32F;
    case kR64F: case kC64F: return kC64F;
    default: return -1;
  }
}
bool is_complex(int32_t t) { return t == kC16F || t == kC16BF || t == kC32F || t == kC64F; }

}  // namespace

Kind kind_of(const Geometry& g) {
  const int32_t c = complex_of(g.etype);
  if (c < 0 || !is_complex(g.etype)) return Kind::kNone;
  if (complex_of(g.itype) != c || complex_of(g.otype) != c) return Kind::kNone;
  const bool ci = is_complex(g.itype), co = is_complex(g.otype);
  if (ci && co) return Kind::kC2C;
  if (!ci && co) return Kind::kR2C;
  if (ci && !co) return Kind::kC2R;
  return Kind::kNone;
}

const char* check(const Geometry& g) {
  if (g.rank < 1 || g.rank > kMaxRank) return "rank outside 1..3";
  for (int i = 0; i < g.rank; ++i) {
    if (g.n[i] < 1) return "a size below 1";
    if (g.has_inembed && g.inembed[i] < 1) return "an input embed below 1";
    if (g.has_onembed && g.onembed[i] < 1) return "an output embed below 1";
  }
  if (g.batch < 1) return "batch below 1";
  if (g.has_inembed && (g.istride < 1 || g.idist < 0)) return "input stride below 1 or distance below 0";
  if (g.has_onembed && (g.ostride < 1 || g.odist < 0)) return "output stride below 1 or distance below 0";
  if (kind_of(g) == Kind::kNone) return "types that make no transform";
  return nullptr;
}

uint64_t element_bytes(int32_t type) {
  switch (type) {
    case kR16F: case kR16BF: return 2;
    case kC16F: case kC16BF: case kR32F: return 4;
    case kC32F: case kR64F: return 8;
    case kC64F: return 16;
    default: return 0;
  }
}

bool layout(const Geometry& g, bool input, bool in_place, Layout* out) {
  if (check(g)) return false;
  const Kind kind = kind_of(g);
  const bool complex_side = is_complex(input ? g.itype : g.otype);
  Layout l;
  for (int i = 0; i < g.rank; ++i) l.dims[i] = g.n[i];
  const int last = g.rank - 1;
  if (kind != Kind::kC2C && complex_side) l.dims[last] = g.n[last] / 2 + 1;
  const bool has_embed = input ? g.has_inembed : g.has_onembed;
  if (has_embed) {
    for (int i = 0; i < g.rank; ++i) l.embed[i] = input ? g.inembed[i] : g.onembed[i];
    l.stride = input ? g.istride : g.ostride;
    l.dist = input ? g.idist : g.odist;
  } else {
    for (int i = 0; i < g.rank; ++i) l.embed[i] = l.dims[i];
    if (kind != Kind::kC2C && !complex_side && in_place) l.embed[last] = 2 * (g.n[last] / 2 + 1);
    uint64_t per = 1;
    for (int i = 0; i < g.rank; ++i) per = rgpu_mul_extent(per, uint64_t(l.embed[i]));
    if (per == kNoExtent || per > uint64_t(INT64_MAX)) return false;
    l.stride = 1;
    l.dist = int64_t(per);
  }
  *out = l;
  return true;
}

uint64_t extent_bytes(const Geometry& g, bool input, bool in_place) {
  Layout l;
  if (!layout(g, input, in_place, &l)) return kNoExtent;
  // The last element's offset, in elements: every index at its largest.
  uint64_t offset = 0, pitch = 1;
  for (int i = g.rank - 1; i >= 0; --i) {
    offset = rgpu_add_extent(offset, rgpu_mul_extent(uint64_t(l.dims[i] - 1), pitch));
    pitch = rgpu_mul_extent(pitch, uint64_t(l.embed[i]));
  }
  offset = rgpu_mul_extent(offset, uint64_t(l.stride));
  offset = rgpu_add_extent(offset, rgpu_mul_extent(uint64_t(g.batch - 1), uint64_t(l.dist)));
  return rgpu_mul_extent(rgpu_add_extent(offset, 1), element_bytes(input ? g.itype : g.otype));
}

void write_geometry(ArgWriter& w, const Geometry& g) {
  w.scalar(g.rank);
  for (int i = 0; i < kMaxRank; ++i) w.scalar(g.n[i]);
  w.scalar(g.has_inembed);
  for (int i = 0; i < kMaxRank; ++i) w.scalar(g.inembed[i]);
  w.scalar(g.istride);
  w.scalar(g.idist);
  w.scalar(g.has_onembed);
  for (int i = 0; i < kMaxRank; ++i) w.scalar(g.onembed[i]);
  w.scalar(g.ostride);
  w.scalar(g.odist);
  w.scalar(g.itype);
  w.scalar(g.otype);
  w.scalar(g.etype);
  w.scalar(g.batch);
}

bool read_geometry(ArgReader& r, Geometry* g) {
  r.scalar(&g->rank);
  for (int i = 0; i < kMaxRank; ++i) r.scalar(&g->n[i]);
  r.scalar(&g->has_inembed);
  for (int i = 0; i < kMaxRank; ++i) r.scalar(&g->inembed[i]);
  r.scalar(&g->istride);
  r.scalar(&g->idist);
  r.scalar(&g->has_onembed);
  for (int i = 0; i < kMaxRank; ++i) r.scalar(&g->onembed[i]);
  r.scalar(&g->ostride);
  r.scalar(&g->odist);
  r.scalar(&g->itype);
  r.scalar(&g->otype);
  r.scalar(&g->etype);
  if (!r.scalar(&g->batch)) return false;
  return (g->rank >= 1 && g->rank <= kMaxRank) || r.reject();
}

}  // namespace rgpu::protocol::cufft
