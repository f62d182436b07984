// All rule DFAs of a grammar flattened into one global state space, trimmed to productive
// states, with the per-rule facts the Earley parser needs (start state, nullable).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "automata/rule_dfa.h"
#include "xg2/grammar.h"

namespace xg2 {

struct GrammarAutomaton {
  // Per global state.
  std::vector<RuleId> state_rule;
  std::vector<uint8_t> state_final;
  std::vector<uint8_t> state_used;  // reachable from the root and productive
  std::vector<int32_t> byte_edge_begin;  // CSR offsets, size num_states + 1
  std::vector<DfaByteEdge> byte_edges;   // targets are global states
  std::vector<int32_t> rule_edge_begin;  // CSR offsets, size num_states + 1
  // Bit (rule % 64) is set for every rule the state has an edge on: lets completion skip
  // items that wait on other rules without reading their edges.
  std::vector<uint64_t> awaited_rule_bits;
  std::vector<DfaRuleEdge> rule_edges;   // targets are global states
  // Per rule.
  std::vector<int32_t> rule_start;
  std::vector<uint8_t> rule_nullable;
  std::vector<std::string> rule_names;
  // Per rule Q: every state an item predicted for Q at row r leads to within row r (closure
  // under prediction and nullable advance; all such items have origin r), and every rule
  // predicted along the way. Predicting Q adds these in bulk.
  std::vector<std::vector<int32_t>> rule_prediction_states;
  std::vector<std::vector<RuleId>> rule_prediction_rules;
  // Per rule: the states its callers move to when it completes (over all used call sites).
  std::vector<std::vector<int32_t>> rule_follow_targets;
  RuleId root_rule = 0;

  int32_t num_states() const { return static_cast<int32_t>(state_rule.size()); }
  int32_t num_rules() const { return static_cast<int32_t>(rule_start.size()); }
  bool has_byte_edges(int32_t s) const { return byte_edge_begin[s + 1] > byte_edge_begin[s]; }
  bool has_rule_edges(int32_t s) const { return rule_edge_begin[s + 1] > rule_edge_begin[s]; }
  int32_t root_start() const { return rule_start[root_rule]; }
  // Approximate heap size in bytes.
  size_t MemoryBytes() const;
};

// Throws Error(kGrammarSemantic) when the root rule derives no finite string, and
// Error(kLimitExceeded) when an automaton exceeds the limits.
std::shared_ptr<const GrammarAutomaton> BuildGrammarAutomaton(
    const Grammar& g, const AutomatonLimits& limits = AutomatonLimits());

}  // namespace xg2
