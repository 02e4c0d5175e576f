// Command-line options from one table: each entry says its name, its value's
// name, its help and what it does with the value, so the parser and the
// --help text cannot disagree. Values come as "--name VALUE" or
// "--name=VALUE"; a flag takes none. Options apply in the order given (so
// one that reads a file of defaults is overridden by those after it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rgpu::cli {

// Takes an option's value: "" when it did, else why not (the parser puts
// the program's name before it).
using Apply = std::function<std::string(const std::string& value)>;

struct Option {
  std::string name;     // "--listen"
  std::string metavar;  // "HOST:PORT"; empty for a flag, which takes no value
  std::string help;     // wrapped by help(); "\n" starts a new line
  Apply apply;
  bool hidden = false;  // parsed, not listed (a retired option that explains itself)
};

// Ready-made options. A number is a whole decimal number in [lo, hi]; a
// size is parse_size's (a number of bytes with an optional K, M, G or T),
// above zero when `positive`.
Option text(std::string name, std::string metavar, std::string help, std::string* out);
Option list(std::string name, std::string metavar, std::string help, std::vector<std::string>* out);
Option flag(std::string name, std::string help, bool* out);
Option number(std::string name, std::string metavar, std::string help, uint64_t lo, uint64_t hi,
              std::function<void(uint64_t)> set);
Option size(std::string name, std::string metavar, std::string help, bool positive,
            std::function<void(uint64_t)> set);

// Whole decimal number, nothing else (no sign, no spaces).
bool parse_u64(const std::string& text, uint64_t* out);

class Parser {
 public:
  enum class Outcome { kRun, kHelp, kVersion, kError };

  // `usage` follows "usage: PROGRAM "; `epilogue` ends the help.
  Parser(std::string program, std::string usage, std::string epilogue = {});
  Parser& add(Option option);

  // Applies argv[1..] in order. --help/-h and --version stop it (kHelp,
  // kVersion); on kError *error holds "PROGRAM: why".
  Outcome parse(int argc, char** argv, std::string* error) const;
  // parse() as a command answers it: the help on stdout (0), `version` and
  // a newline on stdout (0), the error on stderr (2). -1: run the command.
  int parse_or_answer(int argc, char** argv, const std::string& version) const;
  // The usage line, then every option not hidden: name and value's name,
  // its help wrapped at 80 columns beside or below them, then the epilogue.
  std::string help() const;

 private:
  const Option* find(const std::string& name) const;

  std::string program_, usage_, epilogue_;
  std::vector<Option> options_;
};

}  // namespace rgpu::cli
