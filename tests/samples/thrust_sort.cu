// thrust_sort: thrust::sort of 1<<16 and 1<<20 pseudo-random keys, checked
// against std::sort. From 65536 keys CUB's radix sort takes its onesweep
// path (histogram, exclusive sum and onesweep kernels), and thrust frees the
// temporary storage those kernels use right after launching them. With a
// comparator of its own, thrust sorts with CUB's merge sort instead, whose
// kernels are launched as programmatic dependent launches.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <vector>

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/sort.h>

// A comparison thrust cannot see through: it takes the merge sort.
struct Before {
  __host__ __device__ bool operator()(uint32_t a, uint32_t b) const { return a < b; }
};

// Sorts n keys on the device (by merge sort with `merge`); true when the
// result is std::sort's.
bool sort_matches(size_t n, bool merge) {
  std::vector<uint32_t> keys(n);
  uint32_t state = 12345u + static_cast<uint32_t>(n);
  for (auto& k : keys) {
    state = state * 1664525u + 1013904223u;
    k = state;
  }
  thrust::device_vector<uint32_t> d(keys.begin(), keys.end());
  if (merge) {
    thrust::sort(d.begin(), d.end(), Before());
  } else {
    thrust::sort(d.begin(), d.end());
  }
  std::vector<uint32_t> got(n);
  thrust::copy(d.begin(), d.end(), got.begin());
  std::sort(keys.begin(), keys.end());
  if (got == keys) return true;
  size_t i = 0;
  while (got[i] == keys[i]) ++i;
  std::printf("FAIL thrust_sort: %s of %zu keys: element %zu is %u, expected %u\n", merge ? "merge sort" : "radix sort",
              n, i, got[i], keys[i]);
  return false;
}

int main() {
  try {
    for (size_t n : {size_t{1} << 16, size_t{1} << 20}) {
      if (!sort_matches(n, false)) return 1;
    }
    if (!sort_matches(size_t{1} << 16, true)) return 1;
  } catch (const std::exception& e) {
    std::printf("FAIL thrust_sort: %s\n", e.what());
    return 1;
  }
  std::printf("PASS thrust_sort\n");
  return 0;
}
