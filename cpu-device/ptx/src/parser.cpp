// Tokenizer and recursive-descent parser from PTX text to ast::Module.
#include <algorithm>
#include <cstring>
#include <deque>
#include <string>

#include "ast.h"

namespace rgpu::ptx::ast {
namespace {

struct Token {
  enum class Kind : uint8_t { kIdent, kNumber, kString, kPunct, kEnd };
  Kind kind = Kind::kEnd;
  std::string_view text;
  uint32_t line = 0;
};

bool ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '%' || c == '.';
}
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }
bool digit(char c) { return c >= '0' && c <= '9'; }

// Splits text into tokens on demand; comments are dropped. A stray byte or
// an unterminated comment or string ends the stream with error() set.
class Lexer {
 public:
  Lexer(std::string_view s, uint32_t line) : s_(s), line_(line) {}

  Token next() {
    Token t;
    if (!error_.is_ok()) return end_token();
    const std::string_view s = s_;
    size_t i = i_;
    while (i < s.size()) {
      char c = s[i];
      if (c == '\n') { ++line_; ++i; continue; }
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') { ++i; continue; }
      if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
        while (i < s.size() && s[i] != '\n') ++i;
        continue;
      }
      if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
        size_t end = s.find("*/", i + 2);
        if (end == std::string_view::npos) {
          i_ = s.size();
          return fail("unterminated comment");
        }
        for (size_t k = i; k < end; ++k) line_ += s[k] == '\n';
        i = end + 2;
        continue;
      }
      break;
    }
    if (i >= s.size()) {
      i_ = i;
      return end_token();
    }
    char c = s[i];
    t.line = line_;
    size_t start = i;
    if (c == '.') {
      // ".reg.b32" (inline asm writes it so) is two directive tokens.
      ++i;
      while (i < s.size() && ident_char(s[i]) && s[i] != '.') ++i;
      t.kind = Token::Kind::kIdent;
    } else if (ident_start(c)) {
      // Opcode modifiers may hold "::" (ld.global.L2::128B, shared::cta).
      while (i < s.size()) {
        if (ident_char(s[i])) ++i;
        else if (s[i] == ':' && i + 2 < s.size() && s[i + 1] == ':' && ident_char(s[i + 2])) i += 2;
        else break;
      }
      t.kind = Token::Kind::kIdent;
    } else if (digit(c)) {
      bool hexlike = c == '0' && i + 1 < s.size() && strchr("xXfFdD", s[i + 1]) != nullptr;
      ++i;
      while (i < s.size()) {
        char d = s[i];
        if (ident_char(d) && d != '%' && d != '$') { ++i; continue; }
        if (!hexlike && (d == '+' || d == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E')) { ++i; continue; }
        break;
      }
      t.kind = Token::Kind::kNumber;
    } else if (c == '"') {
      ++i;
      while (i < s.size() && s[i] != '"' && s[i] != '\n') i += (s[i] == '\\' && i + 1 < s.size()) ? 2 : 1;
      if (i >= s.size() || s[i] != '"') {
        i_ = s.size();
        return fail("unterminated string");
      }
      ++i;
      t.kind = Token::Kind::kString;
    } else if (c != 0 && strchr("{}[]()<>,;:+-!|@=", c) != nullptr) {
      ++i;
      t.kind = Token::Kind::kPunct;
    } else {
      i_ = s.size();
      return fail("unexpected character 0x" + std::to_string(static_cast<unsigned char>(c)));
    }
    t.text = s.substr(start, i - start);
    i_ = i;
    return t;
  }

  // Where the next token would start scanning, and its line.
  size_t pos() const { return i_; }
  uint32_t line() const { return line_; }
  void seek(size_t pos, uint32_t line) {
    i_ = pos;
    line_ = line;
  }
  std::string_view text() const { return s_; }
  const Status& error() const { return error_; }

 private:
  Token end_token() const {
    Token t;
    t.line = line_;
    return t;
  }
  Token fail(const std::string& what) {
    error_ = invalid_argument("line " + std::to_string(line_) + ": " + what);
    return end_token();
  }

  std::string_view s_;
  size_t i_ = 0;
  uint32_t line_;
  Status error_;
};

