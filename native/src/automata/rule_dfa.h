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

// A contiguous run of edges (one state's).
template <typename Edge>
struct EdgeSpan {
  const Edge* first;
  const Edge* last;
  const Edge* begin() const { return first; }
  const Edge* end() const { return last; }
  size_t size() const { return static_cast<size_t>(last - first); }
  bool empty() const { return first == last; }
  const Edge& operator[](size_t i) const { return first[i]; }
};

// A DFA for one rule body, states numbered in breadth-first order from the start state 0.
// Edges are stored grouped by source state (CSR): a compile builds thousands of small rule
// automata, and a vector per state was most of its allocations. Builders append states in
// order: AddState for each state (it may be added before its edges), then the edges of the
// states in turn, each state's closed by CloseState.
struct RuleDfa {
  std::vector<uint8_t> is_final;
  std::vector<int32_t> byte_begin{0};  // closed states + 1 offsets into byte_list
  std::vector<DfaByteEdge> byte_list;  // per state sorted by lo, disjoint
  std::vector<int32_t> rule_begin{0};  // closed states + 1 offsets into rule_list
  std::vector<DfaRuleEdge> rule_list;  // per state sorted by rule, one edge per rule

  int32_t num_states() const { return static_cast<int32_t>(is_final.size()); }
  EdgeSpan<DfaByteEdge> byte_edges(int32_t s) const {
    return {byte_list.data() + byte_begin[s], byte_list.data() + byte_begin[s + 1]};
  }
  EdgeSpan<DfaRuleEdge> rule_edges(int32_t s) const {
    return {rule_list.data() + rule_begin[s], rule_list.data() + rule_begin[s + 1]};
  }
  int32_t AddState(bool final) {
    is_final.push_back(final ? 1 : 0);
    return num_states() - 1;
  }
  // An edge of the first state not yet closed; a range that continues the previous edge of
  // that state to the same target extends it.
  void AddByteEdge(uint8_t lo, uint8_t hi, int32_t target) {
    if (byte_list.size() > static_cast<size_t>(byte_begin.back())) {
      DfaByteEdge& prev = byte_list.back();
      if (prev.target == target && prev.hi + 1 == lo) {
        prev.hi = hi;
        return;
      }
    }
    // Field by field into place: a braced temporary was stored byte-wise and reloaded as one
    // word (a store-forwarding stall on every edge of every automaton built).
    DfaByteEdge& e = byte_list.emplace_back();
    e.lo = lo;
    e.hi = hi;
    e.target = target;
  }
  void AddRuleEdge(RuleId rule, int32_t target) { rule_list.push_back({rule, target}); }
  void CloseState() {
    byte_begin.push_back(static_cast<int32_t>(byte_list.size()));
    rule_begin.push_back(static_cast<int32_t>(rule_list.size()));
  }
};

// Limits on automaton construction (the caller reports them in typed errors).
struct AutomatonLimits {
  int64_t max_nfa_states = 4'000'000;
  int64_t max_dfa_states = 1'000'000;
  int64_t max_unrolled_repeat = 32;  // larger repetition bounds become counted loops
  // Counts of one counted loop; a larger bound is split into loops over blocks (see
  // grammar/repeat_lowering.h), so no bound exceeds the automaton's state ids.
  int64_t max_counted_span = int64_t{1} << 24;
  // Minimise each rule DFA. A lazily compiled grammar skips it: its masks are made per state
  // reached, so duplicate states cost little there, while minimising was a quarter of its
  // automaton time (every automaton is correct either way).
  bool minimize = true;
  // Compile time limit (time_point::max(): none); time_limit_s is its size, for messages.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  double time_limit_s = 0;
  // Throws Error(kLimitExceeded) naming the limit once the deadline has passed.
  void CheckDeadline() const;
};

// The automaton of a rule that nothing reaches: one non-final state without edges.
inline RuleDfa DeadRuleDfa() {
  RuleDfa d;
  d.AddState(false);
  d.CloseState();
  return d;
}

// Builds the DFA of expression `body` of grammar g, minimal if limits.minimize. Repeat nodes
// are expanded.
RuleDfa BuildRuleDfa(const Grammar& g, ExprId body, const AutomatonLimits& limits);

// The DFA of a body "prefix bytes, a ByteDfa, suffix bytes" (a string in a JSON Schema
// format: the quotes around the format's automaton) built by splicing, when no final state
// of the automaton has an edge on the suffix's first byte (else false: the general path).
// The automaton is already deterministic and minimal, so the Thompson NFA and subset
// construction only rebuilt it (the e-mail format's ~2,000 states: most of a compile's rule
// automaton time). States are numbered breadth first from the start, as the subset
// construction numbers them.
// BuildRuleDfa takes this path first.
bool SplicedByteDfa(const Grammar& g, ExprId body, RuleDfa* out);

// The DFA of `prefix` followed by `body` (two rule automata) built by merging the prefix's
// one final state with the body's start, when that is deterministic: the final state has no
// rule edge, the start is entered by no edge, and their byte edges are disjoint (else false).
// An any-order object's "separator, member" rule is its member's automaton behind the
// separator's, so this spares a second subset construction of every member. The states are
// the subset construction's (sets {final, start} and singletons), numbered breadth first as
// it numbers them, so the result equals BuildRuleDfa of the sequence without minimisation.
bool ConcatenatedRuleDfa(const RuleDfa& prefix, const RuleDfa& body, RuleDfa* out);

// The minimal DFA of `dfa` (partition refinement with a worklist), states renumbered in BFS
// order; unreachable states dropped.
RuleDfa MinimizeRuleDfa(const RuleDfa& dfa);

}  // namespace xg2
