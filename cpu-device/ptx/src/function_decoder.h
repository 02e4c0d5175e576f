// The decoder of one function's body (decode.cpp, decode_tensor.cpp):
// names to register slots, labels to instruction indices, opcodes to
// handler pointers. Private to the decoder's files.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "decode.h"

namespace rgpu::ptx::detail {

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

  // The warp-wide matrix instructions (decode_tensor.cpp): ldmatrix and
  // stmatrix (`store`), movmatrix, mma.sync and wmma.
  Status ld_st_matrix(const ast::Instruction& ai, const OpText& t, Inst& in, bool store);
  Status movmatrix(const ast::Instruction& ai, const OpText& t, Inst& in);
  Status mma(const ast::Instruction& ai, const OpText& t, Inst& in);
  Status wmma(const ast::Instruction& ai, Inst& in);

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

}  // namespace rgpu::ptx::detail
