// A process-wide cache of rule DFAs keyed by the structure of the rule body, so grammars that
// share rules (the same property value shapes, string formats, tool schemas) build each
// automaton once. Rule references are keyed by slot (order of first appearance in the body),
// so a cached DFA serves any rule of that shape whatever its callees are called.
#pragma once

#include <cstddef>

#include "automata/rule_dfa.h"
#include "support/cache_stats.h"
#include "xg2/grammar.h"

namespace xg2 {

// BuildRuleDfa(g, body, limits), through the cache. Thread-safe.
RuleDfa CachedRuleDfa(const Grammar& g, ExprId body, const AutomatonLimits& limits);

using RuleDfaCacheStats = CacheStats;
RuleDfaCacheStats GetRuleDfaCacheStats();
void ClearRuleDfaCache();
// Byte budget (least recently used automata are dropped beyond it); 0 disables the cache.
void SetRuleDfaCacheLimit(int64_t bytes);

}  // namespace xg2
