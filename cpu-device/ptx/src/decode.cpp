// Decoder of one function's body: resolves names to register slots, labels
// to instruction indices and opcodes to handler pointers, so that the
// interpreter never touches a string. A module's load and a kernel's
// closure over the functions it calls are in decode_module.cpp.
#include "decode.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace rgpu::ptx {
namespace {

// A name visible in a function body.
struct Sym {
  enum class Kind : uint8_t { kReg, kLParam, kKParam, kLocal, kVar, kFunc } kind;
  uint32_t index = 0;  // slot, offset, variable or function index
  uint32_t size = 0;
};

class FunctionDecoder {
 public:
  FunctionDecoder(KernelUnit& u, const std::vector<VariableInfo>& variables,
                  const std::unordered_map<std::string, uint32_t>& funcs,
                  const std::unordered_map<std::string, uint32_t>& vars, const ast::Function& src,
                  Function& out, const std::vector<ParamInfo>* kparams)
      : u_(u), variables_(variables), funcs_(funcs), vars_(vars), src_(src), f_(out), kparams_(kparams) {}

  Status run() {
    scopes_.emplace_back();
    // Parameter area: returns, then parameters (.func); kernel params are a
    // separate buffer addressed by kParamKernel.
    if (!f_.entry) {
      for (const auto& r : src_.rets) {
        uint32_t sz = decl_bytes(r);
        uint32_t off = alloc_lparam(sz, r.align ? r.align : std::max<uint32_t>(1, ast::type_size(r.type)));
        f_.ret_offsets.push_back(off);
        f_.ret_sizes.push_back(sz);
        scopes_.back()[r.name] = {Sym::Kind::kLParam, off, sz};
      }
      for (const auto& q : src_.params) {
        uint32_t sz = decl_bytes(q);
        uint32_t off = alloc_lparam(sz, q.align ? q.align : std::max<uint32_t>(1, ast::type_size(q.type)));
        f_.param_offsets.push_back(off);
        f_.param_sizes.push_back(sz);
        scopes_.back()[q.name] = {Sym::Kind::kLParam, off, sz};
      }
    } else {
      for (const auto& q : *kparams_) scopes_.back()[q.name] = {Sym::Kind::kKParam, q.offset, q.size};
    }
    zero_slot_ = imm_slot(0);
    // First pass: labels to instruction indices.
    uint32_t pc = 0;
    for (const auto& st : src_.body) {
      if (st.kind == ast::Statement::Kind::kLabel) labels_[st.label] = pc;
      if (st.kind == ast::Statement::Kind::kInstruction) ++pc;
    }
    for (const auto& st : src_.body) {
      switch (st.kind) {
        case ast::Statement::Kind::kOpen: scopes_.emplace_back(); break;
        case ast::Statement::Kind::kClose:
          if (scopes_.size() > 1) scopes_.pop_back();
          break;
        case ast::Statement::Kind::kLabel: break;
        case ast::Statement::Kind::kDecl:
          if (Status s = declare(st.decl); !s.is_ok()) return s;
          break;
        case ast::Statement::Kind::kInstruction: {
          Inst in;
          in.line = st.inst.line;
          if (Status s = instruction(st.inst, in); !s.is_ok()) return s;
          f_.code.push_back(in);
          break;
        }
      }
    }
    // Falling off the end returns (or exits, for a kernel).
    Inst tail;
    tail.kind = f_.entry ? Kind::kExit : Kind::kRet;
    tail.line = src_.body.empty() ? src_.line : src_.body.back().line;
    f_.code.push_back(tail);
    if (next_slot_ > 2 * kMaxSlots) return err(src_.line, "function " + f_.name + " is too large");
    f_.num_slots = next_slot_;
    f_.lparam_bytes = align_up(lparam_bytes_, 8);
    f_.local_bytes = align_up(local_bytes_, 16);
    return Status::ok();
  }

