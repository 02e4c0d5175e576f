// Kernel parameter layouts from PTX `.entry` declarations.
#include <algorithm>
#include <cctype>

#include "reader.h"
#include "rgpu/fatbin/fatbin.h"

namespace rgpu::fatbin {

namespace {

// Streams PTX tokens: directives and identifiers ([A-Za-z0-9_$%.]+), quoted
// strings, and single punctuation characters. Comments are skipped.
class Lexer {
 public:
  explicit Lexer(std::string_view text) : s_(text) {}

  // The next token, or an empty view at the end of the text.
  std::string_view next() {
    skip_space();
    if (i_ >= s_.size()) return {};
    const std::size_t start = i_;
    const char c = s_[i_];
    if (word_char(c)) {
      while (i_ < s_.size() && word_char(s_[i_])) ++i_;
    } else if (c == '"') {
      ++i_;
      while (i_ < s_.size() && s_[i_] != '"' && s_[i_] != '\n') ++i_;
      if (i_ < s_.size() && s_[i_] == '"') ++i_;
    } else {
      ++i_;
    }
    return s_.substr(start, i_ - start);
  }
  std::string_view peek() {
    const std::size_t i = i_, line = line_;
    std::string_view t = next();
    i_ = i;
    line_ = line;
    return t;
  }
  std::size_t line() const { return line_; }

 private:
  static bool word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$' || c == '%' || c == '.';
  }
  void skip_space() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\n') {
        ++line_;
        ++i_;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' || c == '\0') {
        ++i_;
      } else if (c == '/' && i_ + 1 < s_.size() && s_[i_ + 1] == '/') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else if (c == '/' && i_ + 1 < s_.size() && s_[i_ + 1] == '*') {
        const std::size_t end = s_.find("*/", i_ + 2);
        const std::size_t stop = end == std::string_view::npos ? s_.size() : end + 2;
        line_ += static_cast<std::size_t>(std::count(s_.begin() + i_, s_.begin() + stop, '\n'));
        i_ = stop;
      } else {
        return;
      }
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
  std::size_t line_ = 1;
};

// Decimal or 0x hex; false if not a number or above 2^31.
bool parse_number(std::string_view t, std::uint32_t* out) {
  std::uint64_t v = 0;
  int base = 10;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    base = 16;
    t.remove_prefix(2);
  }
  if (t.empty()) return false;
  for (char c : t) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (base == 16 && c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return false;
    v = v * base + d;
    if (v > (1u << 31)) return false;
  }
  *out = static_cast<std::uint32_t>(v);
  return true;
}

// Size in bytes of a PTX fundamental or opaque type; 0 if `t` is not one.
std::uint32_t type_size(std::string_view t) {
  static constexpr struct { std::string_view name; std::uint32_t size; } kTypes[] = {
      {".b8", 1},      {".u8", 1},     {".s8", 1},        {".pred", 1},     {".b16", 2},
      {".u16", 2},     {".s16", 2},    {".f16", 2},       {".bf16", 2},     {".b32", 4},
      {".u32", 4},     {".s32", 4},    {".f32", 4},       {".f16x2", 4},    {".bf16x2", 4},
      {".tf32", 4},    {".b64", 8},    {".u64", 8},       {".s64", 8},      {".f64", 8},
      {".b128", 16},   {".texref", 8}, {".samplerref", 8}, {".surfref", 8},
  };
  for (const auto& k : kTypes) {
    if (k.name == t) return k.size;
  }
  return 0;
}

class EntryParser {
 public:
  EntryParser(std::string_view ptx, const Limits& limits) : lex_(ptx), limits_(limits) {}

  Result<std::vector<KernelInfo>> run() {
    std::vector<KernelInfo> out;
    int depth = 0;
    for (std::string_view t = lex_.next(); !t.empty(); t = lex_.next()) {
      if (t == "{") {
        ++depth;
      } else if (t == "}") {
        if (depth == 0) return error("unbalanced '}'");
        --depth;
      } else if (t == ".entry" && depth == 0) {
        if (out.size() >= limits_.max_entries) return error("too many .entry declarations");
        KernelInfo k;
        Status st = entry(&k);
        if (!st) return st;
        out.push_back(std::move(k));
      }
    }
    return out;
  }

 private:
  Status error(const std::string& what) {
    return invalid_argument("ptx line " + std::to_string(lex_.line()) + ": " + what);
  }

  Status expect_number(std::uint32_t* v) {
    std::string_view t = lex_.next();
    if (!parse_number(t, v)) return error("expected a number, found '" + std::string(t) + "'");
    return Status::ok();
  }

