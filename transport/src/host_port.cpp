// split_host_port: "host:port", "[v6]:port"; the one address parser of the transports.
#include <cctype>
#include <string>

#include "rgpu/transport/transport.h"

namespace rgpu::transport {

bool split_host_port(const std::string& host_port, std::string* host, uint16_t* port) {
  std::string h;
  std::string p;
  if (!host_port.empty() && host_port.front() == '[') {
    const size_t close = host_port.find(']');
    if (close == std::string::npos || close + 1 >= host_port.size() || host_port[close + 1] != ':') {
      return false;
    }
    h = host_port.substr(1, close - 1);
    p = host_port.substr(close + 2);
    if (h.empty() || h.find_first_of("[]") != std::string::npos) return false;
  } else {
    const size_t colon = host_port.rfind(':');
    if (colon == std::string::npos || colon == 0) return false;
    h = host_port.substr(0, colon);
    p = host_port.substr(colon + 1);
    // An unbracketed IPv6 address is ambiguous ("::1:5000").
    if (h.find(':') != std::string::npos) return false;
  }
  if (p.empty() || p.size() > 5) return false;
  unsigned value = 0;
  for (char c : p) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value > 65535) return false;
  for (char c : h) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '\0') return false;
  }
  if (host != nullptr) *host = h;
  if (port != nullptr) *port = static_cast<uint16_t>(value);
  return true;
}

}  // namespace rgpu::transport
