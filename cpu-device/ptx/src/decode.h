// Turns a parsed module into the decoded program the interpreter runs.
#pragma once

#include <memory>

#include "ast.h"
#include "ir.h"

namespace rgpu::ptx {

// Errors (kInvalidArgument, "line N: ...") for names that do not resolve and
// operands of the wrong shape; instructions that parse but cannot run are
// recorded in Function::unsupported instead.
Result<std::unique_ptr<ProgramImpl>> decode(const ast::Module& m);

}  // namespace rgpu::ptx