// Finds the '}' that closes a function body whose '{' precedes `pos`, skipping
// comments and strings; counts the lines passed. npos when it is missing.
size_t skip_body(std::string_view s, size_t pos, uint32_t* line) {
  int depth = 1;
  size_t i = pos;
  uint32_t lines = 0;
  const size_t n = s.size();
  while (i < n) {
    char c = s[i];
    switch (c) {
      case '\n': ++lines; break;
      case '{': ++depth; break;
      case '}':
        if (--depth == 0) {
          *line += lines;
          return i;
        }
        break;
      case '/':
        if (i + 1 < n && s[i + 1] == '/') {
          while (i < n && s[i] != '\n') ++i;
          continue;
        }
        if (i + 1 < n && s[i + 1] == '*') {
          size_t end = s.find("*/", i + 2);
          if (end == std::string_view::npos) return std::string_view::npos;
          for (size_t k = i; k < end; ++k) lines += s[k] == '\n';
          i = end + 2;
          continue;
        }
        break;
      case '"':
        ++i;
        while (i < n && s[i] != '"' && s[i] != '\n') i += (s[i] == '\\' && i + 1 < n) ? 2 : 1;
        if (i >= n || s[i] != '"') return std::string_view::npos;
        break;
      default: break;
    }
    ++i;
  }
  return std::string_view::npos;
}

// Where a body may declare a .shared/.global/.const variable: such a
// directive token after a statement boundary (ld.shared has a letter before
// its '.'). Offsets of the directives, in order; may include some inside
// comments.
std::vector<size_t> variable_directives(std::string_view body) {
  std::vector<size_t> at;
  for (const char* d : {".shared", ".global", ".const"}) {
    size_t i = 0;
    while ((i = body.find(d, i)) != std::string_view::npos) {
      char before = i == 0 ? ' ' : body[i - 1];
      if (before == ' ' || before == '\t' || before == '\n' || before == '\r' || before == ';' || before == '{' ||
          before == '}')
        at.push_back(i);
      i += 1;
    }
  }
  std::sort(at.begin(), at.end());
  return at;
}

// Parses an integer or float literal. kind receives kInt, kF32 or kF64.
bool parse_number(std::string_view t, bool neg, Operand::Kind* kind, uint64_t* bits) {
  if (t.empty()) return false;
  auto hex = [](std::string_view h, uint64_t* v) {
    if (h.empty() || h.size() > 16) return false;
    uint64_t r = 0;
    for (char c : h) {
      int d;
      if (c >= '0' && c <= '9') d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      else return false;
      r = (r << 4) | static_cast<uint64_t>(d);
    }
    *v = r;
    return true;
  };
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'f' || t[1] == 'F')) {
    uint64_t v;
    if (t.size() != 10 || !hex(t.substr(2), &v)) return false;
    if (neg) v ^= 0x80000000u;
    *kind = Operand::Kind::kF32;
    *bits = v;
    return true;
  }
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'd' || t[1] == 'D')) {
    uint64_t v;
    if (t.size() != 18 || !hex(t.substr(2), &v)) return false;
    if (neg) v ^= 0x8000000000000000ull;
    *kind = Operand::Kind::kF64;
    *bits = v;
    return true;
  }
  std::string_view body = t;
  if (!body.empty() && (body.back() == 'U' || body.back() == 'u')) body.remove_suffix(1);
  uint64_t v = 0;
  if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) {
    if (!hex(body.substr(2), &v)) return false;
  } else if (body.find_first_of(".eE") != std::string_view::npos) {
    std::string copy(body);
    char* end = nullptr;
    double d = strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size()) return false;
    if (neg) d = -d;
    float f = static_cast<float>(d);
    uint32_t fb;
    memcpy(&fb, &f, 4);
    *kind = Operand::Kind::kF32;
    *bits = fb;
    return true;
  } else {
    bool octal = body.size() > 1 && body[0] == '0';
    for (char c : body) {
      if (c < '0' || c > (octal ? '7' : '9')) return false;
      uint64_t nv = v * (octal ? 8 : 10) + static_cast<uint64_t>(c - '0');
      if (nv / (octal ? 8 : 10) != v) return false;  // overflow
      v = nv;
    }
  }
  *kind = Operand::Kind::kInt;
  *bits = neg ? (~v + 1) : v;
  return true;
}

