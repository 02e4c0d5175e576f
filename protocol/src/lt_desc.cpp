// cuBLASLt's descriptor bags: setting, reading and their wire form.
#include "rgpu/protocol/lt_desc.h"

namespace rgpu::protocol::lt {

AttrStatus set_attr(Desc& d, uint32_t id, const void* buf, size_t size) {
  const AttrInfo* a = find_attr(d.kind, id);
  if (!a || !buf || size != a->bytes) return AttrStatus::kInvalid;
  if (a->refused) return AttrStatus::kRefused;
  d.values[id] = canonical(*a, buf);
  d.set |= uint64_t{1} << id;
  return AttrStatus::kOk;
}

AttrStatus get_attr(const Desc& d, uint32_t id, void* buf, size_t size, size_t* written) {
  const AttrInfo* a = find_attr(d.kind, id);
  if (!a) return AttrStatus::kInvalid;
  if (size == 0) {
    if (!written) return AttrStatus::kInvalid;
    *written = a->bytes;
    return AttrStatus::kOk;
  }
  if (!buf || size != a->bytes) return AttrStatus::kInvalid;
  const uint64_t v = value(d, id);
  std::memcpy(buf, &v, a->bytes);  // little-endian: the value's low bytes
  if (written) *written = a->bytes;
  return AttrStatus::kOk;
}

void write(ArgWriter& w, const Desc& d) {
  w.u64(d.kind);
  w.u64(d.set);
  for (uint32_t id = 0; id < 64; ++id) {
    if ((d.set >> id) & 1) w.u64(d.values[id]);
  }
}

bool read(ArgReader& r, uint32_t kind, Desc* d) {
  uint64_t k = 0, set = 0;
  if (!r.u64(&k) || !r.u64(&set)) return false;
  if (k != kind) return r.reject();
  d->kind = kind;
  d->set = set;
  for (uint32_t id = 0; id < 64; ++id) {
    if (!((set >> id) & 1)) continue;
    const AttrInfo* a = find_attr(kind, id);
    if (!a || !r.u64(&d->values[id]) || !is_canonical(*a, d->values[id])) return r.reject();
  }
  return true;
}

}  // namespace rgpu::protocol::lt
