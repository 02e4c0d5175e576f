// Table-driven command lines (rgpu/common/cli.h).
#include "rgpu/common/cli.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "rgpu/common/request_text.h"

namespace rgpu::cli {
namespace {

constexpr size_t kWidth = 80;
constexpr size_t kHelpColumn = 22;

// `text` wrapped at kWidth, every line indented to `column`; "\n" breaks.
std::string wrap(const std::string& text, size_t column, size_t first_used) {
  std::string out, line;
  size_t used = first_used;
  auto flush = [&] {
    out += line;
    line.clear();
  };
  std::istringstream paragraphs(text);
  std::string paragraph;
  bool first_paragraph = true;
  while (std::getline(paragraphs, paragraph)) {
    if (!first_paragraph) {
      out += "\n" + std::string(column, ' ');
      used = column;
    }
    first_paragraph = false;
    std::istringstream words(paragraph);
    std::string word;
    bool first_word = true;
    while (words >> word) {
      if (!first_word && used + 1 + word.size() > kWidth) {
        flush();
        out += "\n" + std::string(column, ' ');
        used = column;
        first_word = true;
      }
      if (!first_word) {
        line += ' ';
        ++used;
      }
      line += word;
      used += word.size();
      first_word = false;
    }
    flush();
  }
  return out;
}

}  // namespace

bool parse_u64(const std::string& text, uint64_t* out) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (*end != '\0' || errno != 0) return false;
  *out = v;
  return true;
}

Option text(std::string name, std::string metavar, std::string help, std::string* out) {
  return Option{std::move(name), std::move(metavar), std::move(help), [out](const std::string& v) {
                  *out = v;
                  return std::string();
                }};
}

Option list(std::string name, std::string metavar, std::string help, std::vector<std::string>* out) {
  return Option{std::move(name), std::move(metavar), std::move(help), [out](const std::string& v) {
                  out->push_back(v);
                  return std::string();
                }};
}

Option flag(std::string name, std::string help, bool* out) {
  return Option{std::move(name), {}, std::move(help), [out](const std::string&) {
                  *out = true;
                  return std::string();
                }};
}

Option number(std::string name, std::string metavar, std::string help, uint64_t lo, uint64_t hi,
              std::function<void(uint64_t)> set) {
  const std::string n = name;
  return Option{std::move(name), std::move(metavar), std::move(help),
                [n, lo, hi, set = std::move(set)](const std::string& v) -> std::string {
                  uint64_t x = 0;
                  if (!parse_u64(v, &x) || x < lo || x > hi) {
                    return n + " wants a number from " + std::to_string(lo) +
                           (hi == UINT64_MAX ? "" : " to " + std::to_string(hi)) + ", got '" + v + "'";
                  }
                  set(x);
                  return std::string();
                }};
}

Option size(std::string name, std::string metavar, std::string help, bool positive,
            std::function<void(uint64_t)> set) {
  const std::string n = name;
  return Option{std::move(name), std::move(metavar), std::move(help),
                [n, positive, set = std::move(set)](const std::string& v) -> std::string {
                  auto bytes = parse_size(v);
                  if (!bytes.is_ok()) return n + ": " + bytes.status().message();
                  if (positive && bytes.value() == 0) return n + " wants a positive size (e.g. 64M), got '" + v + "'";
                  set(bytes.value());
                  return std::string();
                }};
}

Parser::Parser(std::string program, std::string usage, std::string epilogue)
    : program_(std::move(program)), usage_(std::move(usage)), epilogue_(std::move(epilogue)) {}

Parser& Parser::add(Option option) {
  options_.push_back(std::move(option));
  return *this;
}

const Option* Parser::find(const std::string& name) const {
  for (const Option& o : options_) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

int Parser::parse_or_answer(int argc, char** argv, const std::string& version) const {
  std::string error;
  switch (parse(argc, argv, &error)) {
    case Outcome::kHelp:
      std::fputs(help().c_str(), stdout);
      return 0;
    case Outcome::kVersion:
      std::printf("%s\n", version.c_str());
      return 0;
    case Outcome::kError:
      std::fprintf(stderr, "%s\n", error.c_str());
      return 2;
    case Outcome::kRun:
      break;
  }
  return -1;
}

Parser::Outcome Parser::parse(int argc, char** argv, std::string* error) const {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return Outcome::kHelp;
    if (arg == "--version") return Outcome::kVersion;
    std::string value;
    bool has_value = false;
    if (const size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
      has_value = true;
    }
    const Option* o = find(arg);
    if (!o) {
      *error = program_ + ": unknown argument '" + std::string(argv[i]) + "' (" + program_ + " --help lists them)";
      return Outcome::kError;
    }
    if (o->metavar.empty()) {
      if (has_value) {
        *error = program_ + ": " + arg + " takes no value";
        return Outcome::kError;
      }
    } else if (!has_value) {
      if (i + 1 >= argc) {
        *error = program_ + ": " + arg + " needs a value (" + o->metavar + ")";
        return Outcome::kError;
      }
      value = argv[++i];
    }
    if (std::string why = o->apply(value); !why.empty()) {
      *error = program_ + ": " + why;
      return Outcome::kError;
    }
  }
  return Outcome::kRun;
}

std::string Parser::help() const {
  std::string out = "usage: " + program_ + " " + usage_ + "\n\n";
  for (const Option& o : options_) {
    if (o.hidden) continue;
    std::string head = "  " + o.name + (o.metavar.empty() ? "" : " " + o.metavar);
    if (head.size() + 2 > kHelpColumn) {
      // Too long to share a line: the help starts below, at the column.
      out += head + "\n" + std::string(kHelpColumn, ' ') + wrap(o.help, kHelpColumn, kHelpColumn) + "\n";
    } else {
      head.resize(kHelpColumn, ' ');
      out += head + wrap(o.help, kHelpColumn, kHelpColumn) + "\n";
    }
  }
  if (!epilogue_.empty()) out += "\n" + wrap(epilogue_, 0, 0) + "\n";
  return out;
}

}  // namespace rgpu::cli