class Parser {
 public:
  Parser(std::string_view text, uint32_t first_line) : lex_(text, first_line) {}

  Result<Module> run() {
    Module m;
    while (!at_end()) {
      Status s = top_level(&m);
      if (!s.is_ok()) return lexer_error(s);
      // Tokens already consumed are not looked at again.
      while (p_ > 0) {
        t_.pop_front();
        --p_;
      }
    }
    if (!lex_.error().is_ok()) return lex_.error();
    return m;
  }

  // Parses the statements of a function body (the text between its braces).
  Status run_body(Function* f) {
    int depth = 1;
    while (!at_end()) {
      if (Status s = body_item(f, &depth); !s.is_ok()) return lexer_error(s);
      if (depth == 0) return err("unbalanced '}'");
    }
    if (!lex_.error().is_ok()) return lex_.error();
    if (depth != 1) return err("unterminated scope");
    return Status::ok();
  }

 private:
  // A lexer error explains a parse error that followed it better.
  Status lexer_error(const Status& s) const { return lex_.error().is_ok() ? s : lex_.error(); }
  void fill(size_t k) {
    while (t_.size() <= p_ + k && (t_.empty() || t_.back().kind != Token::Kind::kEnd)) t_.push_back(lex_.next());
  }
  const Token& peek(size_t k = 0) {
    fill(k);
    return t_[std::min(p_ + k, t_.size() - 1)];
  }
  bool at_end() { return peek().kind == Token::Kind::kEnd; }
  const Token& next() {
    fill(0);
    const Token& t = t_[p_];
    if (t.kind != Token::Kind::kEnd) ++p_;
    return t;
  }
  bool is(std::string_view text, size_t k = 0) {
    const Token& t = peek(k);
    return t.kind != Token::Kind::kEnd && t.text == text;
  }
  bool accept(std::string_view text) {
    if (!is(text)) return false;
    next();
    return true;
  }
  Status err(const std::string& what) {
    std::string near = at_end() ? "end of input" : "'" + std::string(peek().text) + "'";
    return invalid_argument("line " + std::to_string(peek().line) + ": " + what + " near " + near);
  }
  Status expect(std::string_view text) {
    if (accept(text)) return Status::ok();
    return err("expected '" + std::string(text) + "'");
  }
  Status integer(int64_t* out) {
    bool neg = accept("-");
    if (peek().kind != Token::Kind::kNumber) return err("expected a number");
    Operand::Kind k;
    uint64_t bits;
    if (!parse_number(next().text, neg, &k, &bits) || k != Operand::Kind::kInt) return err("bad integer");
    *out = static_cast<int64_t>(bits);
    return Status::ok();
  }
  void skip_statement() {
    while (!at_end() && !is(";")) next();
    accept(";");
  }

