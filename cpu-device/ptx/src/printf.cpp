// Device printf: formats vprintf's format string and packed argument buffer
// (each argument aligned to its own size, as nvcc lays it out).
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "exec.h"

namespace rgpu::ptx {

std::string format_printf(const std::string& fmt, uint64_t args_addr,
                          const std::function<bool(uint64_t, void*, size_t)>& read, bool* ok) {
  std::string out;
  uint64_t off = 0;
  *ok = true;
  auto fetch = [&](size_t size, void* dst) {
    off = (off + size - 1) / size * size;
    if (!args_addr || !read(args_addr + off, dst, size)) {
      *ok = false;
      memset(dst, 0, size);
    }
    off += size;
  };
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c != '%') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '%') {
      out.push_back('%');
      ++i;
      continue;
    }
    // %[flags][width][.precision][length]conversion
    std::string spec = "%";
    size_t j = i + 1;
    while (j < fmt.size() && strchr("-+ #0", fmt[j])) spec.push_back(fmt[j++]);
    auto number = [&]() {
      if (j < fmt.size() && fmt[j] == '*') {
        int32_t v = 0;
        fetch(4, &v);
        spec += std::to_string(v);
        ++j;
        return;
      }
      while (j < fmt.size() && fmt[j] >= '0' && fmt[j] <= '9') spec.push_back(fmt[j++]);
    };
    number();
    if (j < fmt.size() && fmt[j] == '.') {
      spec.push_back('.');
      ++j;
      number();
    }
    int longs = 0;
    while (j < fmt.size() && strchr("hlLqjzt", fmt[j])) {
      char l = fmt[j++];
      if (l == 'l' || l == 'L' || l == 'q' || l == 'j' || l == 'z' || l == 't') ++longs;
    }
    if (j >= fmt.size()) {
      out += fmt.substr(i);
      break;
    }
    char conv = fmt[j];
    char buf[512];
    buf[0] = 0;
    switch (conv) {
      case 'd': case 'i': {
        if (longs) {
          int64_t v;
          fetch(8, &v);
          snprintf(buf, sizeof(buf), (spec + "lld").c_str(), static_cast<long long>(v));
        } else {
          int32_t v;
          fetch(4, &v);
          snprintf(buf, sizeof(buf), (spec + "d").c_str(), v);
        }
        break;
      }
      case 'u': case 'x': case 'X': case 'o': {
        if (longs) {
          uint64_t v;
          fetch(8, &v);
          snprintf(buf, sizeof(buf), (spec + "ll" + conv).c_str(), static_cast<unsigned long long>(v));
        } else {
          uint32_t v;
          fetch(4, &v);
          snprintf(buf, sizeof(buf), (spec + conv).c_str(), v);
        }
        break;
      }
      case 'c': {
        int32_t v;
        fetch(4, &v);
        snprintf(buf, sizeof(buf), (spec + "c").c_str(), v);
        break;
      }
      case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A': {
        double v;
        fetch(8, &v);
        snprintf(buf, sizeof(buf), (spec + conv).c_str(), v);
        break;
      }
      case 'p': {
        uint64_t v;
        fetch(8, &v);
        snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
        break;
      }
      case 's': {
        uint64_t p;
        fetch(8, &p);
        std::string s;
        if (p == 0) {
          s = "(null)";
        } else {
          for (size_t k = 0; k < 4096; ++k) {
            char ch;
            if (!read(p + k, &ch, 1)) {
              *ok = false;
              break;
            }
            if (!ch) break;
            s.push_back(ch);
          }
        }
        snprintf(buf, sizeof(buf), (spec + "s").c_str(), s.c_str());
        break;
      }
      default:
        // Unknown conversion: print it as written.
        out += fmt.substr(i, j - i + 1);
        i = j;
        continue;
    }
    out += buf;
    i = j;
  }
  return out;
}

}  // namespace rgpu::ptx
