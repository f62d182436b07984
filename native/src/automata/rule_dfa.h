// Per-rule byte automata. Each rule body becomes a minimal DFA whose edges are byte ranges or
// references to other rules; the Earley parser runs over these.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "xg2/grammar.h"

namespace xg2 {

struct DfaByteEdge {
  uint8_t lo;
  uint8_t hi;
  int32_t target;
};

struct DfaRuleEdge {
  RuleId rule;
  int32_t target;
};

// A DFA for one rule body, states numbered in breadth-first order from the start state 0.
struct RuleDfa {
  std::vector<uint8_t> is_final;
  std::vector<std::vector<DfaByteEdge>> byte_edges;  // sorted by lo, disjoint
  std::vector<std::vector<DfaRuleEdge>> rule_edges;  // sorted by rule, one edge per rule
  int32_t num_states() const { return static_cast<int32_t>(is_final.size()); }
};

// Limits on automaton construction (the caller reports them in typed errors).
struct AutomatonLimits {
  int64_t max_nfa_states = 4'000'000;
  int64_t max_dfa_states = 1'000'000;
  int64_t max_unrolled_repeat = 32;  // larger repetition bounds become counted loops
  // Compile time limit (time_point::max(): none); time_limit_s is its size, for messages.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  double time_limit_s = 0;
  // Throws Error(kLimitExceeded) naming the limit once the deadline has passed.
  void CheckDeadline() const;
};

// The automaton of a rule that nothing reaches: one non-final state without edges.
inline RuleDfa DeadRuleDfa() {
  RuleDfa d;
  d.is_final.assign(1, 0);
  d.byte_edges.resize(1);
  d.rule_edges.resize(1);
  return d;
}

// Builds the minimal DFA of expression `body` of grammar g. Repeat nodes are expanded.
RuleDfa BuildRuleDfa(const Grammar& g, ExprId body, const AutomatonLimits& limits);

// The minimal DFA of `dfa` (Moore refinement), states renumbered in BFS order; unreachable
// states dropped. Quadratic on long chains: callers bound the size they pass.
RuleDfa MinimizeRuleDfa(const RuleDfa& dfa);

}  // namespace xg2