  Status top_level(Module* m) {
    const Token& t = peek();
    if (t.text == ".version") {
      next();
      if (peek().kind != Token::Kind::kNumber) return err("expected version");
      m->version = std::string(next().text);
      return Status::ok();
    }
    if (t.text == ".target") {
      next();
      m->target = std::string(next().text);
      while (accept(",")) next();
      return Status::ok();
    }
    if (t.text == ".address_size") {
      next();
      int64_t v;
      if (Status s = integer(&v); !s.is_ok()) return s;
      if (v != 64 && v != 32) return err("bad address size");
      m->address_size = static_cast<uint32_t>(v);
      return Status::ok();
    }
    if (t.text == ".file" || t.text == ".section" || t.text == ".pragma") {
      if (t.text == ".section") return err(".section is not supported");
      skip_statement();
      return Status::ok();
    }
    bool visible = false, is_extern = false;
    while (is(".visible") || is(".extern") || is(".weak") || is(".common")) {
      if (peek().text == ".visible") visible = true;
      if (peek().text == ".extern") is_extern = true;
      next();
    }
    if (is(".entry") || is(".func")) return function(m, visible, is_extern);
    if (is(".global") || is(".shared") || is(".const") || is(".local")) {
      Decl d;
      d.visible = visible;
      d.is_extern = is_extern;
      if (Status s = declaration(&d, true); !s.is_ok()) return s;
      if (Status s = expect(";"); !s.is_ok()) return s;
      m->variables.push_back(std::move(d));
      return Status::ok();
    }
    return err("unexpected token at module scope");
  }

  // Parses "[.space] [.align N] [.vN] .type name[<N>][[N]] [= init]" (space
  // first when present). Stops before ',' ';' or ')'.
  Status declaration(Decl* d, bool allow_init) {
    d->line = peek().line;
    if (peek().kind == Token::Kind::kIdent && peek().text.size() > 1 && peek().text[0] == '.') {
      std::string_view sp = peek().text.substr(1);
      if (sp == "reg" || sp == "param" || sp == "local" || sp == "shared" || sp == "global" || sp == "const") {
        d->space = std::string(sp);
        next();
      }
    }
    while (peek().kind == Token::Kind::kIdent && peek().text[0] == '.') {
      std::string_view a = next().text.substr(1);
      if (a == "align") {
        int64_t v;
        if (Status s = integer(&v); !s.is_ok()) return s;
        if (v <= 0 || v > 4096 || (v & (v - 1)) != 0) return err("bad alignment");
        d->align = static_cast<uint32_t>(v);
      } else if (a == "v2" || a == "v4" || a == "v8") {
        d->vec = static_cast<uint32_t>(a[1] - '0');
      } else if (a == "ptr" || a == "global" || a == "shared" || a == "const" || a == "local" ||
                 a == "generic") {
        // .ptr.space.align attributes on kernel parameters: informational.
      } else if (type_size(a) != 0) {
        d->type = std::string(a);
      } else {
        return err("unknown attribute ." + std::string(a));
      }
    }
    if (d->type.empty()) return err("declaration without a type");
    if (peek().kind != Token::Kind::kIdent) return err("expected a name");
    d->name = std::string(next().text);
    if (accept("<")) {
      int64_t n;
      if (Status s = integer(&n); !s.is_ok()) return s;
      if (n < 0 || n > (1 << 20)) return err("bad register range");
      d->range = n;
      if (Status s = expect(">"); !s.is_ok()) return s;
    }
    while (accept("[")) {
      int64_t n = 0;
      if (!is("]")) {
        if (Status s = integer(&n); !s.is_ok()) return s;
        if (n < 0 || n > (int64_t{1} << 32)) return err("bad array size");
      }
      if (Status s = expect("]"); !s.is_ok()) return s;
      d->array = d->array < 0 ? n : d->array * n;
      if (d->array > (int64_t{1} << 32)) return err("array too large");
    }
    if (allow_init && accept("=")) {
      d->has_init = true;
      if (Status s = initializer(d); !s.is_ok()) return s;
    }
    return Status::ok();
  }

