// Module-level decoding helpers: PTX type names, and the placement of
// shared variables per kernel.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "decode.h"

namespace rgpu::ptx {

Ty parse_ty(const std::string& t) {
  static const struct { const char* n; Ty t; } kTys[] = {
      {"b8", Ty::kB8},     {"b16", Ty::kB16},   {"b32", Ty::kB32},       {"b64", Ty::kB64},   {"u8", Ty::kU8},
      {"u16", Ty::kU16},   {"u32", Ty::kU32},   {"u64", Ty::kU64},       {"s8", Ty::kS8},     {"s16", Ty::kS16},
      {"s32", Ty::kS32},   {"s64", Ty::kS64},   {"f16", Ty::kF16},       {"f16x2", Ty::kF16x2},
      {"bf16", Ty::kBF16}, {"bf16x2", Ty::kBF16x2}, {"f32", Ty::kF32},   {"f64", Ty::kF64},   {"pred", Ty::kPred},
      {"b128", Ty::kB128},
  };
  for (const auto& e : kTys)
    if (t == e.n) return e.t;
  return Ty::kNone;
}

uint32_t ty_size(Ty t) {
  switch (t) {
    case Ty::kB8: case Ty::kU8: case Ty::kS8: case Ty::kPred: return 1;
    case Ty::kB16: case Ty::kU16: case Ty::kS16: case Ty::kF16: case Ty::kBF16: return 2;
    case Ty::kB32: case Ty::kU32: case Ty::kS32: case Ty::kF32: case Ty::kF16x2: case Ty::kBF16x2: return 4;
    case Ty::kB64: case Ty::kU64: case Ty::kS64: case Ty::kF64: return 8;
    case Ty::kB128: return 16;
    case Ty::kNone: return 0;
  }
  return 0;
}

namespace {

void operand_names(const ast::Operand& o, std::vector<const std::string*>* out) {
  if (!o.name.empty()) out->push_back(&o.name);
  if (!o.pair.empty()) out->push_back(&o.pair);
  for (const auto& e : o.elems) operand_names(e, out);
}

}  // namespace

// Places shared variables so that each kernel's static shared memory holds
// only what it can reach: variables no kernel uses together may overlap.
// Dynamic shared memory (.extern .shared) starts after the static shared
// memory of every kernel that uses it.
Status layout_shared(const ast::Module& m, const std::unordered_map<std::string, uint32_t>& vars, ProgramImpl* p) {
  std::unordered_map<std::string, size_t> bodies;
  for (size_t i = 0; i < m.functions.size(); ++i)
    if (m.functions[i].has_body) bodies[m.functions[i].name] = i;
  std::vector<std::vector<const std::string*>> refs(m.functions.size());
  for (size_t i = 0; i < m.functions.size(); ++i)
    for (const auto& st : m.functions[i].body)
      if (st.kind == ast::Statement::Kind::kInstruction)
        for (const auto& o : st.inst.ops) operand_names(o, &refs[i]);
  const size_t nv = p->variables.size();
  std::vector<std::vector<uint32_t>> var_kernels(nv);
  uint32_t kernels = 0;
  for (size_t i = 0; i < m.functions.size(); ++i) {
    if (!m.functions[i].entry || !m.functions[i].has_body) continue;
    std::vector<bool> seen(m.functions.size(), false);
    std::vector<size_t> todo{i};
    seen[i] = true;
    while (!todo.empty()) {
      size_t f = todo.back();
      todo.pop_back();
      for (const std::string* name : refs[f]) {
        auto b = bodies.find(*name);
        if (b != bodies.end() && !seen[b->second]) {
          seen[b->second] = true;
          todo.push_back(b->second);
        }
        auto v = vars.find(*name);
        if (v != vars.end() && p->variables[v->second].space == Space::kShared) {
          auto& ks = var_kernels[v->second];
          if (ks.empty() || ks.back() != kernels) ks.push_back(kernels);
        }
      }
    }
    ++kernels;
  }
  std::vector<uint64_t> kernel_end(kernels, 0);
  for (size_t v = 0; v < nv; ++v) {
    const VariableInfo& var = p->variables[v];
    if (var.space != Space::kShared || var.is_extern) continue;
    uint64_t base = 0;
    for (uint32_t k : var_kernels[v]) base = std::max(base, kernel_end[k]);
    uint64_t a = std::max<uint32_t>(1, var.align);
    uint64_t off = (base + a - 1) / a * a;
    if (off + var.size > (1u << 30)) return invalid_argument("shared memory of the module too large at " + var.name);
    p->shared_offset[v] = static_cast<uint32_t>(off);
    for (uint32_t k : var_kernels[v]) kernel_end[k] = off + var.size;
  }
  uint64_t dyn = 0;
  for (size_t v = 0; v < nv; ++v)
    if (p->variables[v].space == Space::kShared && p->variables[v].is_extern)
      for (uint32_t k : var_kernels[v]) dyn = std::max(dyn, kernel_end[k]);
  p->dyn_shared_base = static_cast<uint32_t>((dyn + 15) / 16 * 16);
  for (size_t v = 0; v < nv; ++v)
    if (p->variables[v].space == Space::kShared && p->variables[v].is_extern) p->shared_offset[v] = p->dyn_shared_base;
  return Status::ok();
}

}  // namespace rgpu::ptx
