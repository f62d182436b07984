// The tokens a compiled grammar reads by id from a set of lead-reading automaton states
// (GrammarMatcher::AddTokensById), shared by all its matchers.
//
// Where reading a token's id only scans, the ids a row takes depend on those states alone, so
// every request that enters the same token-level region (Gemma 4's reasoning, say) reuses the
// first one's result instead of walking 262,144 ids again. Thread-safe; bounded in entries and
// bytes, least recently used results evicted first; counted in CompiledGrammar::MemoryBytes
// and reported by Stats (the compiled grammar's mask_cache_stats).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "support/cache_stats.h"

namespace xg2 {

// The ids read by id from a set of states: one bit per token id (of num_tokens), as in a
// bitmask row, and the words not all ones where there are few, so a fill that adds these bits
// knows which words of its row can still lack a token without reading the whole row.
struct ByIdTokens {
  static constexpr size_t kMaxOpenWords = 64;
  ByIdTokens(std::vector<uint32_t> bits, int32_t num_tokens);
  std::vector<uint32_t> bits;
  std::vector<int32_t> open_words;  // ascending; empty when many_open
  bool many_open = false;
  size_t MemoryBytes() const { return bits.size() * sizeof(uint32_t) + open_words.size() * sizeof(int32_t); }
};

class ByIdTokenCache {
 public:
  using Words = std::shared_ptr<const ByIdTokens>;

  // The result kept for `states` (sorted, unique), or null.
  Words Find(const std::vector<int32_t>& states);
  // Keeps `words` for `states`, evicting the least recently used results beyond the bounds.
  void Insert(const std::vector<int32_t>& states, Words words);
  CacheStats Stats() const;
  size_t MemoryBytes() const;

 private:
  static constexpr size_t kMaxEntries = 64;
  static constexpr size_t kMaxBytes = size_t{8} << 20;
  struct Entry {
    Words words;
    size_t bytes;
    uint64_t last_use;
  };

  mutable std::mutex mu_;
  std::map<std::vector<int32_t>, Entry> entries_;
  size_t bytes_ = 0;
  uint64_t clock_ = 0;
  CacheStats stats_;
};

}  // namespace xg2
