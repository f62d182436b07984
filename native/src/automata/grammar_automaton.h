// All rule DFAs of a grammar flattened into one global state space, trimmed to productive
// states, with the per-rule facts the Earley parser needs (start state, nullable).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "automata/any_order_states.h"
#include "automata/rule_dfa.h"
#include "xg2/grammar.h"

namespace xg2 {

struct GrammarAutomaton {
  // Per global state.
  std::vector<RuleId> state_rule;
  std::vector<uint8_t> state_final;
  std::vector<uint8_t> state_used;       // reachable from the root and productive
  std::vector<int32_t> byte_edge_begin;  // CSR offsets, size num_states + 1
  std::vector<DfaByteEdge> byte_edges;   // targets are global states
  std::vector<int32_t> rule_edge_begin;  // CSR offsets, size num_states + 1
  // Bit (rule % 64) is set for every rule the state has an edge on: lets completion skip
  // items that wait on other rules without reading their edges.
  std::vector<uint64_t> awaited_rule_bits;
  // No rule edges (bit 0), and not final (bit 1): an item here needs no prediction, nor
  // completion, so a row made of one such item is complete as scanned (the parser's fast
  // path). A final one is also trivial as the parser's top item (it only marks CanEnd).
  std::vector<uint8_t> closure_trivial;
  std::vector<DfaRuleEdge> rule_edges;  // targets are global states
  // Per rule.
  std::vector<int32_t> rule_start;
  std::vector<uint8_t> rule_nullable;
  std::vector<std::string> rule_names;
  // Rule::max_tokens per rule (kNoTokenBudget: none); has_token_budgets: some rule has one.
  std::vector<int64_t> rule_max_tokens;
  bool has_token_budgets = false;
  // Rule::json_min_chars / json_max_chars per rule (-1: no maximum); has_char_budgets: some
  // rule has one (the parser then keeps each item's JSON decoder state and character count).
  std::vector<int32_t> rule_json_min_chars;
  std::vector<int32_t> rule_json_max_chars;
  bool has_char_budgets = false;
  bool HasCharBudget(RuleId r) const {
    return has_char_budgets && (rule_json_min_chars[r] > 0 || rule_json_max_chars[r] >= 0);
  }
  // Per state of such a rule: the first of its kNumDec entries (one per JSON decoder state) in
  // char_min_dist / char_max_dist, else -1. An entry holds the fewest / most characters that
  // may still start before the rule can end (automata/char_budget_dist.h: kCharDistNone, it
  // cannot end; kCharDistUnbounded, no most).
  std::vector<int32_t> state_char_dist;
  std::vector<int32_t> char_min_dist;
  std::vector<int32_t> char_max_dist;
  // Per rule: the largest char_min_dist of a node that can end (the room a token must leave),
  // and the smallest char_max_dist (kCharDistUnbounded: every node can grow without bound).
  std::vector<int32_t> rule_char_room;
  std::vector<int32_t> rule_char_least_growth;
  // Rule::capture per rule ("": none); has_captures: some rule captures (a capture or a
  // stop_capture name).
  std::vector<std::string> rule_capture;
  bool has_captures = false;
  // Rule::marker_split per rule, as automata (null body: the rule has none).
  struct MarkerSplitDfas {
    std::shared_ptr<const ByteDfaSpec> body;
    std::shared_ptr<const ByteDfaSpec> marker;
    bool hides_marker = false;
    bool whole_capture = false;  // captures see the whole text (MarkerSplit::whole_capture)
    std::string stop_capture;
  };
  std::vector<MarkerSplitDfas> rule_marker_split;
  // Some rule has both a token budget and a marker split: a budget that runs out closes such
  // an occurrence through its body alone, so the parser keeps the bytes each row read.
  bool has_budget_closes = false;
  // Rule::end_only per rule (captures keep such a rule's completions at the end only).
  std::vector<uint8_t> rule_end_only;
  // Rule::marker_before per rule (length 0: none).
  std::vector<MarkerBefore> rule_marker_before;
  // Every occurrence's completions must be on the chart (no Leo chains): budgets read the
  // occurrences, captures record their completions.
  bool needs_all_completions() const { return has_token_budgets || has_captures; }
  // Per rule Q: every state an item predicted for Q at row r leads to within row r (closure
  // under prediction and nullable advance; all such items have origin r), and every rule
  // predicted along the way. Predicting Q adds these in bulk.
  std::vector<std::vector<int32_t>> rule_prediction_states;
  std::vector<std::vector<RuleId>> rule_prediction_rules;
  // Per rule: the states its callers move to when it completes (over all used call sites).
  std::vector<std::vector<int32_t>> rule_follow_targets;
  RuleId root_rule = 0;
  // Some byte edge reads 0xFF, the lead of a special token's virtual string (see
  // VirtualTokenBytes): only then can a special token be accepted or allowed by a mask.
  bool scans_virtual_tokens = false;
  // Per state, where some state reads kMidTokenLead (a token-level free region a token may
  // enter mid-token, see MidTokenEntryBytes): a lower bound on the text bytes before such an
  // entry (automata/mid_token_distance.h); empty where no state reads it.
  std::vector<uint8_t> mid_token_distance;