  Status initializer(Decl* d) {
    uint32_t elem = type_size(d->type);
    auto one = [&]() -> Status {
      bool neg = accept("-");
      if (peek().kind != Token::Kind::kNumber) return err("initializer must be numeric");
      Operand::Kind k;
      uint64_t bits;
      if (!parse_number(next().text, neg, &k, &bits)) return err("bad literal");
      bool is_float = d->type == "f32" || d->type == "f64";
      if (is_float && k == Operand::Kind::kInt) {
        double v = static_cast<double>(static_cast<int64_t>(bits));
        if (d->type == "f32") {
          float f = static_cast<float>(v);
          uint32_t b;
          memcpy(&b, &f, 4);
          bits = b;
        } else {
          memcpy(&bits, &v, 8);
        }
      } else if (d->type == "f64" && k == Operand::Kind::kF32) {
        float f;
        uint32_t b = static_cast<uint32_t>(bits);
        memcpy(&f, &b, 4);
        double v = f;
        memcpy(&bits, &v, 8);
      }
      if (d->init.size() > (size_t{1} << 28)) return err("initializer too large");
      for (uint32_t i = 0; i < elem; ++i) d->init.push_back(static_cast<uint8_t>(bits >> (8 * i)));
      return Status::ok();
    };
    if (accept("{")) {
      if (accept("}")) return Status::ok();
      do {
        if (is("{")) return err("nested initializers are not supported");
        if (Status s = one(); !s.is_ok()) return s;
      } while (accept(","));
      return expect("}");
    }
    return one();
  }

  Status param_list(std::vector<Decl>* out) {
    if (Status s = expect("("); !s.is_ok()) return s;
    if (accept(")")) return Status::ok();
    do {
      Decl d;
      if (Status s = declaration(&d, false); !s.is_ok()) return s;
      if (d.space.empty()) d.space = "param";
      out->push_back(std::move(d));
    } while (accept(","));
    return expect(")");
  }

  Status function(Module* m, bool visible, bool is_extern) {
    Function f;
    f.line = peek().line;
    f.entry = next().text == ".entry";
    f.visible = visible;
    f.is_extern = is_extern;
    if (is("(")) {
      if (f.entry) return err("an .entry has no return value");
      if (Status s = param_list(&f.rets); !s.is_ok()) return s;
    }
    if (peek().kind != Token::Kind::kIdent) return err("expected a function name");
    f.name = std::string(next().text);
    if (is("(")) {
      if (Status s = param_list(&f.params); !s.is_ok()) return s;
    }
    // Performance directives between the signature and the body.
    while (peek().kind == Token::Kind::kIdent && peek().text[0] == '.') {
      std::string_view dname = next().text;
      std::vector<int64_t> vals;
      while (peek().kind == Token::Kind::kNumber) {
        int64_t v;
        if (Status s = integer(&v); !s.is_ok()) return s;
        vals.push_back(v);
        if (!accept(",")) break;
      }
      if ((dname == ".maxntid" || dname == ".reqntid") && !vals.empty()) {
        int64_t prod = 1;
        for (int64_t v : vals) prod *= (v > 0 && v <= 1024) ? v : 1024;
        f.max_threads = static_cast<uint32_t>(std::min<int64_t>(prod, 1024));
      }
    }
    if (accept(";")) {
      m->functions.push_back(std::move(f));
      return Status::ok();
    }
    if (!is("{")) return err("expected '{'");
    // The body is only located here; parse_body() reads it when needed.
    const Token& open = next();
    const std::string_view text = lex_.text();
    size_t start = static_cast<size_t>(open.text.data() - text.data()) + 1;
    uint32_t line = open.line;
    size_t close = skip_body(text, start, &line);
    if (close == std::string_view::npos) {
      uint32_t last = open.line + static_cast<uint32_t>(std::count(text.begin() + start, text.end(), '\n'));
      return invalid_argument("line " + std::to_string(last) + ": unterminated function body");
    }
    f.has_body = true;
    f.body_text = text.substr(start, close - start);
    f.body_line = open.line;
    f.declares_variables = !variable_directives(f.body_text).empty();
    t_.resize(p_);  // nothing was looked at past the brace, but be sure
    lex_.seek(close + 1, line);
    m->functions.push_back(std::move(f));
    return Status::ok();
  }

