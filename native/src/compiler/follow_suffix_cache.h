// A process-wide pool of finished suffix tries: a mask entry's uncertain suffixes pruned by
// what may follow its rule (TokenMaskCache::FinishEntry) depend only on the entry's core and
// on that follow language, so grammars that share both (the same tool inside different tool
// sets) reuse the pruning instead of re-parsing every suffix. Keyed by the tokenizer, the
// entry's key and the rule's follow fingerprint (ComputeFollowFingerprints); bounded in
// bytes, emptied when full.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "compiler/suffix_trie.h"
#include "support/cache_stats.h"
#include "support/hash.h"

namespace xg2 {

struct FinishedSuffixes {
  SuffixTrie trie;
  int32_t count = 0;
};

using FollowSuffixCacheStats = CacheStats;

class FollowSuffixCache {
 public:
  static FollowSuffixCache& Global();

  std::shared_ptr<const FinishedSuffixes> Find(uint64_t tokenizer, const Hash128& key);
  void Insert(uint64_t tokenizer, const Hash128& key, std::shared_ptr<const FinishedSuffixes> value);
  FollowSuffixCacheStats Stats() const;
  void SetLimit(int64_t bytes);  // 0 disables the pool
  void Clear();

 private:
  static Hash128 Combine(uint64_t tokenizer, const Hash128& key);

  mutable std::mutex mu_;
  std::unordered_map<Hash128, std::shared_ptr<const FinishedSuffixes>, Hash128Hasher> map_;
  FollowSuffixCacheStats stats_;
  int64_t limit_bytes_ = int64_t{96} << 20;  // cache_registry.h's default budget / 4
};

}  // namespace xg2