  // Counted repetitions (see grammar/repeat_lowering.h). Their loop states are virtual ids at
  // and above num_states(): base + c is the loop after c completed iterations (0 <= c < span;
  // with no upper bound, counts saturate at min); base + span is the loop with an unknown
  // count that may continue and complete ("star"), base + span + 1 one that may continue but
  // not complete yet. Virtual states have no byte edges and one rule edge, on the child.
  struct CountedRepeat {
    RuleId rule;
    RuleId child;
    int64_t min;
    int64_t max;  // kUnbounded for no bound
    int32_t base;
    int32_t span;
    int32_t star() const { return base + span; }
    int32_t star_no_complete() const { return base + span + 1; }
  };
  std::vector<CountedRepeat> repeats;  // sorted by base
  // Any-order rules: virtual states at and above any_order->base(), after the loop states.
  // Shared and internally synchronised (states are made as parses meet them).
  std::shared_ptr<AnyOrderStates> any_order = std::make_shared<AnyOrderStates>();
  std::vector<int32_t> rule_repeat;   // per rule: index in repeats if it is a repeat rule, else -1
  std::vector<int32_t> child_repeat;  // per rule: index in repeats if it is a repeat's child, else -1

  int32_t num_states() const { return static_cast<int32_t>(state_rule.size()); }
  int32_t num_rules() const { return static_cast<int32_t>(rule_start.size()); }
  bool is_virtual(int32_t s) const { return s >= num_states(); }
  // A counted loop's state (virtual, below the any-order states).
  bool is_loop_state(int32_t s) const { return s >= num_states() && !any_order->Contains(s); }
  bool has_byte_edges(int32_t s) const { return !is_virtual(s) && byte_edge_begin[s + 1] > byte_edge_begin[s]; }
  const CountedRepeat& RepeatOf(int32_t virtual_state) const;
  // The target of a real state's byte edge on `byte`, or -1 (edges are sorted and disjoint).
  // Adds the bytes state s has edges on to a 256-bit set (four 64-bit words), a word at a time.
  void AddByteEdges(int32_t s, uint64_t set[4]) const {
    for (int32_t k = byte_edge_begin[s]; k < byte_edge_begin[s + 1]; ++k) {
      const int lo = byte_edges[k].lo, hi = byte_edges[k].hi;
      for (int w = lo >> 6; w <= hi >> 6; ++w) {
        const int a = std::max(lo, w << 6) & 63, b = std::min(hi, (w << 6) | 63) & 63;
        set[w] |= (b - a == 63 ? ~uint64_t{0} : ((uint64_t{1} << (b - a + 1)) - 1)) << a;
      }
    }
  }
  int32_t ByteTarget(int32_t state, uint8_t byte) const {
    for (int32_t k = byte_edge_begin[state]; k < byte_edge_begin[state + 1]; ++k) {
      const DfaByteEdge& e = byte_edges[k];
      if (byte < e.lo) return -1;
      if (byte <= e.hi) return e.target;
    }
    return -1;
  }
  bool IsFinal(int32_t s) const {
    if (!is_virtual(s)) return state_final[s] != 0;
    return any_order->Contains(s) ? any_order->IsFinal(s) : VirtualIsFinal(s);
  }
  RuleId RuleOf(int32_t s) const {
    if (!is_virtual(s)) return state_rule[s];
    return any_order->Contains(s) ? any_order->NodeOf(s).rule : RepeatOf(s).rule;
  }
  uint64_t AwaitedBits(int32_t s) const {
    if (!is_virtual(s)) return awaited_rule_bits[s];
    if (any_order->Contains(s)) return any_order->NodeOf(s).awaited_bits;
    int32_t t = VirtualNext(s);
    return t < 0 ? 0 : 1ull << (RepeatOf(s).child & 63);
  }
  // Calls fn(rule, target) for each rule edge of state s. An any-order state's edges pass
  // target -1: their members are never nullable, so only completion (RuleEdgeTarget) needs
  // the target, and making it for every member would fill the state table with sets no
  // parse reaches.
  template <class Fn>
  void ForEachRuleEdge(int32_t s, Fn&& fn) const {
    if (!is_virtual(s)) {
      for (int32_t k = rule_edge_begin[s]; k < rule_edge_begin[s + 1]; ++k) {
        fn(rule_edges[k].rule, rule_edges[k].target);
      }
      return;
    }
    if (any_order->Contains(s)) {
      any_order->ForEachNext(s, [&](RuleId rule) { fn(rule, -1); });
      return;
    }
    int32_t t = VirtualNext(s);
    if (t >= 0) fn(RepeatOf(s).child, t);
  }
  // The target of a state's edge on `rule`, or -1.
  int32_t RuleEdgeTarget(int32_t s, RuleId rule) const {
    if (is_virtual(s)) {
      if (any_order->Contains(s)) return any_order->Next(s, rule);
      const CountedRepeat& r = RepeatOf(s);
      return r.child == rule ? VirtualNext(s) : -1;
    }
    for (int32_t k = rule_edge_begin[s]; k < rule_edge_begin[s + 1]; ++k) {
      if (rule_edges[k].rule == rule) return rule_edges[k].target;
    }
    return -1;
  }
  bool VirtualIsFinal(int32_t s) const;
  int32_t VirtualNext(int32_t s) const;  // after one more iteration; -1 if none may follow
  int32_t root_start() const { return rule_start[root_rule]; }
  // Approximate heap size in bytes.
  size_t MemoryBytes() const;
};

// Repetitions with a bound above limits.max_unrolled_repeat (and a child that cannot be
// empty) become counted loops; smaller ones are unrolled into the rule DFAs.
// Throws Error(kGrammarSemantic) when the root rule derives no finite string, and
// Error(kLimitExceeded) when an automaton exceeds the limits.
std::shared_ptr<const GrammarAutomaton> BuildGrammarAutomaton(const Grammar& g,
                                                              const AutomatonLimits& limits = AutomatonLimits());

}  // namespace xg2
