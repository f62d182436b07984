// One facade over the process-wide caches that outlive a request: the cross-grammar mask
// pool, the rule-automaton cache, the pruned-suffix pool and the JSON Schema front end's
// key-exclusion and length-bounded pattern automata. They share one byte budget, split here
// (the bindings only bind): the mask pool gets the budget itself, the automata an eighth, the
// suffixes a quarter and the front end's two caches a sixteenth each, so together they hold at
// most 3/2 of it. Each counts what it holds (entries plus its own tables) and evicts beyond
// its share.
//
// The other long-lived holder of memory is each GrammarCompiler's compiled-grammar cache
// (GrammarCompiler::cache_limit_bytes, default kDefaultCompiledCacheBytes); see README.md
// "Memory" for the bound the defaults give a process that compiles distinct grammars forever.
#pragma once

#include <cstdint>

#include "support/cache_stats.h"

namespace xg2 {

struct CacheRegistryStats {
  CacheStats masks;          // CrossGrammarCache
  CacheStats automata;       // rule DFAs (CachedRuleDfa)
  CacheStats suffixes;       // FollowSuffixCache
  CacheStats key_exclusion;  // JSON Schema key-exclusion automata
  CacheStats patterns;       // JSON Schema length-bounded pattern automata
  // The JSON Schema formats' automata: one per format at most, no byte budget and not
  // emptied by Clear() (they depend on the format alone), so outside the totals below.
  CacheStats format_dfa;
  int64_t budget_bytes = 0;  // the budget the limits were split from
  int64_t total_bytes() const {
    return masks.bytes + automata.bytes + suffixes.bytes + key_exclusion.bytes + patterns.bytes;
  }
  int64_t total_limit_bytes() const {
    return masks.limit_bytes + automata.limit_bytes + suffixes.limit_bytes + key_exclusion.limit_bytes +
           patterns.limit_bytes;
  }
};

namespace cache_registry {

constexpr int64_t kDefaultBudgetBytes = int64_t{384} << 20;
constexpr int64_t kDefaultCompiledCacheBytes = int64_t{256} << 20;

// Splits `bytes` between the caches (see above); 0 disables them all. Error(kInvalidArgument)
// if negative.
void SetBudget(int64_t bytes);
int64_t Budget();
CacheRegistryStats Stats();
// Empties every cache (compiled grammars keep what they already use) and returns freed
// memory to the system.
void Clear();
// Returns the allocator's free memory to the system (glibc malloc_trim): freed cache entries
// otherwise stay in the process's arenas, so RSS would not fall when caches evict.
void ReleaseFreedMemory();
// Called (under any lock) with bytes some cache just dropped; MaybeReleaseFreedMemory (called
// with no lock held, after each compile) trims once 64 MiB have accumulated.
void NoteEvicted(int64_t bytes);
void MaybeReleaseFreedMemory();

}  // namespace cache_registry
}  // namespace xg2
