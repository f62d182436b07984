// The tokens a compiled grammar reads by id from a set of lead-reading automaton states
// (GrammarMatcher::AddTokensById), shared by all its matchers.
//
// Where reading a token's id only scans, the ids a row takes depend on those states alone, so
// every request that enters the same token-level region (Gemma 4's reasoning, say) reuses the
// first one's result instead of walking 262,144 ids again. Thread-safe; bounded in entries and
// bytes (the first results are kept, later rows compute their own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace xg2 {

class ByIdTokenCache {
 public:
  // One bit per token id, as in a bitmask row.
  using Words = std::shared_ptr<const std::vector<uint32_t>>;

  // The result kept for `states` (sorted, unique), or null.
  Words Find(const std::vector<int32_t>& states) const;
  // Keeps `words` for `states` unless the cache is full.
  void Insert(const std::vector<int32_t>& states, Words words);
  size_t MemoryBytes() const;

 private:
  static constexpr size_t kMaxEntries = 64;
  static constexpr size_t kMaxBytes = size_t{8} << 20;

  mutable std::mutex mu_;
  std::map<std::vector<int32_t>, Words> entries_;
  size_t bytes_ = 0;
};

}  // namespace xg2
