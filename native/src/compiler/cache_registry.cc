#include "compiler/cache_registry.h"

#include <atomic>
#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "automata/rule_dfa_cache.h"
#include "compiler/cross_grammar_cache.h"
#include "compiler/follow_suffix_cache.h"
#include "frontends/json_schema.h"
#include "xg2/errors.h"

namespace xg2::cache_registry {
namespace {

std::mutex g_mu;  // serialises SetBudget
std::atomic<int64_t> g_budget{kDefaultBudgetBytes};
std::atomic<int64_t> g_evicted_since_trim{0};
constexpr int64_t kTrimEvery = int64_t{64} << 20;

}  // namespace

void SetBudget(int64_t bytes) {
  if (bytes < 0) throw Error(ErrorKind::kInvalidArgument, "cache limit must be >= 0 bytes");
  std::lock_guard<std::mutex> lock(g_mu);
  g_budget = bytes;
  CrossGrammarCache::Global().SetLimit(bytes);
  SetRuleDfaCacheLimit(bytes / 8);
  FollowSuffixCache::Global().SetLimit(bytes / 4);
  SetKeyExclusionCacheLimit(bytes / 16);
  SetPatternAutomatonCacheLimit(bytes / 16);
  ReleaseFreedMemory();
}

int64_t Budget() { return g_budget.load(); }

CacheRegistryStats Stats() {
  CacheRegistryStats s;
  s.masks = CrossGrammarCache::Global().Stats();
  s.automata = GetRuleDfaCacheStats();
  s.suffixes = FollowSuffixCache::Global().Stats();
  s.key_exclusion = KeyExclusionCacheStats();
  s.patterns = PatternAutomatonCacheStats();
  s.format_dfa = FormatDfaCacheStats();
  s.budget_bytes = g_budget.load();
  return s;
}

void Clear() {
  CrossGrammarCache::Global().Clear();
  ClearRuleDfaCache();
  ClearKeyExclusionCache();
  ClearPatternAutomatonCache();
  FollowSuffixCache::Global().Clear();
  ReleaseFreedMemory();
}

void ReleaseFreedMemory() {
  g_evicted_since_trim = 0;
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void NoteEvicted(int64_t bytes) {
  if (bytes > 0) g_evicted_since_trim.fetch_add(bytes, std::memory_order_relaxed);
}

void MaybeReleaseFreedMemory() {
  if (g_evicted_since_trim.load(std::memory_order_relaxed) >= kTrimEvery) ReleaseFreedMemory();
}

}  // namespace xg2::cache_registry
