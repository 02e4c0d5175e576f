// The parsed (text-level) form of a PTX module: what the parser produces and
// the decoder consumes. Names are still strings here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rgpu/common/status.h"

namespace rgpu::ptx::ast {

// One operand as written.
struct Operand {
  enum class Kind : uint8_t {
    kName,    // register, symbol, label or special register (%tid.x)
    kInt,     // integer literal (value in bits)
    kF32,     // 0fXXXXXXXX or a decimal literal; bits of a float
    kF64,     // 0dXXXXXXXXXXXXXXXX; bits of a double
    kAddr,    // [name+offset] or [offset]; name may be empty
    kVec,     // {a, b, ...}
    kList,    // (a, b, ...) in call
    kSink,    // _
  };
  Kind kind = Kind::kName;
  bool negated = false;  // !%p
  std::string name;
  uint64_t bits = 0;     // literal value, or address offset
  std::vector<Operand> elems;
  std::string pair;      // second destination after '|' (setp p|q, shfl r|p)
};

// A state-space declaration: .reg, .param, .local, .shared, .global, .const.
struct Decl {
  uint32_t line = 0;
  std::string space;      // "reg", "param", "local", "shared", "global", "const"
  std::string type;       // "b32", "f32", "pred", ...
  std::string name;
  uint32_t align = 0;     // 0: natural
  uint32_t vec = 1;       // .v2/.v4
  int64_t range = -1;     // %r<12>: 12 registers %r0..%r11
  int64_t array = -1;     // [N]; 0 for [] (extern)
  bool is_extern = false;
  bool visible = false;
  std::vector<uint8_t> init;  // raw bytes of the initializer
  bool has_init = false;
};

struct Instruction {
  uint32_t line = 0;
  std::string guard;       // predicate register, empty if none
  bool guard_neg = false;
  std::string opcode;      // "ld.global.nc.v4.f32"
  std::vector<Operand> ops;
};

struct Statement {
  enum class Kind : uint8_t { kInstruction, kLabel, kDecl, kOpen, kClose };
  Kind kind = Kind::kInstruction;
  uint32_t line = 0;
  Instruction inst;
  Decl decl;
  std::string label;
};

struct Function {
  uint32_t line = 0;
  std::string name;
  bool entry = false;
  bool visible = false;
  bool is_extern = false;
  bool has_body = false;
  std::vector<Decl> rets;    // .param return values (.func only)
  std::vector<Decl> params;
  uint32_t max_threads = 0;  // from .maxntid/.reqntid, 0 if absent
  // The text between the braces of the body (a view of the module text) and
  // the line of its '{'. parse() only locates bodies; parse_body() fills
  // `body` from this text.
  std::string_view body_text;
  uint32_t body_line = 0;
  bool declares_variables = false;  // the body may declare .shared/.global/.const variables
  std::vector<Statement> body;
};

struct Module {
  std::string version;
  std::string target;
  uint32_t address_size = 64;
  std::vector<Decl> variables;
  std::vector<Function> functions;
};

// Parses PTX text down to function signatures; bodies are only located
// (Function::body_text), so that a module's cost is paid per function used.
// The module views `text`, which must outlive it. Errors are
// kInvalidArgument "line N: ...".
Result<Module> parse(std::string_view text);

// Parses the statements of `f`'s body into f->body (cleared on error).
Status parse_body(Function* f);

// The .shared, .global and .const variables `f`'s body declares, found
// without parsing the rest of the body (nvcc declares a kernel's static
// __shared__ arrays there).
Result<std::vector<Decl>> body_variables(const Function& f);

// Byte size of a PTX scalar type name ("b32" -> 4, "pred" -> 1), 0 if unknown.
uint32_t type_size(std::string_view type);

}  // namespace rgpu::ptx::ast