 private:
  Status err(uint32_t line, const std::string& m) {
    return invalid_argument("line " + std::to_string(line) + ": " + m);
  }
  uint32_t decl_bytes(const ast::Decl& d) {
    uint64_t n = uint64_t{ast::type_size(d.type)} * d.vec * static_cast<uint64_t>(d.array < 0 ? 1 : d.array);
    return static_cast<uint32_t>(std::min<uint64_t>(n, 1u << 30));
  }
  uint32_t alloc_lparam(uint32_t size, uint32_t align) {
    lparam_bytes_ = align_up(lparam_bytes_, align) + size;
    return lparam_bytes_ - size;
  }
  // Each slot costs 256 bytes per warp: keep hostile modules bounded. nvcc
  // numbers registers without reuse, so large kernels (flash attention)
  // declare some 20000; 65536 slots are 16 MiB per warp.
  static constexpr uint32_t kMaxSlots = 1u << 16;
  uint32_t new_slot() { return next_slot_++; }
  uint32_t imm_slot(uint64_t v) {
    auto it = imms_.find(v);
    if (it != imms_.end()) return it->second;
    uint32_t s = new_slot();
    f_.inits.push_back({SlotInit::Kind::kImm, s, 0, v});
    imms_[v] = s;
    return s;
  }
  uint32_t init_slot(SlotInit::Kind k, uint32_t index, uint64_t value) {
    uint64_t key = (static_cast<uint64_t>(k) << 56) ^ (uint64_t{index} << 32) ^ value;
    auto it = inits_.find(key);
    if (it != inits_.end()) return it->second;
    uint32_t s = new_slot();
    f_.inits.push_back({k, s, index, value});
    inits_[key] = s;
    return s;
  }
  const Sym* lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return &f->second;
    }
    return nullptr;
  }

  Status declare(const ast::Decl& d) {
    auto& scope = scopes_.back();
    if (d.space == "reg") {
      if (next_slot_ + static_cast<uint64_t>(d.range < 0 ? 1 : d.range) > kMaxSlots)
        return err(d.line, "too many registers (more than " + std::to_string(kMaxSlots) + ")");
      if (d.range >= 0) {
        for (int64_t i = 0; i < d.range; ++i)
          scope[d.name + std::to_string(i)] = {Sym::Kind::kReg, new_slot(), ast::type_size(d.type)};
      } else if (d.vec > 1) {
        return err(d.line, "vector registers are not supported");
      } else {
        scope[d.name] = {Sym::Kind::kReg, new_slot(), ast::type_size(d.type)};
      }
      return Status::ok();
    }
    uint32_t align = d.align ? d.align : std::max<uint32_t>(1, ast::type_size(d.type));
    uint32_t size = decl_bytes(d);
    if (d.space == "param") {
      scope[d.name] = {Sym::Kind::kLParam, alloc_lparam(size, align), size};
      return Status::ok();
    }
    if (d.space == "local") {
      if (d.has_init) return err(d.line, "initialized .local variables are not supported");
      local_bytes_ = align_up(local_bytes_, align);
      scope[d.name] = {Sym::Kind::kLocal, local_bytes_, size};
      local_bytes_ += size;
      if (local_bytes_ > (1u << 24)) return err(d.line, "local frame too large");
      return Status::ok();
    }
    // Function-scope .shared/.global/.const: module variables in all but scope.
    auto it = vars_.find(d.name);
    if (it == vars_.end()) return err(d.line, "internal: undeclared variable " + d.name);
    scope[d.name] = {Sym::Kind::kVar, it->second, size};
    return Status::ok();
  }

  // Resolves a value operand to a slot.
  Status value(const ast::Operand& o, uint32_t line, uint32_t* slot, bool generic_symbols = false) {
    using K = ast::Operand::Kind;
    switch (o.kind) {
      case K::kInt:
      case K::kF32:
      case K::kF64: *slot = imm_slot(o.bits); return Status::ok();
      case K::kSink: *slot = new_slot(); return Status::ok();
      case K::kName:
      case K::kAddr: {
        uint64_t off = o.kind == K::kAddr ? o.bits : 0;
        if (o.negated) return err(line, "'!' is only allowed on predicates in this position");
        if (const Sym* s = lookup(o.name)) {
          switch (s->kind) {
            case Sym::Kind::kReg:
              if (off) return err(line, "register with offset used as a value");
              *slot = s->index;
              return Status::ok();
            case Sym::Kind::kVar: {
              const VariableInfo& v = variables_[s->index];
              if (v.space == Space::kShared) {
                note_shared(s->index);
                *slot = generic_symbols ? init_slot(SlotInit::Kind::kSharedGeneric, 0, u_.shared_offset[s->index] + off)
                                        : imm_slot(u_.shared_offset[s->index] + off);
              } else {
                *slot = init_slot(SlotInit::Kind::kVarAddr, s->index, off);
              }
              return Status::ok();
            }
            case Sym::Kind::kLocal: *slot = init_slot(SlotInit::Kind::kLocalAddr, 0, s->index + off); return Status::ok();
            case Sym::Kind::kKParam:
            case Sym::Kind::kLParam: *slot = imm_slot(s->index + off); return Status::ok();
            case Sym::Kind::kFunc: break;
          }
          return err(line, "cannot use " + o.name + " as a value");
        }
        if (Special sp; special_register(o.name, &sp)) {
          if (sp >= kAggrSmem && sp <= kReserved1) u_.reserved_smem = true;
          *slot = init_slot(SlotInit::Kind::kSpecial, sp, 0);
          return Status::ok();
        }
        if (o.name == "WARP_SZ") {  // PTX's predefined constant: the warp size
          *slot = imm_slot(32);
          return Status::ok();
        }
        auto v = vars_.find(o.name);
        if (v != vars_.end()) {
          Sym tmp{Sym::Kind::kVar, v->second, 0};
          scopes_.front()[o.name] = tmp;
          return value(o, line, slot, generic_symbols);
        }
        if (funcs_.count(o.name)) return err(line, "function addresses are not supported (" + o.name + ")");
        if (o.name == "%tid" || o.name == "%ntid" || o.name == "%ctaid" || o.name == "%nctaid" ||
            o.name == "%clusterid" || o.name == "%nclusterid" || o.name == "%cluster_ctaid" ||
            o.name == "%cluster_nctaid")
          return err(line, "special register " + o.name + " read as a whole vector is not supported (read .x, .y, .z)");
        if (!o.name.empty() && o.name[0] == '%')
          return err(line, "unknown register or special register " + o.name);
        return err(line, "unknown name " + o.name);
      }
      default: return err(line, "unexpected operand");
    }
  }
  void note_shared(uint32_t var) {
    if (std::find(f_.shared_vars.begin(), f_.shared_vars.end(), var) == f_.shared_vars.end())
      f_.shared_vars.push_back(var);
  }

  // Resolves [base+off] for a memory instruction of space `space`.
  Status address(const ast::Operand& o, uint32_t line, Inst& in) {
    if (o.kind != ast::Operand::Kind::kAddr) return err(line, "expected an address");
    in.imm = static_cast<int64_t>(o.bits);
    if (o.name.empty()) {
      in.a = zero_slot_;
      return Status::ok();
    }
    const Sym* s = lookup(o.name);
    if (!s) {
      auto v = vars_.find(o.name);
      if (v == vars_.end()) return err(line, "unknown name " + o.name);
      scopes_.front()[o.name] = {Sym::Kind::kVar, v->second, 0};
      s = lookup(o.name);
    }
    switch (s->kind) {
      case Sym::Kind::kReg:
        in.a = s->index;
        if (in.space == Mem::kParamKernel && !f_.entry) in.space = Mem::kParamLocal;
        return Status::ok();
      case Sym::Kind::kKParam:
        in.a = zero_slot_;
        in.imm += s->index;
        if (in.space == Mem::kParamLocal || in.space == Mem::kParamKernel) in.space = Mem::kParamKernel;
        else return err(line, "parameter " + o.name + " accessed outside .param space");
        return Status::ok();
      case Sym::Kind::kLParam:
        in.a = zero_slot_;
        in.imm += s->index;
        if (in.space == Mem::kParamLocal || in.space == Mem::kParamKernel) in.space = Mem::kParamLocal;
        else return err(line, "parameter " + o.name + " accessed outside .param space");
        return Status::ok();
      case Sym::Kind::kLocal:
        in.a = init_slot(SlotInit::Kind::kLocalAddr, 0, s->index);
        if (in.space == Mem::kGeneric) return err(line, "generic access to a .local symbol is not supported");
        return Status::ok();
      case Sym::Kind::kVar: {
        const VariableInfo& v = variables_[s->index];
        if (v.space == Space::kShared) {
          note_shared(s->index);
          if (in.space == Mem::kGeneric) {
            in.a = init_slot(SlotInit::Kind::kSharedGeneric, 0, u_.shared_offset[s->index]);
          } else {
            in.a = zero_slot_;
            in.imm += u_.shared_offset[s->index];
          }
        } else {
          in.a = init_slot(SlotInit::Kind::kVarAddr, s->index, 0);
        }
        return Status::ok();
      }
      case Sym::Kind::kFunc: break;
    }
    return err(line, "bad address operand");
  }

  Status dest(const ast::Operand& o, uint32_t line, uint32_t* slot) {
    if (o.kind == ast::Operand::Kind::kSink) {
      *slot = new_slot();
      return Status::ok();
    }
    if (o.kind != ast::Operand::Kind::kName) return err(line, "destination must be a register");
    const Sym* s = lookup(o.name);
    if (!s || s->kind != Sym::Kind::kReg) return err(line, "destination " + o.name + " is not a register");
    *slot = s->index;
    return Status::ok();
  }

  Status call(const ast::Instruction& ai, Inst& in) {
    // call[.uni] [(rets),] func [, (args)] [, prototype]
    size_t i = 0;
    const ast::Operand* rets = nullptr;
    const ast::Operand* args = nullptr;
    if (i < ai.ops.size() && ai.ops[i].kind == ast::Operand::Kind::kList) rets = &ai.ops[i++];
    if (i >= ai.ops.size() || ai.ops[i].kind != ast::Operand::Kind::kName)
      return err(ai.line, "call without a target");
    const std::string& target = ai.ops[i++].name;
    if (i < ai.ops.size() && ai.ops[i].kind == ast::Operand::Kind::kList) args = &ai.ops[i++];
    in.kind = Kind::kCall;
    CallSite cs;
    auto fit = funcs_.find(target);
    if (fit == funcs_.end()) {
      if (const Sym* s = lookup(target); s && s->kind == Sym::Kind::kReg) {
        in.kind = Kind::kUnsupported;
        unsupported(ai, "indirect call");
        return Status::ok();
      }
      return err(ai.line, "call to unknown function " + target);
    }
    const Function& callee = u_.functions[fit->second];
    auto collect = [&](const ast::Operand* list, std::vector<uint32_t>* offs, std::vector<uint32_t>* sizes) -> Status {
      if (!list) return Status::ok();
      for (const auto& e : list->elems) {
        const Sym* s = e.kind == ast::Operand::Kind::kName ? lookup(e.name) : nullptr;
        if (!s || s->kind != Sym::Kind::kLParam)
          return err(ai.line, "call arguments must be .param variables");
        offs->push_back(s->index);
        sizes->push_back(s->size);
      }
      return Status::ok();
    };
    std::vector<uint32_t> roff, rsz, aoff, asz;
    if (Status s = collect(rets, &roff, &rsz); !s.is_ok()) return s;
    if (Status s = collect(args, &aoff, &asz); !s.is_ok()) return s;
    if (callee.has_body) {
      if (aoff.size() != callee.param_offsets.size() || roff.size() > callee.ret_offsets.size())
        return err(ai.line, "call to " + target + " with the wrong number of arguments");
      cs.callee = static_cast<int32_t>(fit->second);
      for (size_t k = 0; k < aoff.size(); ++k)
        cs.args.push_back({aoff[k], callee.param_offsets[k], std::min(asz[k], callee.param_sizes[k])});
      for (size_t k = 0; k < roff.size(); ++k)
        cs.rets.push_back({callee.ret_offsets[k], roff[k], std::min(rsz[k], callee.ret_sizes[k])});
    } else {
      in.kind = Kind::kExtern;
      if (target == "vprintf") cs.builtin = 1;
      else if (target == "__assertfail") cs.builtin = 2;
      else {
        in.kind = Kind::kUnsupported;
        unsupported(ai, "call to external function " + target);
        return Status::ok();
      }
      for (size_t k = 0; k < aoff.size(); ++k) cs.args.push_back({aoff[k], 0, asz[k]});
      for (size_t k = 0; k < roff.size(); ++k) cs.rets.push_back({0, roff[k], rsz[k]});
    }
    in.target = static_cast<uint32_t>(f_.calls.size());
    f_.calls.push_back(std::move(cs));
    return Status::ok();
  }

  void unsupported(const ast::Instruction& ai, const std::string& why) {
    if (f_.unsupported.empty())
      f_.unsupported = "unsupported instruction '" + ai.opcode + "' (" + why + ") at line " + std::to_string(ai.line) +
                       " in " + f_.name;
  }

  Status instruction(const ast::Instruction& ai, Inst& in);

  // Registers of a vector operand ({%r1, %r2, ...}) or a single one, into `out`.
  Status registers(const ast::Operand& o, uint32_t line, bool write, std::vector<uint32_t>* out) {
    const std::vector<ast::Operand> one{o};
    const auto& elems = o.kind == ast::Operand::Kind::kVec ? o.elems : one;
    for (const auto& e : elems) {
      uint32_t slot = kNoSlot;
      if (Status s = write ? dest(e, line, &slot) : value(e, line, &slot); !s.is_ok()) return s;
      out->push_back(slot);
    }
    return Status::ok();
  }

  // An operand list of an instruction (Function::operand_lists), `imm` at it.
  void keep_list(std::vector<uint32_t> list, Inst& in) {
    f_.operand_lists.push_back(std::move(list));
    in.imm = reinterpret_cast<int64_t>(f_.operand_lists.back().data());
    f_.interpreted_because = "uses mma.sync";
  }

  // ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}{.shared{::cta}}.b16 d, [a]
  // and its inverse stmatrix ... [a], s (`store`): mode the matrices, aux 1
  // .trans, v the destinations or sources, a/imm/space the address.
  Status ld_st_matrix(const ast::Instruction& ai, const OpText& t, Inst& in, bool store) {
    const std::string what = store ? "stmatrix" : "ldmatrix";
    const uint8_t n = t.has("x1") ? 1 : t.has("x2") ? 2 : t.has("x4") ? 4 : 0;
    if (!t.has("m8n8") || n == 0 || t.types.size() != 1 || t.types[0] != "b16") {
      in.kind = Kind::kUnsupported;
      unsupported(ai, "this shape or type of " + what);
      return Status::ok();
    }
    if (ai.ops.size() != 2) return err(ai.line, what + " needs 2 operands");
    const ast::Operand& regs = ai.ops[store ? 1 : 0];
    const ast::Operand& addr = ai.ops[store ? 0 : 1];
    std::vector<uint32_t> r;
    if (Status s = registers(regs, ai.line, !store, &r); !s.is_ok()) return s;
    if (r.size() != n) {
      return err(ai.line, what + " .x" + std::to_string(n) + " needs " + std::to_string(n) +
                              (store ? " source registers" : " destination registers"));
    }
    in.space = t.has("shared") || t.has("shared::cta") ? Mem::kShared : Mem::kGeneric;
    if (Status s = address(addr, ai.line, in); !s.is_ok()) return s;
    for (uint8_t k = 0; k < n; ++k) in.v[k] = r[k];
    in.mode = n;
    in.aux = t.has("trans") ? 1 : 0;
    f_.interpreted_because = "uses " + what;
    in.fn = store ? stmatrix_handler() : ldmatrix_handler();
    return Status::ok();
  }

  // movmatrix.sync.aligned.m8n8.trans.b16 d, a: the 8x8 matrix held by the
  // warp in ldmatrix's fragment layout, transposed. v[0] d, v[1] a.
  Status movmatrix(const ast::Instruction& ai, const OpText& t, Inst& in) {
    if (!t.has("m8n8") || !t.has("trans") || t.types.size() != 1 || t.types[0] != "b16") {
      in.kind = Kind::kUnsupported;
      unsupported(ai, "this shape or type of movmatrix");
      return Status::ok();
    }
    if (ai.ops.size() != 2) return err(ai.line, "movmatrix needs 2 operands");
    std::vector<uint32_t> r;
    if (Status st = registers(ai.ops[0], ai.line, true, &r); !st.is_ok()) return st;
    if (Status st = registers(ai.ops[1], ai.line, false, &r); !st.is_ok()) return st;
    if (r.size() != 2) return err(ai.line, "movmatrix takes one destination and one source register");
    in.v[0] = r[0];
    in.v[1] = r[1];
    f_.interpreted_because = "uses movmatrix";
    in.fn = movmatrix_handler();
    return Status::ok();
  }

  // mma.sync.aligned.{m16n8k16,m16n8k8,m16n8k4}.row.col.dtype.atype.btype.ctype d, a, b, c
  Status mma(const ast::Instruction& ai, const OpText& t, Inst& in) {
    const uint8_t shape = t.has("m16n8k16") ? 0 : t.has("m16n8k8") ? 1 : t.has("m16n8k4") ? 2 : 3;
    // The last four parts of the opcode are the types of d, a, b and c
    // (tf32 is not one of OpText's types).
    std::vector<std::string> ty;
    for (size_t end = ai.opcode.size(); ty.size() < 4;) {
      const size_t dot = ai.opcode.rfind('.', end - 1);
      if (dot == std::string::npos || dot == 0) break;
      ty.insert(ty.begin(), ai.opcode.substr(dot + 1, end - dot - 1));
      end = dot;
    }
    uint8_t type = 3;
    if (ty.size() == 4 && ty[1] == ty[2]) type = ty[1] == "f16" ? 0 : ty[1] == "bf16" ? 1 : ty[1] == "tf32" ? 2 : 3;
    const bool float_acc = ty.size() == 4 && (ty[0] == "f32" || ty[0] == "f16") && (ty[3] == "f32" || ty[3] == "f16");
    uint32_t counts[4] = {0, 0, 0, 0};
    const bool ok = shape != 3 && type != 3 && float_acc && t.has("row") && t.has("col") && !t.has("satfinite") &&
                    mma_counts(shape, type, ty[0] == "f16", ty[3] == "f16", counts);
    if (!ok) {
      in.kind = Kind::kUnsupported;
      unsupported(ai, "this shape or type of mma");
      return Status::ok();
    }
    if (ai.ops.size() != 4) return err(ai.line, "mma needs 4 operands");
    std::vector<uint32_t> list(counts, counts + 4);
    for (int k = 0; k < 4; ++k) {
      const size_t before = list.size();
      if (Status s = registers(ai.ops[k], ai.line, k == 0, &list); !s.is_ok()) return s;
      if (list.size() - before != counts[k]) {
        return err(ai.line, "mma operand " + std::to_string(k) + " needs " + std::to_string(counts[k]) + " registers");
      }
    }
    in.mode = shape;
    in.aux = static_cast<uint8_t>(type | (ty[0] == "f16" ? 0x10 : 0) | (ty[3] == "f16" ? 0x20 : 0));
    keep_list(std::move(list), in);
    in.fn = mma_handler();
    return Status::ok();
  }

  // wmma.load.{a,b,c}.sync.aligned.{row,col}.shape{.global,.shared{::cta}}.type r, [p]{, stride}
  // wmma.store.d.sync.aligned.{row,col}.shape{.global,.shared{::cta}}.type [p], r{, stride}
  // wmma.mma.sync.aligned.{row,col}.{row,col}.shape then .dtype.ctype (f16
  // multiplicands), .f32.atype.btype.f32 (bf16, tf32) or
  // .s32.atype.btype.s32{.satfinite} (s8, u8) d, a, b, c.
  // Any other part (.b1, .s4, .u4, .f64, .rnd, another shape) is refused.
  Status wmma(const ast::Instruction& ai, Inst& in) {
    std::vector<std::string> parts;
    for (size_t p = 0; p != std::string::npos;) {
      const size_t q = ai.opcode.find('.', p);
      parts.push_back(ai.opcode.substr(p, q == std::string::npos ? q : q - p));
      p = q == std::string::npos ? q : q + 1;
    }
    const std::string op = parts.size() > 1 ? parts[1] : "";
    int shape = -1, matrix = -1;
    bool sync = false, sat = false, bad = false;
    std::vector<bool> col;
    std::vector<uint8_t> types;
    in.space = Mem::kGeneric;
    for (size_t i = 2; i < parts.size(); ++i) {
      const std::string& p = parts[i];
      const int sh = p == "m16n16k16" ? kWmmaM16N16K16 : p == "m32n8k16" ? kWmmaM32N8K16
                   : p == "m8n32k16" ? kWmmaM8N32K16 : p == "m16n16k8" ? kWmmaM16N16K8 : -1;
      const int ty = p == "f16" ? kWmmaF16 : p == "bf16" ? kWmmaBF16 : p == "tf32" ? kWmmaTF32 : p == "s8" ? kWmmaS8
                   : p == "u8" ? kWmmaU8 : p == "f32" ? kWmmaF32 : p == "s32" ? kWmmaS32 : -1;
      if (i == 2 && op == "load" && (p == "a" || p == "b" || p == "c")) matrix = p == "a" ? kWmmaA : p == "b" ? kWmmaB : kWmmaC;
      else if (i == 2 && op == "store" && p == "d") matrix = kWmmaC;
      else if (p == "sync") sync = true;
      else if (p == "aligned") continue;
      else if (p == "row" || p == "col") col.push_back(p == "col");
      else if (sh >= 0 && shape < 0) shape = sh;
      else if (p == "global" && op != "mma") in.space = Mem::kGlobal;
      else if ((p == "shared" || p == "shared::cta") && op != "mma") in.space = Mem::kShared;
      else if (p == "satfinite" && op == "mma") sat = true;
      else if (ty >= 0) types.push_back(static_cast<uint8_t>(ty));
      else bad = true;
    }
    auto refuse = [&]() {
      in.kind = Kind::kUnsupported;
      unsupported(ai, "this shape or type of wmma");
      return Status::ok();
    };
    if (bad || !sync || shape < 0) return refuse();
    const uint8_t sh = static_cast<uint8_t>(shape);
    std::vector<uint32_t> list;
    auto operand = [&](const ast::Operand& o, bool write, uint32_t count, const char* what) -> Status {
      const size_t before = list.size();
      if (Status s = registers(o, ai.line, write, &list); !s.is_ok()) return s;
      if (list.size() - before != count)
        return err(ai.line, std::string("wmma ") + what + " needs " + std::to_string(count) + " registers");
      return Status::ok();
    };
    if (op == "load" || op == "store") {
      uint32_t n = 0;
      if (matrix < 0 || col.size() != 1 || types.size() != 1 ||
          !wmma_regs(sh, static_cast<uint8_t>(matrix), types[0], &n))
        return refuse();
      const bool load = op == "load";
      if (ai.ops.size() != 2 && ai.ops.size() != 3) return err(ai.line, "wmma." + op + " needs 2 or 3 operands");
      list.push_back(n);
      if (Status s = operand(ai.ops[load ? 0 : 1], load, n, "fragment"); !s.is_ok()) return s;
      if (Status s = address(ai.ops[load ? 1 : 0], ai.line, in); !s.is_ok()) return s;
      if (in.space != Mem::kGlobal && in.space != Mem::kShared && in.space != Mem::kGeneric)
        return err(ai.line, "wmma." + op + " accesses global or shared memory");
      in.b = kNoSlot;
      if (ai.ops.size() == 3)
        if (Status s = value(ai.ops[2], ai.line, &in.b); !s.is_ok()) return s;
      // keep_list takes imm: the address's offset goes in the list.
      list.insert(list.begin() + 1, {static_cast<uint32_t>(in.imm), static_cast<uint32_t>(in.imm >> 32)});
      in.mode = sh;
      in.aux = static_cast<uint8_t>(types[0] | matrix << 4 | (col[0] ? 0x40 : 0));
      in.fn = load ? wmma_load_handler() : wmma_store_handler();
    } else if (op == "mma") {
      // Types: d, c for f16 multiplicands; else d, a, b, c.
      if (col.size() != 2 || (types.size() != 2 && types.size() != 4)) return refuse();
      const bool f16 = types.size() == 2;
      const uint8_t d = types[0], c = types.back();
      const uint8_t a = f16 ? uint8_t{kWmmaF16} : types[1], b = f16 ? uint8_t{kWmmaF16} : types[2];
      const bool integer = a == kWmmaS8 || a == kWmmaU8;
      bool ok = f16 ? (d == kWmmaF16 || d == kWmmaF32) && (c == kWmmaF16 || c == kWmmaF32)
                : integer ? (b == kWmmaS8 || b == kWmmaU8) && d == kWmmaS32 && c == kWmmaS32
                          : (a == kWmmaBF16 || a == kWmmaTF32) && b == a && d == kWmmaF32 && c == kWmmaF32;
      ok = ok && (!sat || integer);
      uint32_t counts[4] = {0, 0, 0, 0};
      ok = ok && wmma_regs(sh, kWmmaC, d, &counts[0]) && wmma_regs(sh, kWmmaA, a, &counts[1]) &&
           wmma_regs(sh, kWmmaB, b, &counts[2]) && wmma_regs(sh, kWmmaC, c, &counts[3]);
      if (!ok) return refuse();
      if (ai.ops.size() != 4) return err(ai.line, "wmma.mma needs 4 operands");
      list.assign(counts, counts + 4);
      static const char* kNames[] = {"d", "a", "b", "c"};
      for (int k = 0; k < 4; ++k)
        if (Status s = operand(ai.ops[k], k == 0, counts[k], kNames[k]); !s.is_ok()) return s;
      in.mode = static_cast<uint8_t>(sh | (d == kWmmaF16 ? 0x10 : 0) | (c == kWmmaF16 ? 0x20 : 0) | (sat ? 0x40 : 0));
      in.aux = static_cast<uint8_t>(a | b << 4);
      in.fn = wmma_mma_handler();
    } else {
      return refuse();
    }
    keep_list(std::move(list), in);
    f_.interpreted_because = "uses wmma";
    return Status::ok();
  }

  // cp.async (non-bulk): [dst] in shared, [src] in global, cp-size, then
  // src-size or an ignore-src predicate, then a cache policy with
  // .L2::cache_hint. The copy is done when the instruction runs, so
  // commit_group and wait_group/wait_all have nothing left to wait for.
  Status cp_async(const ast::Instruction& ai, const OpText& t, Inst& in) {
    if (t.has("commit_group") || t.has("wait_group") || t.has("wait_all")) {
      in.kind = Kind::kNop;
      return Status::ok();
    }
    if (t.has("bulk") || t.has("mbarrier") || t.has("shared::cluster")) {
      in.kind = Kind::kUnsupported;
      unsupported(ai, "bulk and mbarrier forms of cp.async");
      return Status::ok();
    }
    std::vector<ast::Operand> ops = ai.ops;
    if (t.has("L2::cache_hint")) {
      if (ops.empty()) return err(ai.line, "cp.async with a cache hint needs its policy");
      ops.pop_back();
    }
    if (ops.size() < 3 || ops.size() > 4) return err(ai.line, "cp.async needs 3 or 4 operands");
    if (ops[2].kind != ast::Operand::Kind::kInt) return err(ai.line, "cp.async's cp-size must be a constant");
    const uint64_t size = ops[2].bits;
    if (size != 4 && size != 8 && size != 16) return err(ai.line, "cp.async's cp-size must be 4, 8 or 16");
    if (t.has("cg") && size != 16) return err(ai.line, "cp.async.cg copies 16 bytes");
    Inst src = in;
    in.space = Mem::kShared;
    if (Status s = address(ops[0], ai.line, in); !s.is_ok()) return s;
    src.space = Mem::kGlobal;
    if (Status s = address(ops[1], ai.line, src); !s.is_ok()) return s;
    if (in.space != Mem::kShared || src.space != Mem::kGlobal) return err(ai.line, "cp.async copies global to shared");
    in.b = src.a;
    in.c = imm_slot(static_cast<uint64_t>(src.imm));
    in.size = static_cast<uint16_t>(size);
    in.mode = 0;  // 0: the whole cp-size, 1: e holds src-size, 2: e holds ignore-src
    if (ops.size() == 4) {
      const ast::Operand& o = ops[3];
      const Sym* s = o.kind == ast::Operand::Kind::kName ? lookup(o.name) : nullptr;
      const bool predicate = s && s->kind == Sym::Kind::kReg && s->size == 1;
      if (predicate) {
        in.e = s->index;
        in.aux = o.negated ? 1 : 0;
        in.mode = 2;
      } else {
        if (Status st = value(o, ai.line, &in.e); !st.is_ok()) return st;
        in.mode = 1;
      }
    }
    in.fn = cp_async_handler();
    return Status::ok();
  }

  // Scalar video: d[.dsel], a[.asel], b[.bsel][, c]. A selector is part of
  // the operand's name as parsed; it is split off unless the whole name is a
  // register.
  Status video(const ast::Instruction& ai, const OpText& t, Inst& in) {
    if (ai.ops.size() != 3 && ai.ops.size() != 4) return err(ai.line, ai.opcode + " needs 3 or 4 operands");
    std::vector<ast::Operand> ops = ai.ops;
    uint32_t sels = 0;
    for (size_t k = 0; k < 3; ++k) {
      if (ops[k].kind != ast::Operand::Kind::kName || lookup(ops[k].name)) continue;
      sels |= uint32_t{take_selector(&ops[k].name)} << (k == 0 ? 6 : k == 1 ? 0 : 3);
    }
    if (Status s = dest(ops[0], ai.line, &in.d); !s.is_ok()) return s;
    if (Status s = value(ops[1], ai.line, &in.a); !s.is_ok()) return s;
    if (Status s = value(ops[2], ai.line, &in.b); !s.is_ok()) return s;
    if (ops.size() == 4)
      if (Status s = value(ops[3], ai.line, &in.c); !s.is_ok()) return s;
    std::string why = select_video(t, sels, ops.size(), in);
    if (!why.empty()) {
      in.kind = Kind::kUnsupported;
      unsupported(ai, why);
    }
    return Status::ok();
  }

  KernelUnit& u_;
  const std::vector<VariableInfo>& variables_;
  const std::unordered_map<std::string, uint32_t>& funcs_;
  const std::unordered_map<std::string, uint32_t>& vars_;
  const ast::Function& src_;
  Function& f_;
  const std::vector<ParamInfo>* kparams_;
  std::vector<std::unordered_map<std::string, Sym>> scopes_;
  std::unordered_map<std::string, uint32_t> labels_;
  std::unordered_map<uint64_t, uint32_t> imms_;
  std::unordered_map<uint64_t, uint32_t> inits_;
  uint32_t next_slot_ = 0;
  uint32_t zero_slot_ = 0;
  uint32_t lparam_bytes_ = 0;
  uint32_t local_bytes_ = 0;
};