  Status entry(KernelInfo* k) {
    std::string_view name = lex_.next();
    if (name.empty() || name[0] == '.' || !(isalpha(static_cast<unsigned char>(name[0])) ||
                                            name[0] == '_' || name[0] == '$' || name[0] == '%')) {
      return error("expected a kernel name after .entry, found '" + std::string(name) + "'");
    }
    k->name = std::string(name);
    std::uint32_t end = 0;
    if (lex_.peek() == "(") {
      lex_.next();
      if (lex_.peek() == ")") {
        lex_.next();
      } else {
        for (;;) {
          Status st = param(k, &end);
          if (!st) return st;
          std::string_view sep = lex_.next();
          if (sep == ")") break;
          if (sep != ",") return error("expected ',' or ')' in the parameters of " + k->name);
        }
      }
    }
    k->param_size = end;
    // Performance directives up to the body (or ';' for a declaration).
    for (;;) {
      std::string_view t = lex_.peek();
      if (t.empty() || t == "{" || t == ";") break;
      lex_.next();
      if (t == ".maxntid" || t == ".reqntid") {
        Status st = dims(t == ".maxntid" ? &k->max_ntid : &k->req_ntid);
        if (!st) return st;
      }
    }
    std::uint64_t threads = 0;
    const auto& v = k->max_ntid[0] != 0 ? k->max_ntid : k->req_ntid;
    if (v[0] != 0) {
      threads = std::uint64_t{v[0]} * std::max(v[1], 1u) * std::max(v[2], 1u);
      k->max_threads = static_cast<std::uint32_t>(std::min<std::uint64_t>(threads, UINT32_MAX));
    }
    return Status::ok();
  }

  Status dims(std::array<std::uint32_t, 3>* out) {
    *out = {0, 1, 1};
    for (int i = 0; i < 3; ++i) {
      Status st = expect_number(&(*out)[i]);
      if (!st) return st;
      if (lex_.peek() != ",") break;
      lex_.next();
    }
    return Status::ok();
  }

  // One `.param [qualifiers] type [.ptr ...] [.align N] name[dims]`.
  Status param(KernelInfo* k, std::uint32_t* end) {
    if (k->params.size() >= limits_.max_entries) return error("too many parameters in " + k->name);
    if (lex_.next() != ".param") return error("expected .param in the parameters of " + k->name);
    std::uint32_t align = 0, elem = 0, vec = 1;
    std::string_view t = lex_.next();
    for (; !t.empty() && t[0] == '.'; t = lex_.next()) {
      if (t == ".align") {
        Status st = expect_number(&align);
        if (!st) return st;
        if (align == 0 || (align & (align - 1)) != 0) return error("bad .align in " + k->name);
      } else if (t == ".v2" || t == ".v4" || t == ".v8") {
        vec = static_cast<std::uint32_t>(t[2] - '0');
      } else if (std::uint32_t s = type_size(t)) {
        elem = s;
      }
      // .ptr and state spaces (.global, .shared, ...) do not change the layout.
    }
    if (elem == 0) return error("parameter of " + k->name + " has no type");
    if (t.empty() || t == "," || t == ")" || t == "[") {
      return error("parameter of " + k->name + " has no name");
    }
    std::uint64_t size = std::uint64_t{elem} * vec;
    if (align == 0) align = static_cast<std::uint32_t>(size);
    while (lex_.peek() == "[") {
      lex_.next();
      std::uint32_t n = 0;
      Status st = expect_number(&n);
      if (!st) return st;
      if (lex_.next() != "]") return error("expected ']' in the parameters of " + k->name);
      size *= n;
      if (size > (1u << 30)) return error("parameter of " + k->name + " too large");
    }
    const std::uint64_t offset = (std::uint64_t{*end} + align - 1) / align * align;
    if (offset + size > (1u << 30)) return error("parameters of " + k->name + " too large");
    k->params.push_back({static_cast<std::uint32_t>(k->params.size()),
                         static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(size)});
    *end = static_cast<std::uint32_t>(offset + size);
    return Status::ok();
  }

  Lexer lex_;
  const Limits& limits_;
};

}  // namespace

Result<std::vector<KernelInfo>> kernels_from_ptx(std::string_view ptx, const Limits& limits) {
  if (ptx.size() > limits.max_image_size) return invalid_argument("ptx text over the size limit");
  return EntryParser(ptx, limits).run();
}

}  // namespace rgpu::fatbin
