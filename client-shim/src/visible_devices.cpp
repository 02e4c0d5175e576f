// CUDA_VISIBLE_DEVICES parsing (visible_devices.h).
#include "visible_devices.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace rgpu::shim {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  if (prefix.size() > text.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

// The device an entry names, or -1.
int resolve(std::string_view entry, const std::vector<CUuuid>& uuids) {
  if (entry.empty()) return -1;
  const int count = static_cast<int>(uuids.size());
  if (std::all_of(entry.begin(), entry.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    if (entry.size() > 9) return -1;
    int v = 0;
    for (char c : entry) v = v * 10 + (c - '0');
    return v < count ? v : -1;
  }
  // "GPU-" alone would match every device: a prefix must say more.
  if (!starts_with_nocase(entry, "GPU-") || entry.size() <= 4) return -1;
  int found = -1;
  for (int i = 0; i < count; ++i) {
    if (starts_with_nocase(uuid_text(uuids[static_cast<size_t>(i)]), entry)) {
      if (found >= 0) return -1;  // ambiguous
      found = i;
    }
  }
  return found;
}

}  // namespace

std::string uuid_text(const CUuuid& uuid) {
  std::string out = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    out += hex;
  }
  return out;
}

std::vector<int> select_visible(std::string_view spec, const std::vector<CUuuid>& uuids) {
  std::vector<int> selected;
  while (!trim(spec).empty()) {
    const size_t comma = spec.find(',');
    const int device = resolve(trim(spec.substr(0, comma)), uuids);
    if (device < 0 || std::find(selected.begin(), selected.end(), device) != selected.end()) break;
    selected.push_back(device);
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  return selected;
}

}  // namespace rgpu::shim