Mem space_of(const OpText& t) {
  for (const auto& m : t.mods) {
    if (m == "shared::cluster") return Mem::kGeneric;  // refused by the caller
    if (m == "global") return Mem::kGlobal;
    if (m == "shared" || m == "shared::cta") return Mem::kShared;
    if (m == "local") return Mem::kLocal;
    if (m == "const") return Mem::kConst;
    if (m == "param") return Mem::kParamKernel;
  }
  return Mem::kGeneric;
}

Status FunctionDecoder::instruction(const ast::Instruction& ai, Inst& in) {
  OpText t = split_opcode(ai.opcode);
  const std::string& b = t.base;
  if (!ai.guard.empty()) {
    const Sym* g = lookup(ai.guard);
    if (!g || g->kind != Sym::Kind::kReg) return err(ai.line, "guard " + ai.guard + " is not a register");
    in.guard = g->index;
    in.guard_neg = ai.guard_neg;
  }
  const auto& ops = ai.ops;
  auto need = [&](size_t n) -> Status {
    if (ops.size() < n) return err(ai.line, ai.opcode + " needs " + std::to_string(n) + " operands");
    return Status::ok();
  };
  // Control flow first.
  if (b == "bra" || b == "brx") {
    if (b == "brx") {
      in.kind = Kind::kUnsupported;
      unsupported(ai, "indexed branch");
      return Status::ok();
    }
    if (Status s = need(1); !s.is_ok()) return s;
    auto it = labels_.find(ops[0].name);
    if (it == labels_.end()) return err(ai.line, "unknown label " + ops[0].name);
    in.kind = Kind::kBra;
    in.target = it->second;
    return Status::ok();
  }
  if (b == "call") return call(ai, in);
  if (b == "ret") { in.kind = Kind::kRet; return Status::ok(); }
  if (b == "exit") { in.kind = Kind::kExit; return Status::ok(); }
  if (b == "trap" || b == "brkpt") { in.kind = b == "trap" ? Kind::kTrap : Kind::kNop; return Status::ok(); }
  if ((b == "bar" || b == "barrier") && !t.has("warp")) {
    if (t.has("arrive")) {
      in.kind = Kind::kUnsupported;
      unsupported(ai, "barrier arrive");
      return Status::ok();
    }
    in.kind = Kind::kBar;
    if (t.has("red")) {
      // bar.red.{popc,and,or} d, id, [count,] {!}p: the block-wide reduction is
      // written to d when the barrier opens.
      in.mode = t.has("popc") ? 1 : t.has("and") ? 2 : t.has("or") ? 3 : 0;
      if (in.mode == 0 || ops.size() < 3) return err(ai.line, "bad barrier reduction");
      if (Status s = dest(ops[0], ai.line, &in.d); !s.is_ok()) return s;
      const auto& p = ops.back();
      if (p.kind != ast::Operand::Kind::kName) return err(ai.line, "barrier reduction needs a predicate");
      const Sym* ps = lookup(p.name);
      if (!ps || ps->kind != Sym::Kind::kReg) return err(ai.line, "unknown predicate " + p.name);
      in.a = ps->index;
      in.aux = p.negated ? 1 : 0;
    }
    return Status::ok();
  }
  if ((b == "bar" || b == "barrier") && t.has("warp")) {
    // bar.warp.sync membermask: waits for the mask's lanes (see exec.cpp).
    if (Status s = need(1); !s.is_ok()) return s;
    if (Status s = value(ops[0], ai.line, &in.a); !s.is_ok()) return s;
    in.kind = Kind::kWarpSync;
    in.target = in.a;
    in.fn = nullptr;
    return Status::ok();
  }
  if (b == "bar" || b == "membar" || b == "fence" || b == "nanosleep" || b == "prefetch" || b == "prefetchu" ||
      b == "griddepcontrol" || b == "pmevent" || b == "discard" || b == "applypriority") {
    in.kind = Kind::kNop;  // a CPU thread sees its own writes in order; others are fenced by the launch join
    return Status::ok();
  }
  if (is_video(b)) return video(ai, t, in);
  if (b == "cp" && t.has("async")) return cp_async(ai, t, in);
  if (b == "ldmatrix" || b == "stmatrix") return ld_st_matrix(ai, t, in, b == "stmatrix");
  if (b == "movmatrix") return movmatrix(ai, t, in);
  if (b == "mma") return mma(ai, t, in);
  if (b == "wmma") return wmma(ai, in);
  // Anything else we do not know is reported at launch, not at load.
  static const char* kKnown[] = {
      "add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "abs", "neg", "min", "max", "popc",
      "clz", "bfind", "brev", "bfe", "bfi", "prmt", "lop3", "shf", "shl", "shr", "and", "or", "xor", "not",
      "cnot", "addc", "subc", "madc", "copysign", "testp", "fma", "rcp", "sqrt", "rsqrt", "sin", "cos", "lg2",
      "ex2", "tanh", "setp", "set", "selp", "slct", "mov", "cvt", "cvta", "isspacep", "ld", "ldu", "st", "atom",
      "red", "shfl", "vote", "match", "activemask", "redux", "elect", "dp4a", "dp2a", "fns", "bmsk"};
  bool known = false;
  for (const char* k : kKnown) known = known || b == k;
  if (!known) {
    in.kind = Kind::kUnsupported;
    unsupported(ai, "not implemented");
    return Status::ok();
  }
  if (t.has("shared::cluster")) {
    in.kind = Kind::kUnsupported;
    unsupported(ai, "distributed shared memory");
    return Status::ok();
  }
  // Operand shapes for ordinary instructions.
  in.space = space_of(t);
  bool is_mem = b == "ld" || b == "ldu" || b == "st" || b == "atom" || b == "red";
  if (is_mem) {
    if (b == "st" || b == "red") {
      if (Status s = need(2); !s.is_ok()) return s;
      if (Status s = address(ops[0], ai.line, in); !s.is_ok()) return s;
      const auto& val = ops[1];
      if (val.kind == ast::Operand::Kind::kVec) {
        if (val.elems.size() > 4 || val.elems.empty()) return err(ai.line, "bad vector");
        for (size_t k = 0; k < val.elems.size(); ++k)
          if (Status s = value(val.elems[k], ai.line, &in.v[k]); !s.is_ok()) return s;
      } else {
        if (Status s = value(val, ai.line, &in.v[0], in.space == Mem::kGeneric); !s.is_ok()) return s;
        in.b = in.v[0];
      }
      if (ops.size() > 2) return err(ai.line, "too many operands");
    } else if (b == "atom") {
      if (Status s = need(3); !s.is_ok()) return s;
      if (Status s = dest(ops[0], ai.line, &in.d); !s.is_ok()) return s;
      if (Status s = address(ops[1], ai.line, in); !s.is_ok()) return s;
      if (Status s = value(ops[2], ai.line, &in.b); !s.is_ok()) return s;
      if (ops.size() > 3)
        if (Status s = value(ops[3], ai.line, &in.c); !s.is_ok()) return s;
    } else {
      if (Status s = need(2); !s.is_ok()) return s;
      if (Status s = address(ops[1], ai.line, in); !s.is_ok()) return s;
      const auto& dst = ops[0];
      if (dst.kind == ast::Operand::Kind::kVec) {
        if (dst.elems.size() > 4 || dst.elems.empty()) return err(ai.line, "bad vector");
        for (size_t k = 0; k < dst.elems.size(); ++k)
          if (Status s = dest(dst.elems[k], ai.line, &in.v[k]); !s.is_ok()) return s;
      } else {
        if (Status s = dest(dst, ai.line, &in.v[0]); !s.is_ok()) return s;
        in.d = in.v[0];
      }
    }
    if (!select_mem(t, in)) {
      in.kind = Kind::kUnsupported;
      unsupported(ai, "this form of memory access");
    }
    return Status::ok();
  }
  // Value instructions: d[,d2], a, b, c, e. Vectors appear only in mov.
  if (ops.empty()) {
    if (!select_warp(t, in)) {
      in.kind = Kind::kUnsupported;
      unsupported(ai, "not implemented");
    }
    return Status::ok();
  }
  // Symbols are addresses in their own state space; generic addresses come from cvta.
  bool dst_is_src = b == "prefetch";
  (void)dst_is_src;
  const auto& d0 = ops[0];
  if (d0.kind == ast::Operand::Kind::kVec) {
    // mov.b64 {lo, hi}, %rd : unpack
    if (d0.elems.size() > 4) return err(ai.line, "bad vector");
    for (size_t k = 0; k < d0.elems.size(); ++k)
      if (Status s = dest(d0.elems[k], ai.line, &in.v[k]); !s.is_ok()) return s;
    in.aux = static_cast<uint8_t>(d0.elems.size());
    in.mode = 1;  // unpack
  } else {
    if (Status s = dest(d0, ai.line, &in.d); !s.is_ok()) return s;
    if (!d0.pair.empty()) {
      const Sym* q = lookup(d0.pair);
      if (!q || q->kind != Sym::Kind::kReg) return err(ai.line, "bad second destination " + d0.pair);
      in.d2 = q->index;
    }
  }
  uint32_t* srcs[4] = {&in.a, &in.b, &in.c, &in.e};
  if (ops.size() > 5) return err(ai.line, "too many operands");
  for (size_t k = 1; k < ops.size(); ++k) {
    const auto& o = ops[k];
    if (o.kind == ast::Operand::Kind::kVec) {
      if (k != 1 || in.mode == 1 || o.elems.size() > 4) return err(ai.line, "unexpected vector operand");
      for (size_t j = 0; j < o.elems.size(); ++j)
        if (Status s = value(o.elems[j], ai.line, &in.v[j]); !s.is_ok()) return s;
      in.aux = static_cast<uint8_t>(o.elems.size());
      in.mode = 2;  // pack
      continue;
    }
    if (o.kind == ast::Operand::Kind::kName && o.negated) {
      // !%p as a source (selp/and.pred with negation is not PTX; setp's c operand is).
      if (Status s = value(ast::Operand{ast::Operand::Kind::kName, false, o.name, 0, {}, {}}, ai.line, srcs[k - 1]);
          !s.is_ok())
        return s;
      in.aux |= static_cast<uint8_t>(0x10u << (k - 1));
      continue;
    }
    if (o.kind == ast::Operand::Kind::kName &&
        (o.name == "%clock" || o.name == "%clock64" || o.name == "%globaltimer" || o.name == "%globaltimer_lo" ||
         o.name == "%globaltimer_hi" || o.name == "%clock_hi")) {
      in.mode = o.name == "%clock" ? 10 : o.name == "%clock64" ? 11 : o.name == "%globaltimer" ? 12
              : o.name == "%globaltimer_lo" ? 13 : o.name == "%clock_hi" ? 15 : 14;
      continue;
    }
    if (Status s = value(o, ai.line, srcs[k - 1]); !s.is_ok()) return s;
  }
  bool ok = select_int(t, in) || select_float(t, in) || select_cvt(t, in) || select_warp(t, in);
  if (!ok) {
    in.kind = Kind::kUnsupported;
    unsupported(ai, "not implemented for these types or modifiers");
  }
  return Status::ok();
}

}  // namespace

OpText split_opcode(const std::string& s) {
  OpText t;
  size_t p = s.find('.');
  t.base = s.substr(0, p);
  while (p != std::string::npos) {
    size_t q = s.find('.', p + 1);
    std::string part = s.substr(p + 1, q == std::string::npos ? std::string::npos : q - p - 1);
    if (parse_ty(part) != Ty::kNone) t.types.push_back(part);
    else t.mods.push_back(part);
    p = q;
  }
  return t;
}

Status decode_function(KernelUnit& unit, const std::vector<VariableInfo>& variables,
                       const std::unordered_map<std::string, uint32_t>& funcs,
                       const std::unordered_map<std::string, uint32_t>& vars, const ast::Function& src,
                       Function& out, const std::vector<ParamInfo>* kparams) {
  return FunctionDecoder(unit, variables, funcs, vars, src, out, kparams).run();
}

}  // namespace rgpu::ptx
