// Turns a parsed module into the decoded program the interpreter runs.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "ast.h"
#include "ir.h"

namespace rgpu::ptx {

// Errors (kInvalidArgument, "line N: ...") for names that do not resolve and
// operands of the wrong shape; instructions that parse but cannot run are
// recorded in Function::unsupported instead.
Result<std::unique_ptr<ProgramImpl>> decode(const ast::Module& m);

// Places the module's shared variables (ProgramImpl::shared_offset,
// dyn_shared_base) so that each kernel's static shared memory holds only what
// it can reach. `vars` maps variable names to indices in p->variables.
Status layout_shared(const ast::Module& m, const std::unordered_map<std::string, uint32_t>& vars, ProgramImpl* p);

}  // namespace rgpu::ptx
