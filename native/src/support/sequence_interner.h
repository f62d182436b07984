// Interning of int sequences by content in one flat pool (no allocation per sequence).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace xg2 {

// Sets of ints in one flat pool, found again by content through an open-addressing table.
// Used for the NFA state sets of the subset construction, the state signatures of the
// minimisation and the state tuples of DFA products: all intern many short sequences, and a
// map keyed by std::vector would allocate for every probe.
class SequenceInterner {
 public:
  // Empties the set, keeping room for `expected` sequences without rehashing.
  void Clear(size_t expected = 32) {
    pool_.clear();
    begin_.assign(1, 0);
    size_t capacity = 64;
    while (capacity < 2 * expected) capacity *= 2;
    table_.assign(capacity, -1);
  }
  int32_t size() const { return static_cast<int32_t>(begin_.size() - 1); }
  size_t RetainedBytes() const { return (pool_.capacity() + begin_.capacity() + table_.capacity()) * sizeof(int32_t); }
  const int32_t* data(int32_t id) const { return pool_.data() + begin_[id]; }
  int32_t length(int32_t id) const { return begin_[id + 1] - begin_[id]; }

  // The id of `seq` (ids count up from 0 in order of first appearance); *inserted tells
  // whether it is new.
  int32_t Intern(const std::vector<int32_t>& seq, bool* inserted) {
    const uint64_t h = HashOf(seq);
    const int32_t found = Probe(seq, h);
    if (found >= 0) {
      *inserted = false;
      return found;
    }
    const int32_t id = size();
    pool_.insert(pool_.end(), seq.begin(), seq.end());
    begin_.push_back(static_cast<int32_t>(pool_.size()));
    if (2 * static_cast<size_t>(size()) > table_.size()) {
      Rehash(table_.size() * 2);
    } else {
      Place(id, h);
    }
    *inserted = true;
    return id;
  }

  // The id of `seq`, or -1 if it was never interned.
  int32_t Find(const std::vector<int32_t>& seq) const { return Probe(seq, HashOf(seq)); }

 private:
  int32_t Probe(const std::vector<int32_t>& seq, uint64_t h) const {
    const size_t mask = table_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const int32_t id = table_[i];
      if (id < 0) return -1;
      if (length(id) == static_cast<int32_t>(seq.size()) && std::equal(seq.begin(), seq.end(), data(id))) return id;
    }
  }
  // Two independent 64-bit lanes of two elements each: signatures and subsets run to hundreds
  // of elements, and a one-element-per-multiply chain was most of minimization's time.
  static uint64_t HashOf(const int32_t* p, size_t n) {
    constexpr uint64_t kMul0 = 0xFF51AFD7ED558CCDull, kMul1 = 0xC4CEB9FE1A85EC53ull;
    uint64_t h0 = 0x9E3779B97F4A7C15ull ^ n, h1 = 0xD6E8FEB86659FD93ull;
    auto word = [p](size_t i) {
      return static_cast<uint64_t>(static_cast<uint32_t>(p[i])) |
             (static_cast<uint64_t>(static_cast<uint32_t>(p[i + 1])) << 32);
    };
    auto rotl = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
      h0 = rotl((h0 ^ word(i)) * kMul0, 29);
      h1 = rotl((h1 ^ word(i + 2)) * kMul1, 31);
    }
    for (; i < n; ++i) h0 = rotl((h0 ^ static_cast<uint32_t>(p[i])) * kMul0, 29);
    uint64_t h = (h0 ^ rotl(h1, 17)) * kMul1;
    return h ^ (h >> 32);
  }
  static uint64_t HashOf(const std::vector<int32_t>& v) { return HashOf(v.data(), v.size()); }
  void Place(int32_t id, uint64_t h) {
    size_t mask = table_.size() - 1;
    size_t i = h & mask;
    while (table_[i] >= 0) i = (i + 1) & mask;
    table_[i] = id;
  }
  void Rehash(size_t capacity) {
    table_.assign(capacity, -1);
    for (int32_t id = 0; id < size(); ++id) Place(id, HashOf(data(id), static_cast<size_t>(length(id))));
  }

  std::vector<int32_t> pool_;
  std::vector<int32_t> begin_{0};
  std::vector<int32_t> table_ = std::vector<int32_t>(64, -1);
};

}  // namespace xg2
