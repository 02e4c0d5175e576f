// How the rgpu command writes values for people: sizes, ages, and text from
// a server or pool made safe for a terminal.
#pragma once

#include <cstdint>
#include <string>

namespace rgpu::tools {

// "512 B", "12.0 MiB", "1.5 GiB".
std::string human_bytes(double bytes);
// "45s", "12m03s", "3h07m", "2d04h".
std::string human_age(uint64_t ms);
// `s` with every byte outside printable ASCII shown as '?'.
std::string printable(std::string s);

}  // namespace rgpu::tools
