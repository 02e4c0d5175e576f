// The text exposition format's sample lines, parsed.
#include "rgpu/common/metrics_text.h"

#include <cmath>
#include <cstdlib>

namespace rgpu::metrics {

const std::string& Sample::label(std::string_view name) const {
  static const std::string kNone;
  for (const auto& [k, v] : labels) {
    if (k == name) return v;
  }
  return kNone;
}

namespace {

bool name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

void skip_spaces(std::string_view line, size_t* at) {
  while (*at < line.size() && (line[*at] == ' ' || line[*at] == '\t')) ++*at;
}

// A name starting at *at; empty when there is none.
std::string_view read_name(std::string_view line, size_t* at) {
  const size_t start = *at;
  while (*at < line.size() && name_char(line[*at], *at == start)) ++*at;
  return line.substr(start, *at - start);
}

bool parse_value(std::string_view text, double* out) {
  if (text == "+Inf" || text == "Inf") {
    *out = HUGE_VAL;
    return true;
  }
  if (text == "-Inf") {
    *out = -HUGE_VAL;
    return true;
  }
  if (text == "NaN") {
    *out = std::nan("");
    return true;
  }
  if (text.empty() || text.size() > 64) return false;
  const std::string copy(text);
  char* end = nullptr;
  *out = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size();
}

// The labels between braces; *at is just past '{' and ends past '}'.
bool parse_labels(std::string_view line, size_t* at, Sample* sample) {
  for (;;) {
    skip_spaces(line, at);
    if (*at < line.size() && line[*at] == '}') {
      ++*at;
      return true;
    }
    const std::string_view key = read_name(line, at);
    if (key.empty()) return false;
    skip_spaces(line, at);
    if (*at + 1 >= line.size() || line[*at] != '=' || line[*at + 1] != '"') return false;
    *at += 2;
    std::string value;
    for (;;) {
      if (*at >= line.size()) return false;
      const char c = line[(*at)++];
      if (c == '"') break;
      if (c != '\\') {
        value += c;
        continue;
      }
      if (*at >= line.size()) return false;
      const char e = line[(*at)++];
      value += e == 'n' ? '\n' : e;  // \\ and \" stand for themselves
    }
    sample->labels.emplace_back(std::string(key), std::move(value));
    skip_spaces(line, at);
    if (*at < line.size() && line[*at] == ',') ++*at;
  }
}

}  // namespace

Result<std::vector<Sample>> parse_text(std::string_view page, size_t max_samples) {
  std::vector<Sample> samples;
  size_t line_no = 0;
  while (!page.empty()) {
    const size_t eol = page.find('\n');
    std::string_view line = page.substr(0, eol);
    page = eol == std::string_view::npos ? std::string_view() : page.substr(eol + 1);
    ++line_no;
    size_t at = 0;
    skip_spaces(line, &at);
    if (at == line.size() || line[at] == '#') continue;
    auto bad = [&](const char* what) {
      return invalid_argument("metrics page line " + std::to_string(line_no) + ": " + what);
    };
    if (samples.size() >= max_samples) return bad("too many samples");
    Sample sample;
    sample.name = std::string(read_name(line, &at));
    if (sample.name.empty()) return bad("no metric name");
    skip_spaces(line, &at);
    if (at < line.size() && line[at] == '{') {
      ++at;
      if (!parse_labels(line, &at, &sample)) return bad("malformed labels");
    }
    skip_spaces(line, &at);
    const size_t start = at;
    while (at < line.size() && line[at] != ' ' && line[at] != '\t') ++at;
    if (!parse_value(line.substr(start, at - start), &sample.value)) return bad("malformed value");
    samples.push_back(std::move(sample));  // a timestamp after the value is ignored
  }
  return samples;
}

}  // namespace rgpu::metrics
