// The stand-in's bit generators, each a pure function of (seed, position):
// the state at any position of the one sequence a seed defines is reached by
// jumping, never by stepping, so a generator's offset and every later call
// cost the same whatever the position. Written from the published
// definitions: Marsaglia's xorwow ("Xorshift RNGs", 2003), L'Ecuyer's
// MRG32k3a ("Good parameters and implementations for combined multiple
// recursive random number generators", 1999) and Philox4x32-10 (Salmon et
// al., "Parallel random numbers: as easy as 1, 2, 3", 2011).
//
// Each engine yields 32-bit words; MRG32k3a's words are its uniform output
// scaled to 32 bits. None copies NVIDIA's seeding or its interleaving of
// threads, so the sequences differ from cuRAND's (docs/cpu-device.md).
#pragma once

#include <array>
#include <cstdint>

namespace rgpu::cpurand {

// Philox4x32-10: the four words of block `counter` (128 bits: lo, hi) under
// the 64-bit `key`.
std::array<uint32_t, 4> philox4x32_10(uint64_t counter_lo, uint64_t counter_hi, uint64_t key);

// A stream of words from one engine. Not thread-safe; cheap to copy.
class Engine {
 public:
  enum class Kind { kXorwow, kMrg32k3a, kPhilox };
  // The engine of `kind` seeded with `seed`, at word `position`.
  Engine(Kind kind, uint64_t seed, uint64_t position);
  uint32_t next();
  // Moves on by `n` words, as n calls of next() would, at the cost of a jump.
  void skip(uint64_t n);

 private:
  Kind kind_;
  uint64_t seed_;
  // xorwow: v[0..4] and the Weyl counter d.
  std::array<uint32_t, 5> v_{};
  uint32_t d_ = 0;
  // MRG32k3a: the two components' last three values.
  std::array<uint64_t, 3> s1_{}, s2_{};
  // Philox: the block counter and the word within the current block.
  uint64_t block_ = 0;
  unsigned word_ = 4;
  std::array<uint32_t, 4> out_{};
};

}  // namespace rgpu::cpurand
