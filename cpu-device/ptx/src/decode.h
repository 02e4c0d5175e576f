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

}  // namespace rgpu::ptx
