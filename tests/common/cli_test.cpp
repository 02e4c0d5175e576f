// The table-driven command line (rgpu/common/cli.h): values in both
// spellings, flags, ranges, sizes, order of application, the errors a user
// sees, and --help made from the same table.
#include "rgpu/common/cli.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rgpu::cli {
namespace {

struct Args {
  explicit Args(std::vector<std::string> words) : words_(std::move(words)) {
    argv_.push_back(const_cast<char*>("prog"));
    for (auto& w : words_) argv_.push_back(w.data());
  }
  int argc() const { return static_cast<int>(argv_.size()); }
  char** argv() { return argv_.data(); }

 private:
  std::vector<std::string> words_;
  std::vector<char*> argv_;
};

struct Settings {
  std::string listen = "default";
  bool insecure = false;
  uint64_t threads = 2;
  uint64_t bytes = 0;
  std::vector<std::string> slices;
};

Parser table(Settings* s) {
  Parser p("prog", "[OPTIONS]", "The end.");
  p.add(text("--listen", "HOST:PORT", "where to listen", &s->listen))
      .add(flag("--insecure", "no keys needed", &s->insecure))
      .add(number("--threads", "N", "worker threads, from one to sixty-four", 1, 64,
                  [s](uint64_t v) { s->threads = v; }))
      .add(size("--memory", "SIZE", "a size", true, [s](uint64_t v) { s->bytes = v; }))
      .add(list("--slices", "SPEC", "repeatable", &s->slices))
      .add({"--old", "", "", [](const std::string&) { return std::string("--old is gone: use --listen"); }, true});
  return p;
}

Parser::Outcome run(const Parser& p, std::vector<std::string> words, std::string* error) {
  Args a(std::move(words));
  return p.parse(a.argc(), a.argv(), error);
}

TEST(Cli, ValuesInBothSpellingsFlagsListsAndSizes) {
  Settings s;
  const Parser p = table(&s);
  std::string error;
  ASSERT_EQ(Parser::Outcome::kRun, run(p,
                                       {"--listen", "0.0.0.0:7", "--insecure", "--threads=64", "--memory", "2G",
                                        "--slices", "0:1G@0.5", "--slices=1:2G@1"},
                                       &error))
      << error;
  EXPECT_EQ(s.listen, "0.0.0.0:7");
  EXPECT_TRUE(s.insecure);
  EXPECT_EQ(s.threads, 64u);
  EXPECT_EQ(s.bytes, uint64_t{2} << 30);
  EXPECT_EQ(s.slices, (std::vector<std::string>{"0:1G@0.5", "1:2G@1"}));
  // A value may itself hold '=' or start with '-' when it is the next word.
  ASSERT_EQ(Parser::Outcome::kRun, run(p, {"--listen=a=b", "--slices", "-x"}, &error)) << error;
  EXPECT_EQ(s.listen, "a=b");
  EXPECT_EQ(s.slices.back(), "-x");
}

TEST(Cli, OptionsApplyInOrder) {
  Settings s;
  const Parser p = table(&s);
  std::string error;
  ASSERT_EQ(Parser::Outcome::kRun, run(p, {"--threads", "3", "--threads", "5"}, &error));
  EXPECT_EQ(s.threads, 5u);
}

TEST(Cli, EveryMistakeIsNamedAndStopsTheParse) {
  Settings s;
  const Parser p = table(&s);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--bogus"}, "prog: unknown argument '--bogus' (prog --help lists them)"},
      {{"--listen"}, "prog: --listen needs a value (HOST:PORT)"},
      {{"--insecure=yes"}, "prog: --insecure takes no value"},
      {{"--threads", "0"}, "prog: --threads wants a number from 1 to 64, got '0'"},
      {{"--threads", "65"}, "prog: --threads wants a number from 1 to 64, got '65'"},
      {{"--threads", "-1"}, "prog: --threads wants a number from 1 to 64, got '-1'"},
      {{"--threads", "1x"}, "prog: --threads wants a number from 1 to 64, got '1x'"},
      {{"--threads", "99999999999999999999999"},
       "prog: --threads wants a number from 1 to 64, got '99999999999999999999999'"},
      {{"--memory", "0"}, "prog: --memory wants a positive size (e.g. 64M), got '0'"},
      {{"--old"}, "prog: --old is gone: use --listen"},
      {{"listen"}, "prog: unknown argument 'listen' (prog --help lists them)"},
  };
  for (const auto& [words, want] : cases) {
    std::string error;
    EXPECT_EQ(Parser::Outcome::kError, run(p, words, &error)) << words[0];
    EXPECT_EQ(error, want);
  }
  // A bad size quotes parse_size's reason.
  std::string error;
  EXPECT_EQ(Parser::Outcome::kError, run(p, {"--memory", "lots"}, &error));
  EXPECT_EQ(error.rfind("prog: --memory: ", 0), 0u) << error;
  EXPECT_NE(error.find("lots"), std::string::npos) << error;
  // Nothing after the mistake was applied.
  Settings t;
  const Parser q = table(&t);
  EXPECT_EQ(Parser::Outcome::kError, run(q, {"--threads", "0", "--listen", "x"}, &error));
  EXPECT_EQ(t.listen, "default");
}