  // One item of a body: a scope brace or a statement.
  Status body_item(Function* f, int* depth) {
    if (accept("{")) {
      ++*depth;
      Statement st;
      st.kind = Statement::Kind::kOpen;
      f->body.push_back(st);
      return Status::ok();
    }
    if (accept("}")) {
      if (--*depth == 0) return Status::ok();
      Statement st;
      st.kind = Statement::Kind::kClose;
      f->body.push_back(st);
      return Status::ok();
    }
    return statement(f);
  }

  Status statement(Function* f) {
    const Token& t = peek();
    Statement st;
    st.line = t.line;
    if (t.kind == Token::Kind::kIdent && peek(1).text == ":" && peek(1).kind == Token::Kind::kPunct &&
        t.text[0] != '.' && t.text[0] != '%') {
      // A label, or "name: .callprototype ..." which we keep only for its name.
      st.kind = Statement::Kind::kLabel;
      st.label = std::string(next().text);
      next();
      if (is(".callprototype")) {
        skip_statement();
        return Status::ok();
      }
      f->body.push_back(std::move(st));
      return Status::ok();
    }
    if (t.kind == Token::Kind::kIdent && t.text[0] == '.') {
      if (t.text == ".pragma" || t.text == ".loc" || t.text == ".file" || t.text == ".maxnreg" ||
          t.text == ".section") {
        skip_statement();
        return Status::ok();
      }
      st.kind = Statement::Kind::kDecl;
      if (accept(".extern")) st.decl.is_extern = true;
      if (Status s = declaration(&st.decl, true); !s.is_ok()) return s;
      if (st.decl.space.empty()) return err("declaration without a state space");
      // ".reg .b32 %a, %b;" declares several names.
      Decl proto = st.decl;
      f->body.push_back(std::move(st));
      while (accept(",")) {
        Statement more;
        more.kind = Statement::Kind::kDecl;
        more.line = peek().line;
        more.decl = proto;
        more.decl.range = -1;
        more.decl.array = -1;
        more.decl.init.clear();
        if (peek().kind != Token::Kind::kIdent) return err("expected a name");
        more.decl.name = std::string(next().text);
        if (accept("<")) {
          int64_t n;
          if (Status s = integer(&n); !s.is_ok()) return s;
          if (n < 0 || n > (1 << 20)) return err("bad register range");
          more.decl.range = n;
          if (Status s = expect(">"); !s.is_ok()) return s;
        }
        f->body.push_back(std::move(more));
      }
      return expect(";");
    }
    st.kind = Statement::Kind::kInstruction;
    Instruction& in = st.inst;
    in.line = t.line;
    if (accept("@")) {
      in.guard_neg = accept("!");
      if (peek().kind != Token::Kind::kIdent) return err("expected a predicate");
      in.guard = std::string(next().text);
    }
    if (peek().kind != Token::Kind::kIdent) return err("expected an instruction");
    in.opcode = std::string(next().text);
    if (!is(";")) {
      do {
        Operand op;
        if (Status s = operand(&op, 0); !s.is_ok()) return s;
        in.ops.push_back(std::move(op));
      } while (accept(","));
    }
    if (Status s = expect(";"); !s.is_ok()) return s;
    f->body.push_back(std::move(st));
    return Status::ok();
  }

