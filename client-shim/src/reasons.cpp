// Reasons from the server, printed once each.
#include "reasons.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include <capnp/schema.h>

#include "error_names.h"
#include "rgpu/common/log.h"
#include "rgpu/common/reason.h"

namespace rgpu::shim {
namespace {

constexpr size_t kMaxDistinct = 256;

std::string code_name(wire::Api api, uint32_t code) {
  if (api == wire::Api::DRIVER || api == wire::Api::NONE) {
    if (const char* name = driver_error_name(static_cast<CUresult>(code))) return name;
    return "CUDA error " + std::to_string(code);
  }
  const capnp::EnumSchema schema = capnp::Schema::from<wire::Api>();
  const auto enumerants = schema.getEnumerants();
  const auto index = static_cast<unsigned>(api);
  const std::string api_text = index < enumerants.size() ? enumerants[index].getProto().getName().cStr() : "api";
  return api_text + " status " + std::to_string(code);
}

}  // namespace

bool reasons_printed() noexcept {
  static const bool printed = [] {
    const char* v = std::getenv("RGPU_ERRORS");
    return v == nullptr || std::strcmp(v, "quiet") != 0;
  }();
  return printed;
}

std::string reason_line(std::string_view server, wire::Api api, uint32_t code, std::string_view reason) {
  return "rgpu: error from rgpud at " + bounded_reason(server, 128) + ": " + code_name(api, code) + ": " +
         bounded_reason(reason);
}

void report_reason(std::string_view server, wire::Api api, uint32_t code, std::string_view reason) {
  if (reason.empty()) return;
  std::string line = reason_line(server, api, code, reason);
  if (!reasons_printed()) {
    RGPU_DEBUG("%s", line.c_str());
    return;
  }
  static std::mutex mu;
  static std::unordered_set<std::string>* seen = new std::unordered_set<std::string>;  // outlives exit
  {
    std::lock_guard<std::mutex> lock(mu);
    if (seen->count(line) != 0) return;
    if (seen->size() >= kMaxDistinct) {
      RGPU_DEBUG("%s", line.c_str());
      return;
    }
    seen->insert(line);
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace rgpu::shim
