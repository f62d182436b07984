// A 128-bit structural hasher (two independently mixed 64-bit lanes): collisions between
// distinct grammar structures are negligible, so equal hashes may be treated as equal structure.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xg2 {

struct Hash128 {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const Hash128& o) const { return lo == o.lo && hi == o.hi; }
};

// For hash tables keyed by a Hash128 (already well mixed: one lane folded into the other).
struct Hash128Hasher {
  size_t operator()(const Hash128& h) const { return static_cast<size_t>(h.lo ^ (h.hi * 0x9E3779B97F4A7C15ull)); }
};

class Hasher {
 public:
  void Add(uint64_t x) {
    a_ = Mix(a_ ^ (x + 0x9E3779B97F4A7C15ull));
    b_ = Mix(b_ + x * 0xC2B2AE3D27D4EB4Full + 0x165667B19E3779F9ull);
  }
  void Add(const Hash128& h) {
    Add(h.lo);
    Add(h.hi);
  }
  Hash128 Finish() const { return {Mix(a_ ^ 0x27D4EB2F165667C5ull), Mix(b_ ^ 0x94D049BB133111EBull)}; }

 private:
  static uint64_t Mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t a_ = 0x243F6A8885A308D3ull;
  uint64_t b_ = 0x13198A2E03707344ull;
};

// A one-lane 64-bit hash for hash tables whose hits are confirmed by comparison (one
// multiply per word; Hasher's two lanes and full mixing are for structural fingerprints).
class TableHasher {
 public:
  void Add(uint64_t x) {
    h_ ^= x;
    h_ = ((h_ << 23) | (h_ >> 41)) * 0x9E3779B97F4A7C15ull;
  }
  uint64_t Finish() const {
    uint64_t z = h_;
    z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
    return z ^ (z >> 29);
  }

 private:
  uint64_t h_ = 0x243F6A8885A308D3ull;
};

}  // namespace xg2
