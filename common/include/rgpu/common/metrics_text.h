// Reading the text exposition format back: the samples of a scraped
// /metrics page, for `rgpu top` and for tests of what a registry renders.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rgpu/common/status.h"

namespace rgpu::metrics {

// One sample line: `name{label="value",...} value [timestamp]`.
struct Sample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // unescaped values, in the order written
  double value = 0;

  // The value of label `name`, or "" when the sample has none.
  const std::string& label(std::string_view name) const;
};

// Parses a page. Comment and blank lines are skipped (HELP and TYPE are not
// needed to read values). The page comes from the network: a malformed line,
// or more than `max_samples` samples, is an error naming the line, never a
// crash.
Result<std::vector<Sample>> parse_text(std::string_view page, size_t max_samples = 1000000);

}  // namespace rgpu::metrics
