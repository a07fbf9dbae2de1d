// A small, fully specified random generator for data augmentation. The standard distributions
// (std::uniform_real_distribution, ...) are implementation-defined, so a seed would give other
// boxes under another standard library; SplitMix64 plus our own mapping to ranges does not.
#ifndef LIBREYOLO_SERVER_ENGINE_DATA_RNG_H_
#define LIBREYOLO_SERVER_ENGINE_DATA_RNG_H_

#include <cstdint>

namespace libreyolo::engine {

// Combines seeds into one so that each (seed, epoch, position) gets an independent stream:
// this is what makes the loader's output independent of the number of workers.
inline uint64_t MixSeed(uint64_t a, uint64_t b) {
  uint64_t z = a ^ (b + 0x9E3779B97F4A7C15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  // Uniform integer in [lo, hi], both inclusive; the modulo bias is below 2^-40 for our ranges.
  int64_t UniformInt(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int64_t>(Next() % span);
  }
  bool Bernoulli(double p) { return Uniform() < p; }

 private:
  uint64_t state_;
};

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_DATA_RNG_H_
