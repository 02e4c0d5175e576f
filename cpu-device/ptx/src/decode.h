// Turns a parsed module into the decoded program the interpreter runs.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "ast.h"
#include "ir.h"

namespace rgpu::ptx {

// Reads a module down to its variables and function signatures (bodies are
// located, not parsed) and lays out each kernel's parameters. Errors are
// kInvalidArgument "line N: ...".
Result<std::unique_ptr<ProgramImpl>> load_module(std::string text);

// Parses and decodes kernel `kernel` of `p` and every function it can reach,
// and fills info's resource fields (static shared, local bytes, registers).
// Errors (kInvalidArgument, "line N: ...") for names that do not resolve and
// operands of the wrong shape; instructions that parse but cannot run are
// recorded in Function::unsupported instead. Reads `p` only.
Result<std::unique_ptr<KernelUnit>> decode_kernel(const ProgramImpl& p, int kernel, KernelInfo* info);

// `v` rounded up to a multiple of `a` (a of 0 or 1: unchanged).
inline uint32_t align_up(uint32_t v, uint32_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }

// The special register named `name` ("%tid.x", "%envreg3", ...): where its
// value comes from, kZero for those the CPU device reads as zero; false
// for no such register.
bool special_register(const std::string& name, Special* id);

// Decodes one function's body `src` into `out` (decode_kernel's step, in
// decode.cpp): `funcs` and `vars` name the unit's functions and the
// module's variables; `kparams` is the kernel's parameter layout when `src`
// is the kernel, else null.
Status decode_function(KernelUnit& unit, const std::vector<VariableInfo>& variables,
                       const std::unordered_map<std::string, uint32_t>& funcs,
                       const std::unordered_map<std::string, uint32_t>& vars, const ast::Function& src,
                       Function& out, const std::vector<ParamInfo>* kparams);

}  // namespace rgpu::ptx
