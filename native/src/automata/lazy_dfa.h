// A rule DFA with 256-entry transition rows built only for the states a walk
// reaches (few: a walk that leaves the broad states dies within a few bytes). A transition
// is a code: kDead, kUnresolved (not looked up yet) or (local << 2) | flags, so the walk's
// inner loop reads one word per trie node.
//
// Under a counted loop (ForLoop) a local state is a configuration (state of the iteration's
// rule, loop state before the iteration completes, whether the loop may end here): when the
// iteration's rule is plain (no rule edges, final states without byte edges, start not
// final) the loop is a DFA over these, and completing an iteration is forced and
// deterministic: the loop state advances (VirtualNext) and the next iteration starts.
#pragma once

#include <climits>
#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "automata/grammar_automaton.h"

namespace xg2 {

class LazyDfa {
 public:
  static constexpr int32_t kDead = -1;
  static constexpr int32_t kUnresolved = -2;
  static constexpr int32_t kFinal = 1;      // the rule (the loop, under a loop) may complete here
  static constexpr int32_t kRuleEdges = 2;  // the parser must take over here

  // loop_calls: states that call a loop of a plain rule continue as configurations
  // (LoopCall); else they have kRuleEdges like any state with rule edges.
  LazyDfa(const GrammarAutomaton& a, bool loop_calls) : a_(a), loop_calls_(loop_calls) {}
  // Loop mode, when the loop of `loop_state` repeats a plain rule; false otherwise.
  bool ForLoop(int32_t loop_state);
  bool loop_mode() const { return loop_mode_; }
  // Whether a code is a configuration of a loop called from the walk's rule (see LoopCall),
  // not one automaton state.
  bool IsLoopCall(int32_t code) const { return set_index_[code >> 2] >= 0; }
  // The code of a global state (in loop mode: of the state with the loop at loop_state,
  // completing it first if it is final), its row made on first use.
  int32_t Code(int32_t global, int32_t loop_state = 0);
  // The transition rows, 256 per state (valid until the next Resolve or Code).
  const int32_t* rows() const { return next_.data(); }
  const int32_t* Row(int32_t code) const { return next_.data() + 256 * static_cast<size_t>(code >> 2); }
  // Looks up an unresolved transition.
  int32_t Resolve(int32_t code, uint8_t byte);
  int32_t Step(int32_t code, uint8_t byte) {
    const int32_t t = Row(code)[byte];
    return t == kUnresolved ? Resolve(code, byte) : t;
  }
  int32_t Global(int32_t code) const { return global_[code >> 2]; }

 private:
  static constexpr int32_t kNoCall = INT32_MIN;

  // The start of a repeat's child if the child is plain (no rule edges, final states without
  // byte edges, start not final), else -1.
  int32_t PlainChildStart(const GrammarAutomaton::CountedRepeat& r) const;
  // Marks the bytes `state` has edges on as unresolved in the row starting at next_[row].
  void MarkEdges(size_t row, int32_t state);
  int32_t ResolveState(int32_t local, uint8_t byte);

  // Loop calls. A state whose only edge is a call of a counted loop of a plain rule (a long
  // maxLength or {m,n} inside a string, say) continues as a set of elements: the caller's
  // states (loop -1) and iterations in progress (iteration state or -1 when no further one
  // may start, loop state, the caller's state after the loop, at an iteration's start). An
  // iteration runs as in loop mode; where the loop may end, the caller's state after it joins
  // the set, so a loop followed by what an iteration could also read (x{0,61} [a-z]) stays a
  // DFA over sets. A caller's state with other rule edges makes the set kRuleEdges (the parser
  // takes over there). kNoCall for a state that is no such call.
  struct Element {
    int32_t state, loop, after, at_start;
    bool operator<(const Element& o) const {
      return std::tie(state, loop, after, at_start) < std::tie(o.state, o.loop, o.after, o.at_start);
    }
    bool operator==(const Element& o) const {
      return state == o.state && loop == o.loop && after == o.after && at_start == o.at_start;
    }
  };
  int32_t LoopCall(int32_t global);
  // The call a caller's state makes (exactly one rule edge, on a repeat of a plain rule), or
  // nullptr.
  const DfaRuleEdge* CallOf(int32_t global) const;
  // Adds a caller's state, entering the loop it calls; *parser if it has other rule edges.
  void AddCaller(int32_t global, std::vector<Element>* set, bool* parser);
  // The loop at loop_state, about to start an iteration (or to end, if it may).
  void AddIterationStart(int32_t loop_state, int32_t after, std::vector<Element>* set, bool* parser);
  int32_t ResolveSet(int32_t local, uint8_t byte);
  int32_t SetCode(std::vector<Element> set, bool parser);

  // Loop mode: the iteration just completed with the loop at loop_state.
  int32_t Completed(int32_t loop_state);
  // The code of (state or -1, loop state, may end), its row made on first use.
  int32_t Config(int32_t global, int32_t loop_state, int32_t may_end);

  const GrammarAutomaton& a_;
  const bool loop_calls_;
  bool loop_mode_ = false;
  int32_t loop_child_start_ = -1;
  std::unordered_map<uint64_t, int32_t> local_;
  std::vector<int32_t> next_;       // 256 codes per local state
  std::vector<int32_t> global_;     // per local: the rule state (-1: none, in loop mode)
  std::vector<int32_t> loop_;       // per local: the loop state (loop mode, loop calls)
  std::vector<int32_t> set_index_;  // per local: its loop-call set in sets_, else -1
  std::vector<std::vector<Element>> sets_;
  std::map<std::vector<int32_t>, int32_t> set_local_;
  std::vector<int32_t> callers_;  // the callers' states a set being made holds
  std::vector<int32_t> codes_;
};

}  // namespace xg2
