// thrust_sort: thrust::sort of 1<<16 and 1<<20 pseudo-random keys, checked
// against std::sort. From 65536 keys CUB's radix sort takes its onesweep
// path (histogram, exclusive sum and onesweep kernels), and thrust frees the
// temporary storage those kernels use right after launching them.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <vector>

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/sort.h>

// Sorts n keys on the device; true when the result is std::sort's.
bool sort_matches(size_t n) {
  std::vector<uint32_t> keys(n);
  uint32_t state = 12345u + static_cast<uint32_t>(n);
  for (auto& k : keys) {
    state = state * 1664525u + 1013904223u;
    k = state;
  }
  thrust::device_vector<uint32_t> d(keys.begin(), keys.end());
  thrust::sort(d.begin(), d.end());
  std::vector<uint32_t> got(n);
  thrust::copy(d.begin(), d.end(), got.begin());
  std::sort(keys.begin(), keys.end());
  if (got == keys) return true;
  size_t i = 0;
  while (got[i] == keys[i]) ++i;
  std::printf("FAIL thrust_sort: %zu keys: element %zu is %u, expected %u\n", n, i, got[i], keys[i]);
  return false;
}

int main() {
  try {
    for (size_t n : {size_t{1} << 16, size_t{1} << 20}) {
      if (!sort_matches(n)) return 1;
    }
  } catch (const std::exception& e) {
    std::printf("FAIL thrust_sort: %s\n", e.what());
    return 1;
  }
  std::printf("PASS thrust_sort\n");
  return 0;
}
