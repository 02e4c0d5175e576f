// The generated table of CUresult values, searched by value.
#include "error_names.h"

#include <algorithm>
#include <iterator>

namespace rgpu::shim {
namespace {

// One CUresult value. Immutable static data; any thread.
struct ErrorInfo {
  CUresult value;
  const char* name;
  const char* description;
};

constexpr ErrorInfo kErrors[] = {
#include "../generated/driver_errors.inc"
};

static_assert(std::is_sorted(std::begin(kErrors), std::end(kErrors),
                             [](const ErrorInfo& a, const ErrorInfo& b) { return a.value < b.value; }));

const ErrorInfo* find_error(CUresult value) noexcept {
  const ErrorInfo* it = std::lower_bound(std::begin(kErrors), std::end(kErrors), value,
                                         [](const ErrorInfo& e, CUresult v) { return e.value < v; });
  return it != std::end(kErrors) && it->value == value ? it : nullptr;
}

}  // namespace

const char* driver_error_name(CUresult value) noexcept {
  const ErrorInfo* info = find_error(value);
  return info ? info->name : nullptr;
}

const char* driver_error_description(CUresult value) noexcept {
  const ErrorInfo* info = find_error(value);
  return info ? info->description : nullptr;
}

}  // namespace rgpu::shim