  Status operand(Operand* op, int depth) {
    if (depth > 4) return err("operand nested too deeply");
    if (accept("[")) {
      op->kind = Operand::Kind::kAddr;
      if (peek().kind == Token::Kind::kIdent) {
        op->name = std::string(next().text);
        if (accept(",")) {
          // [texref, {coords}] and similar: kept as elements, decoded (or refused) later.
          do {
            Operand e;
            if (Status s = operand(&e, depth + 1); !s.is_ok()) return s;
            op->elems.push_back(std::move(e));
          } while (accept(","));
          return expect("]");
        }
      } else {
        int64_t v;
        if (Status s = integer(&v); !s.is_ok()) return s;
        op->bits = static_cast<uint64_t>(v);
        return expect("]");
      }
      if (is("+") || is("-")) {
        bool minus = next().text == "-";
        int64_t v;
        if (Status s = integer(&v); !s.is_ok()) return s;
        op->bits = static_cast<uint64_t>(minus ? -v : v);
      }
      return expect("]");
    }
    if (is("{") || is("(")) {
      bool brace = next().text == "{";
      op->kind = brace ? Operand::Kind::kVec : Operand::Kind::kList;
      const char* close = brace ? "}" : ")";
      if (accept(close)) return Status::ok();
      do {
        Operand e;
        if (Status s = operand(&e, depth + 1); !s.is_ok()) return s;
        op->elems.push_back(std::move(e));
      } while (accept(","));
      return expect(close);
    }
    if (accept("!")) op->negated = true;
    bool neg = accept("-");
    if (peek().kind == Token::Kind::kNumber) {
      if (!parse_number(next().text, neg, &op->kind, &op->bits)) return err("bad literal");
      return Status::ok();
    }
    if (neg) return err("expected a number after '-'");
    if (peek().kind != Token::Kind::kIdent) return err("expected an operand");
    op->name = std::string(next().text);
    op->kind = op->name == "_" ? Operand::Kind::kSink : Operand::Kind::kName;
    if (accept("|")) {
      if (peek().kind != Token::Kind::kIdent) return err("expected a predicate after '|'");
      op->pair = std::string(next().text);
    }
    if (accept("+")) {  // symbol+offset as an operand (mov.u64 %rd, sym+8)
      int64_t v;
      if (Status s = integer(&v); !s.is_ok()) return s;
      op->kind = Operand::Kind::kAddr;
      op->bits = static_cast<uint64_t>(v);
    }
    return Status::ok();
  }

  Lexer lex_;
  std::deque<Token> t_;  // tokens looked at; references stay valid while it grows
  size_t p_ = 0;
};

}  // namespace

uint32_t type_size(std::string_view t) {
  if (t == "pred") return 1;
  if (t == "b8" || t == "u8" || t == "s8") return 1;
  if (t == "b16" || t == "u16" || t == "s16" || t == "f16" || t == "bf16") return 2;
  if (t == "b32" || t == "u32" || t == "s32" || t == "f32" || t == "f16x2" || t == "bf16x2" || t == "tf32")
    return 4;
  if (t == "b64" || t == "u64" || t == "s64" || t == "f64") return 8;
  if (t == "b128") return 16;
  return 0;
}

Result<Module> parse(std::string_view text) {
  Parser p(text, 1);
  return p.run();
}

Result<std::vector<Decl>> body_variables(const Function& f) {
  std::vector<Decl> out;
  size_t from = 0;
  uint32_t line = f.body_line;
  for (size_t at : variable_directives(f.body_text)) {
    line += static_cast<uint32_t>(std::count(f.body_text.begin() + from, f.body_text.begin() + at, '\n'));
    from = at;
    size_t end = f.body_text.find(';', at);
    if (end == std::string_view::npos) break;
    Function one;
    Parser p(f.body_text.substr(at, end + 1 - at), line);
    if (p.run_body(&one).is_ok() && one.body.size() == 1 && one.body[0].kind == Statement::Kind::kDecl) {
      out.push_back(std::move(one.body[0].decl));
      continue;
    }
    // Not a lone declaration (a comment mentioned one?): read the whole body.
    Function copy = f;
    if (Status s = parse_body(&copy); !s.is_ok()) return s;
    out.clear();
    for (auto& st : copy.body)
      if (st.kind == Statement::Kind::kDecl &&
          (st.decl.space == "shared" || st.decl.space == "global" || st.decl.space == "const"))
        out.push_back(std::move(st.decl));
    return out;
  }
  return out;
}

Status parse_body(Function* f) {
  f->body.clear();
  if (!f->has_body) return Status::ok();
  Parser p(f->body_text, f->body_line);
  Status s = p.run_body(f);
  if (!s.is_ok()) f->body.clear();
  return s;
}

}  // namespace rgpu::ptx::ast