TEST(Cli, HelpAndVersionStopTheParse) {
  Settings s;
  const Parser p = table(&s);
  std::string error;
  EXPECT_EQ(Parser::Outcome::kHelp, run(p, {"--threads", "3", "-h", "--bogus"}, &error));
  EXPECT_EQ(Parser::Outcome::kHelp, run(p, {"--help"}, &error));
  EXPECT_EQ(Parser::Outcome::kVersion, run(p, {"--version"}, &error));
}

// A command's answers: help and version on stdout with status 0, a
// mistake on stderr with status 2, and -1 when the command is to run.
TEST(Cli, ParseOrAnswerIsWhatACommandPrints) {
  Settings s;
  const Parser p = table(&s);
  auto answer = [&](std::vector<std::string> words, std::string* out, std::string* err) {
    Args a(std::move(words));
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    const int code = p.parse_or_answer(a.argc(), a.argv(), "tool 1.2");
    *out = testing::internal::GetCapturedStdout();
    *err = testing::internal::GetCapturedStderr();
    return code;
  };
  std::string out, err;
  EXPECT_EQ(answer({"--help"}, &out, &err), 0);
  EXPECT_EQ(out, p.help());
  EXPECT_EQ(answer({"--version"}, &out, &err), 0);
  EXPECT_EQ(out, "tool 1.2\n");
  EXPECT_EQ(answer({"--threads", "x"}, &out, &err), 2);
  EXPECT_TRUE(out.empty());
  EXPECT_NE(err.find("--threads"), std::string::npos) << err;
  EXPECT_EQ(answer({"--threads", "3"}, &out, &err), -1);
  EXPECT_TRUE(out.empty() && err.empty());
  EXPECT_EQ(s.threads, 3u);
}

TEST(Cli, HelpListsTheTableWrappedAtEightyColumns) {
  Settings s;
  Parser p = table(&s);
  p.add(text("--a-rather-long-option-name", "VALUE",
             "its help starts on the next line at the help column, and words that do not fit in eighty columns "
             "go on further lines\nand a newline starts a line of its own",
             &s.listen));
  const std::string help = p.help();
  EXPECT_EQ(help.rfind("usage: prog [OPTIONS]\n\n", 0), 0u) << help;
  EXPECT_NE(help.find("  --listen HOST:PORT  where to listen\n"), std::string::npos) << help;
  EXPECT_NE(help.find("  --insecure          no keys needed\n"), std::string::npos) << help;
  EXPECT_NE(help.find("  --a-rather-long-option-name VALUE\n                      its help starts"),
            std::string::npos)
      << help;
  EXPECT_NE(help.find("\n                      and a newline starts a line of its own\n"), std::string::npos) << help;
  EXPECT_EQ(help.find("--old"), std::string::npos) << "a hidden option is not listed";
  EXPECT_NE(help.find("\nThe end.\n"), std::string::npos) << help;
  size_t start = 0;
  while (start < help.size()) {
    const size_t end = help.find('\n', start);
    EXPECT_LE(end - start, 80u) << help.substr(start, end - start);
    start = end + 1;
  }
}

}  // namespace
}  // namespace rgpu::cli
