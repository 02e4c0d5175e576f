// Private to the etcd client and store: base64 and the gateway's JSON
// spellings (64-bit numbers arrive as strings, absent fields mean zero).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "rgpu/common/status.h"
#include "rgpu/pool/etcd_client.h"

namespace rgpu::pool::detail {

std::string b64(const std::string& bytes);
// An error for text that is not base64.
Result<std::string> unb64(const std::string& text);
// A 64-bit number field, given as a string or a number; 0 when absent or
// not a number.
int64_t i64(const nlohmann::json& object, const char* field);
Result<KeyValue> parse_kv(const nlohmann::json& kv);

}  // namespace rgpu::pool::detail
