// The process-wide, thread-safe, memory-bounded pool of mask-cache cores shared by every
// compiled grammar of a tokenizer: grammars that share sub-structures (the same string field,
// the same tool) reuse the expensive vocabulary walks. Least recently used cores are evicted
// beyond the byte limit (a compiled grammar keeps the cores it uses alive).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/mask_core.h"
#include "compiler/structural_hash.h"
#include "support/cache_stats.h"

namespace xg2 {

// The cores of one rule's states by state offset (null where a state has none), pooled
// under the rule's structural hash once every used scannable state of the rule is built, so
// a compile that meets a rule already seen takes all of its cores with one lookup.
struct RuleCores {
  std::vector<std::shared_ptr<const MaskCore>> cores;
};

// bytes counts the cores, the slot table and the rule bundles.
using CrossGrammarCacheStats = CacheStats;

class CrossGrammarCache {
 public:
  static CrossGrammarCache& Global();

  std::shared_ptr<const MaskCore> Find(uint64_t tokenizer, const Hash128& key);
  // Keeps an existing core for the key (returned) or stores this one.
  std::shared_ptr<const MaskCore> Insert(uint64_t tokenizer, const Hash128& key, std::shared_ptr<const MaskCore> core);
  // A rule's cores (see RuleCores); a served bundle counts one hit per core it holds.
  std::shared_ptr<const RuleCores> FindRule(uint64_t tokenizer, const Hash128& rule_hash);
  void InsertRule(uint64_t tokenizer, const Hash128& rule_hash, std::shared_ptr<const RuleCores> cores);
  CrossGrammarCacheStats Stats() const;
  void SetLimit(int64_t bytes);  // 0 disables the cache
  void Clear();

 private:
  // Open addressing over (tokenizer, key); recency is a use counter per slot, not a list:
  // a hit writes one slot instead of splicing list nodes (lookups are per state of every
  // compiled grammar, and list and bucket nodes were a cache miss each).
  struct Slot {
    uint64_t tokenizer = 0;
    Hash128 key;
    std::shared_ptr<const MaskCore> core;  // null: empty slot
    int64_t bytes = 0;
    uint64_t last_used = 0;
  };
  size_t Probe(uint64_t tokenizer, const Hash128& key) const;  // the slot of key, or the empty one to fill
  void Rebuild(size_t capacity);
  void EvictLocked();
  int64_t TableBytesLocked() const;              // slot table and rule bundles
  static size_t TableCapacity(int64_t entries);  // the slots a table of that many entries has

  struct RuleKeyHash {
    size_t operator()(const std::pair<uint64_t, Hash128>& k) const {
      return static_cast<size_t>(k.second.lo ^ (k.first * 0x9E3779B97F4A7C15ull));
    }
  };

  mutable std::mutex mu_;
  std::vector<Slot> slots_;  // size a power of two (or 0)
  // Bundles hold their cores alive: any eviction drops them all, so evicted cores are not
  // kept past the limit.
  std::unordered_map<std::pair<uint64_t, Hash128>, std::shared_ptr<const RuleCores>, RuleKeyHash> rules_;
  uint64_t clock_ = 0;
  int64_t rule_bytes_ = 0;        // the bundles' vectors and map nodes
  CrossGrammarCacheStats stats_;  // stats_.bytes: the cores only (Stats() adds the tables)
};

}  // namespace xg2
