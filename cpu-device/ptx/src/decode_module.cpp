// A module's load (variables, function signatures, kernel parameter
// layouts; bodies located, not parsed) and a kernel's decode: the kernel and
// every function it can reach, its shared memory, local memory and stack
// (decode.h). Each function body is decoded by decode.cpp.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "decode.h"

namespace rgpu::ptx {
namespace {

uint32_t decl_size(const ast::Decl& d, uint64_t cap) {
  return static_cast<uint32_t>(std::min<uint64_t>(
      uint64_t{ast::type_size(d.type)} * d.vec * static_cast<uint64_t>(d.array < 0 ? 1 : d.array), cap));
}

void operand_names(const ast::Operand& o, std::vector<const std::string*>* out) {
  if (!o.name.empty()) out->push_back(&o.name);
  if (!o.pair.empty()) out->push_back(&o.pair);
  for (const auto& e : o.elems) operand_names(e, out);
}

}  // namespace

Result<std::unique_ptr<ProgramImpl>> load_module(std::string text) {
  auto p = std::make_unique<ProgramImpl>();
  p->text = std::move(text);
  Result<ast::Module> parsed = ast::parse(p->text);
  if (!parsed.is_ok()) return parsed.status();
  p->ast = std::move(parsed.value());
  const ast::Module& m = p->ast;
  p->version = m.version;
  p->target = m.target;
  auto& vars = p->var_index;
  auto add_var = [&](const ast::Decl& d) -> Status {
    if (vars.count(d.name)) {
      // A later definition of an .extern declaration replaces it.
      VariableInfo& old = p->variables[vars[d.name]];
      if (!old.is_extern || d.is_extern) return invalid_argument("line " + std::to_string(d.line) + ": " + d.name + " declared twice");
    }
    VariableInfo v;
    v.name = d.name;
    v.space = d.space == "shared" ? Space::kShared : d.space == "const" ? Space::kConst
            : d.space == "local" ? Space::kLocal : Space::kGlobal;
    uint32_t esz = ast::type_size(d.type) * d.vec;
    v.size = uint64_t{esz} * static_cast<uint64_t>(d.array < 0 ? 1 : d.array);
    v.align = d.align ? d.align : std::max<uint32_t>(1, esz);
    v.init = d.init;
    if (v.init.size() > v.size) {
      if (d.array == 0) v.size = v.init.size();  // b8 s[] = {...}
      else return invalid_argument("line " + std::to_string(d.line) + ": initializer larger than " + d.name);
    }
    v.is_extern = d.is_extern;
    v.visible = d.visible;
    if (v.space == Space::kLocal) return invalid_argument("line " + std::to_string(d.line) + ": module-scope .local is not supported");
    if (v.space == Space::kShared && v.size > (1u << 26))
      return invalid_argument("line " + std::to_string(d.line) + ": shared variable too large");
    if (vars.count(d.name)) {
      p->variables[vars[d.name]] = v;
    } else {
      vars[d.name] = static_cast<uint32_t>(p->variables.size());
      p->variables.push_back(std::move(v));
    }
    return Status::ok();
  };
  for (const auto& d : m.variables)
    if (Status s = add_var(d); !s.is_ok()) return s;
  // Variables declared inside a body are module variables in all but scope;
  // only the bodies that may declare some are read now.
  for (const auto& f : m.functions) {
    if (!f.declares_variables) continue;
    Result<std::vector<ast::Decl>> decls = ast::body_variables(f);
    if (!decls.is_ok()) return decls.status();
    for (const auto& d : decls.value())
      if (Status s = add_var(d); !s.is_ok()) return s;
  }
  // Functions: a prototype and its definition share one name; the
  // definition is the one used.
  for (size_t i = 0; i < m.functions.size(); ++i) {
    const ast::Function& f = m.functions[i];
    auto it = p->func_index.find(f.name);
    if (it == p->func_index.end()) {
      p->func_index.emplace(f.name, static_cast<uint32_t>(i));
      continue;
    }
    const ast::Function& prev = m.functions[it->second];
    if (f.has_body && prev.has_body) return invalid_argument("line " + std::to_string(f.line) + ": " + f.name + " defined twice");
    if (f.has_body || !prev.has_body) it->second = static_cast<uint32_t>(i);
  }
  for (size_t i = 0; i < m.functions.size(); ++i) {
    const ast::Function& f = m.functions[i];
    if (!f.entry || p->func_index[f.name] != i) continue;
    KernelInfo k;
    k.name = f.name;
    uint32_t off = 0;
    for (const auto& q : f.params) {
      ParamInfo pi;
      pi.name = q.name;
      pi.align = q.align ? q.align : std::max<uint32_t>(1, ast::type_size(q.type));
      pi.size = decl_size(q, 1u << 20);
      pi.offset = align_up(off, pi.align);
      off = pi.offset + pi.size;
      k.params.push_back(pi);
    }
    if (off > 32764 + 4096 * 8) return invalid_argument("line " + std::to_string(f.line) + ": kernel parameters too large");
    k.param_bytes = off;
    k.max_threads = f.max_threads ? f.max_threads : 1024;
    p->kernel_function.push_back(static_cast<int>(i));
    p->kernels.push_back(std::move(k));
  }
  p->lazy = std::make_unique<ProgramImpl::Lazy[]>(p->kernels.size());
  return p;
}

Result<std::unique_ptr<KernelUnit>> decode_kernel(const ProgramImpl& p, int kernel, KernelInfo* info) {
  const ast::Module& m = p.ast;
  auto u = std::make_unique<KernelUnit>();
  // The kernel and every function it names, transitively: [0] is the kernel.
  std::vector<ast::Function> src;
  std::unordered_map<std::string, uint32_t> funcs;
  std::vector<bool> var_used(p.variables.size(), false);
  auto add = [&](uint32_t ast_index) -> Status {
    const ast::Function& f = m.functions[ast_index];
    funcs.emplace(f.name, static_cast<uint32_t>(src.size()));
    src.push_back(f);
    return ast::parse_body(&src.back());
  };
  if (Status s = add(static_cast<uint32_t>(p.kernel_function[static_cast<size_t>(kernel)])); !s.is_ok()) return s;
  std::vector<const std::string*> names;
  for (size_t i = 0; i < src.size(); ++i) {
    names.clear();
    for (const auto& st : src[i].body)
      if (st.kind == ast::Statement::Kind::kInstruction)
        for (const auto& o : st.inst.ops) operand_names(o, &names);
    for (const std::string* n : names) {
      if (auto v = p.var_index.find(*n); v != p.var_index.end()) var_used[v->second] = true;
      auto f = p.func_index.find(*n);
      if (f != p.func_index.end() && !funcs.count(*n))
        if (Status s = add(f->second); !s.is_ok()) return s;
    }
  }
  // Shared memory: the variables this kernel can reach, one after another;
  // dynamic shared memory (.extern .shared) after them, 16-byte aligned.
  u->shared_offset.assign(p.variables.size(), 0);
  uint64_t end = 0;
  for (size_t v = 0; v < p.variables.size(); ++v) {
    const VariableInfo& var = p.variables[v];
    if (!var_used[v] || var.space != Space::kShared || var.is_extern) continue;
    uint64_t a = std::max<uint32_t>(1, var.align);
    uint64_t off = (end + a - 1) / a * a;
    if (off + var.size > (1u << 30)) return invalid_argument("shared memory of " + info->name + " too large at " + var.name);
    u->shared_offset[v] = static_cast<uint32_t>(off);
    end = off + var.size;
  }
  u->dyn_shared_base = static_cast<uint32_t>((end + 15) / 16 * 16);
  for (size_t v = 0; v < p.variables.size(); ++v)
    if (p.variables[v].space == Space::kShared && p.variables[v].is_extern) u->shared_offset[v] = u->dyn_shared_base;

  // Signatures first (callers may precede callees), then bodies.
  u->functions.resize(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    Function& fn = u->functions[i];
    const ast::Function& f = src[i];
    fn.name = f.name;
    fn.entry = f.entry;
    fn.is_extern = f.is_extern;
    fn.max_threads = f.max_threads;
    fn.has_body = f.has_body;
    if (f.entry) continue;
    uint32_t off = 0;
    auto lay = [&](const ast::Decl& d, std::vector<uint32_t>* offs, std::vector<uint32_t>* sizes) {
      uint32_t a = d.align ? d.align : std::max<uint32_t>(1, ast::type_size(d.type));
      uint32_t sz = decl_size(d, 1u << 30);
      off = align_up(off, a);
      offs->push_back(off);
      sizes->push_back(sz);
      off += sz;
    };
    for (const auto& r : f.rets) lay(r, &fn.ret_offsets, &fn.ret_sizes);
    for (const auto& q : f.params) lay(q, &fn.param_offsets, &fn.param_sizes);
  }
  for (size_t i = 0; i < src.size(); ++i) {
    if (!src[i].has_body) continue;
    if (i > 0 && src[i].entry) return invalid_argument("line " + std::to_string(src[i].line) + ": a kernel calls kernel " + src[i].name);
    Function& fn = u->functions[i];
    fn.param_offsets.clear();
    fn.param_sizes.clear();
    fn.ret_offsets.clear();
    fn.ret_sizes.clear();
    if (Status s = decode_function(*u, p.variables, funcs, p.var_index, src[i], fn, i == 0 ? &info->params : nullptr);
        !s.is_ok()) {
      return s;
    }
    src[i].body = {};  // the statements are not needed any more
  }
  // Reachable functions -> unsupported reason, shared bytes, stack.
  std::vector<int> stack{0};
  std::vector<bool> seen(u->functions.size(), false);
  uint64_t local = 0;
  uint32_t shared = 0, regs = 0;
  bool recursive = false;
  while (!stack.empty()) {
    int fi = stack.back();
    stack.pop_back();
    if (seen[fi]) { recursive = true; continue; }
    seen[fi] = true;
    const Function& fn = u->functions[fi];
    if (u->unsupported.empty() && !fn.unsupported.empty()) u->unsupported = fn.unsupported;
    local += fn.local_bytes;
    regs = std::max(regs, fn.num_slots);
    for (uint32_t v : fn.shared_vars)
      if (!p.variables[v].is_extern)
        shared = std::max<uint32_t>(shared, u->shared_offset[v] + static_cast<uint32_t>(p.variables[v].size));
    for (const auto& cs : fn.calls)
      if (cs.callee >= 0) stack.push_back(cs.callee);
  }
  // Recursion or shared callees: leave room for a few nested frames.
  if (recursive) local = local * 4 + 4096;
  info->static_shared_bytes = shared;
  info->local_bytes = static_cast<uint32_t>(std::min<uint64_t>(local, 1u << 20));
  info->num_regs = regs;
  return u;
}

}  // namespace rgpu::ptx
