#include "compiler/vocab_walk.h"

#include <algorithm>
#include <array>
#include <climits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "parser/earley_parser.h"

namespace xg2 {

namespace {

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
  bool ForLoop(int32_t loop_state) {
    const int32_t start = PlainChildStart(a_.RepeatOf(loop_state));
    if (start < 0) return false;
    loop_child_start_ = start;
    loop_mode_ = true;
    return true;
  }
  bool loop_mode() const { return loop_mode_; }
  // Whether a code is a configuration of a loop called from the walk's rule (see LoopCall),
  // not one automaton state.
  bool IsLoopCall(int32_t code) const { return set_index_[code >> 2] >= 0; }
  // The code of a global state (in loop mode: of the state with the loop at loop_state,
  // completing it first if it is final), its row made on first use.
  int32_t Code(int32_t global, int32_t loop_state = 0) {
    if (loop_mode_ && a_.state_final[global]) return Completed(loop_state);
    if (!loop_mode_ && loop_calls_) {
      const int32_t call = LoopCall(global);
      if (call != kNoCall) return call;
    }
    return Config(global, loop_state, 0);
  }
  // The transition rows, 256 per state (valid until the next Resolve or Code).
  const int32_t* rows() const { return next_.data(); }
  const int32_t* Row(int32_t code) const { return next_.data() + 256 * static_cast<size_t>(code >> 2); }
  // Looks up an unresolved transition.
  int32_t Resolve(int32_t code, uint8_t byte) {
    const int32_t local = code >> 2;
    const int32_t t = set_index_[local] >= 0 ? ResolveSet(local, byte) : ResolveState(local, byte);
    next_[256 * static_cast<size_t>(local) + byte] = t;
    return t;
  }
  int32_t Step(int32_t code, uint8_t byte) {
    const int32_t t = Row(code)[byte];
    return t == kUnresolved ? Resolve(code, byte) : t;
  }
  int32_t Global(int32_t code) const { return global_[code >> 2]; }

 private:
  static constexpr int32_t kNoCall = INT32_MIN;

  // The start of a repeat's child if the child is plain (no rule edges, final states without
  // byte edges, start not final), else -1.
  int32_t PlainChildStart(const GrammarAutomaton::CountedRepeat& r) const {
    const int32_t start = a_.rule_start[r.child];
    if (a_.state_final[start]) return -1;
    for (int32_t s = start; s < a_.num_states() && a_.state_rule[s] == r.child; ++s) {
      if (a_.rule_edge_begin[s + 1] > a_.rule_edge_begin[s]) return -1;
      if (a_.state_final[s] && a_.byte_edge_begin[s + 1] > a_.byte_edge_begin[s]) return -1;
    }
    return start;
  }
  // Marks the bytes `state` has edges on as unresolved in the row starting at next_[row].
  void MarkEdges(size_t row, int32_t state) {
    for (int32_t k = a_.byte_edge_begin[state]; k < a_.byte_edge_begin[state + 1]; ++k) {
      for (int c = a_.byte_edges[k].lo; c <= a_.byte_edges[k].hi; ++c) next_[row + c] = kUnresolved;
    }
  }
  int32_t ResolveState(int32_t local, uint8_t byte) {
    const int32_t target = a_.ByteTarget(global_[local], byte);
    return target < 0 ? kDead : Code(target, loop_[local]);
  }

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
  int32_t LoopCall(int32_t global) {
    if (CallOf(global) == nullptr) return kNoCall;
    std::vector<Element> set;
    bool parser = false;
    callers_.clear();
    AddCaller(global, &set, &parser);
    return SetCode(std::move(set), parser);
  }
  // The call a caller's state makes (exactly one rule edge, on a repeat of a plain rule), or
  // nullptr.
  const DfaRuleEdge* CallOf(int32_t global) const {
    if (a_.rule_edge_begin[global + 1] - a_.rule_edge_begin[global] != 1) return nullptr;
    const DfaRuleEdge& call = a_.rule_edges[a_.rule_edge_begin[global]];
    const int32_t rep = a_.rule_repeat[call.rule];
    if (rep < 0 || PlainChildStart(a_.repeats[rep]) < 0) return nullptr;
    return &call;
  }
  // Adds a caller's state, entering the loop it calls; *parser if it has other rule edges.
  void AddCaller(int32_t global, std::vector<Element>* set, bool* parser) {
    // Once per set: a loop that may end right away can lead back to its own caller ((x{0,40})*).
    if (std::find(callers_.begin(), callers_.end(), global) != callers_.end()) return;
    callers_.push_back(global);
    if (a_.rule_edge_begin[global + 1] == a_.rule_edge_begin[global]) {
      set->push_back({global, -1, -1, 0});
      return;
    }
    const DfaRuleEdge* call = CallOf(global);
    if (call == nullptr) {
      *parser = true;
      return;
    }
    // Its own byte edges (and final flag) stay with it.
    if (a_.state_final[global] || a_.byte_edge_begin[global + 1] > a_.byte_edge_begin[global]) {
      set->push_back({global, -1, -1, 0});
    }
    const auto& r = a_.repeats[a_.rule_repeat[call->rule]];
    AddIterationStart(r.base, call->target, set, parser);
  }
  // The loop at loop_state, about to start an iteration (or to end, if it may).
  void AddIterationStart(int32_t loop_state, int32_t after, std::vector<Element>* set, bool* parser) {
    const auto& r = a_.RepeatOf(loop_state);
    const int32_t first = a_.VirtualNext(loop_state) >= 0 ? a_.rule_start[r.child] : -1;
    set->push_back({first, loop_state, after, 1});
    if (a_.VirtualIsFinal(loop_state)) AddCaller(after, set, parser);
  }
  int32_t ResolveSet(int32_t local, uint8_t byte) {
    std::vector<Element> next;
    bool parser = false;
    callers_.clear();
    for (const Element& e : sets_[set_index_[local]]) {
      if (e.state < 0) continue;
      const int32_t t = a_.ByteTarget(e.state, byte);
      if (t < 0) continue;
      if (e.loop < 0) {
        AddCaller(t, &next, &parser);
      } else if (!a_.state_final[t]) {
        next.push_back({t, e.loop, e.after, 0});
      } else {  // the iteration completes
        const int32_t after_iteration = a_.VirtualNext(e.loop);
        if (after_iteration >= 0) AddIterationStart(after_iteration, e.after, &next, &parser);
      }
    }
    if (next.empty() && !parser) return kDead;
    return SetCode(std::move(next), parser);
  }
  int32_t SetCode(std::vector<Element> set, bool parser) {
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    // A set of one caller's state without rule edges is that state.
    if (!parser && set.size() == 1 && set[0].loop < 0) return Config(set[0].state, 0, 0);
    std::vector<int32_t> key;
    key.reserve(4 * set.size() + 1);
    key.push_back(parser ? 1 : 0);
    for (const Element& e : set) key.insert(key.end(), {e.state, e.loop, e.after, e.at_start});
    auto [it, inserted] = set_local_.emplace(std::move(key), static_cast<int32_t>(global_.size()));
    if (inserted) {
      const size_t row = next_.size();
      next_.resize(row + 256, kDead);
      int32_t flags = parser ? kRuleEdges : 0;
      for (const Element& e : set) {
        if (e.state < 0) continue;
        if (e.loop < 0 && a_.state_final[e.state]) flags |= kFinal;
        MarkEdges(row, e.state);
      }
      global_.push_back(-1);
      loop_.push_back(0);
      set_index_.push_back(static_cast<int32_t>(sets_.size()));
      sets_.push_back(std::move(set));
      codes_.push_back((it->second << 2) | flags);
    }
    return codes_[it->second];
  }

  // Loop mode: the iteration just completed with the loop at loop_state.
  int32_t Completed(int32_t loop_state) {
    const int32_t after = a_.VirtualNext(loop_state);
    if (after < 0) return Config(-1, loop_state, 0);  // the loop allowed no such iteration
    const int32_t may_end = a_.VirtualIsFinal(after) ? 1 : 0;
    // No further iteration: a state with no byte edges (alive, but only as an ending).
    const int32_t next = a_.VirtualNext(after) >= 0 ? loop_child_start_ : -1;
    return Config(next, after, may_end);
  }
  // The code of (state or -1, loop state, may end), its row made on first use.
  int32_t Config(int32_t global, int32_t loop_state, int32_t may_end) {
    const uint64_t key = loop_mode_ ? (static_cast<uint64_t>(static_cast<uint32_t>(global + 1)) << 33) |
                                          (static_cast<uint64_t>(static_cast<uint32_t>(loop_state)) << 1) |
                                          static_cast<uint64_t>(may_end)
                                    : static_cast<uint64_t>(static_cast<uint32_t>(global));
    auto [it, inserted] = local_.emplace(key, static_cast<int32_t>(global_.size()));
    if (inserted) {
      const size_t row = next_.size();
      next_.resize(row + 256, kDead);
      int32_t flags = 0;
      if (global >= 0) {
        MarkEdges(row, global);
        if (!loop_mode_) {
          if (a_.state_final[global]) flags |= kFinal;
          if (a_.rule_edge_begin[global + 1] > a_.rule_edge_begin[global]) flags |= kRuleEdges;
        }
      }
      if (may_end) flags |= kFinal;
      global_.push_back(global);
      loop_.push_back(loop_state);
      set_index_.push_back(-1);
      codes_.push_back((it->second << 2) | flags);
    }
    return codes_[it->second];
  }

  const GrammarAutomaton& a_;
  const bool loop_calls_;
  bool loop_mode_ = false;
  int32_t loop_child_start_ = -1;
  std::unordered_map<uint64_t, int32_t> local_;
  std::vector<int32_t> next_;  // 256 codes per local state
  std::vector<int32_t> global_;  // per local: the rule state (-1: none, in loop mode)
  std::vector<int32_t> loop_;    // per local: the loop state (loop mode, loop calls)
  std::vector<int32_t> set_index_;  // per local: its loop-call set in sets_, else -1
  std::vector<std::vector<Element>> sets_;
  std::map<std::vector<int32_t>, int32_t> set_local_;
  std::vector<int32_t> callers_;  // the callers' states a set being made holds
  std::vector<int32_t> codes_;
};

// The vocabulary walk of one state over the token trie. Along the current path it keeps the
// depths (>= 1) after which the rule may complete; a subtree that dies below such a depth is
// recorded as dead with them (its tokens can only pass through that completion). A
// completion before the token (k = 0) needs nothing: the matcher's row already holds the
// callers' continuations, whose entries cover it.
//
// While the path stays in states without rule edges the Earley row is the one top item, so a
// DFA step replaces the parser (most of a broad state's walk). At a state with rule edges the
// parser takes over for that subtree, replaying the path's bytes once.
class VocabWalker {
 public:
  // Out of line: inlined, its by-reference arguments would keep the walk's run in memory.
  [[gnu::noinline]] static void AcceptRun(TrieWalkResult* out, int32_t begin, int32_t end) { out->Accept(begin, end); }

  // fast_paths: a counted loop of a plain rule is walked as a DFA (from inside it or from a
  // state that calls it), and so are the parser's lexical stretches (else by the parser, node
  // by node: the reference for tests).
  VocabWalker(const std::shared_ptr<const GrammarAutomaton>& automaton, const TokenTrie& trie, int32_t state,
              int32_t loop_state, bool fast_paths)
      : automaton_(automaton),
        trie_(trie),
        state_(state),
        loop_state_(loop_state),
        fast_paths_(fast_paths),
        dfa_(*automaton, fast_paths) {
    const size_t depth = static_cast<size_t>(trie.max_token_bytes) + 2;
    code_.assign(depth, LazyDfa::kDead);
    row_code_.assign(depth, kParserRow);
    has_row_.assign(depth, 0);
    path_.assign(depth, 0);
    ends_.assign(depth, 0);
  }

  // The code of the state a walk starts in, or -1 if the parser walks from the start (the
  // state has rule edges, or runs under a loop context).
  int32_t StartCode() {
    const GrammarAutomaton& a = *automaton_;
    if (loop_state_ >= 0) {
      if (!fast_paths_ || !dfa_.ForLoop(loop_state_)) return -1;
      return dfa_.Code(state_, loop_state_);
    }
    if (a.rule_edge_begin[state_ + 1] > a.rule_edge_begin[state_]) return -1;
    return dfa_.Code(state_);
  }
  // The walk runs a counted loop as a DFA (LazyDfa::ForLoop).
  bool loop_mode() const { return dfa_.loop_mode(); }
  LazyDfa& dfa() { return dfa_; }

  // The most characters k such that the automaton stays alive from `state` (a character
  // boundary) on every text string (tokenizer/text_slice.h) of up to k characters, at most
  // kTextCharsCap - 1; kTextCharsCap if it does on all text. Every text token of at most k
  // characters is then accepted (none lies in a dead subtree), so WalkDfa may take a subtree
  // whose tokens are all such text whole. A breadth-first search over the states text reaches
  // at character boundaries, by the number of characters first reaching them: a string body
  // reaches one or two, a bounded one (maxLength unrolled) one per length, and a state that
  // rejects some text character fails at once.
  // reached (optional) gets the boundary states the search met (when the bound is
  // kTextCharsCap, it holds for each of them as well).
  int32_t TextBound(int32_t state, std::vector<int32_t>* reached = nullptr) {
    const GrammarAutomaton& a = *automaton_;
    std::vector<uint8_t> seen(static_cast<size_t>(a.num_states()), 0);
    std::vector<int32_t> level{state}, next;
    seen[state] = 1;
    // One character from (s, text state): every byte range text allows must be covered by
    // byte edges of s (DFA edges do not overlap, so covered bytes add up).
    auto expand = [&](auto&& self, int32_t s, int32_t text) -> bool {
      const TextRanges ranges = TextRangesFrom(text);
      for (const TextRange* r = ranges.begin; r != ranges.end; ++r) {
        int32_t covered = 0;
        for (int32_t k = a.byte_edge_begin[s]; k < a.byte_edge_begin[s + 1]; ++k) {
          const DfaByteEdge& e = a.byte_edges[k];
          const int32_t lo = std::max<int32_t>(e.lo, r->lo), hi = std::min<int32_t>(e.hi, r->hi);
          if (lo > hi) continue;
          covered += hi - lo + 1;
          if (r->next != 0) {
            if (!self(self, e.target, r->next)) return false;
          } else if (!seen[e.target]) {
            seen[e.target] = 1;
            next.push_back(e.target);
          }
        }
        if (covered != r->hi - r->lo + 1) return false;
      }
      return true;
    };
    for (int32_t chars = 0; !level.empty(); ++chars) {
      if (chars >= kTextCharsCap - 1) return kTextCharsCap - 1;
      for (int32_t s : level) {
        if (!expand(expand, s, 0)) return chars;
      }
      if (reached != nullptr) reached->insert(reached->end(), level.begin(), level.end());
      level.swap(next);
      next.clear();
    }
    return kTextCharsCap;
  }

  // Whether, from `state`, text of more than k characters always dies (after text of up to k
  // characters, which TextBound(state) = k keeps alive, no byte of a text character has an
  // edge), and no state text reaches is final or has rule edges. Then the accepted text
  // tokens are exactly those of at most k characters, none of the others lies in a dead
  // subtree that matters (nothing completes on the way), and a walk may leave every
  // text-only subtree to TokenTrie::text_up_to. Levels of states by exact character count.
  bool TextExact(int32_t state, int32_t k) {
    const GrammarAutomaton& a = *automaton_;
    auto plain = [&](int32_t s) {
      return !a.state_final[s] && a.rule_edge_begin[s + 1] == a.rule_edge_begin[s];
    };
    std::vector<int32_t> level{state}, next;
    // One character from (s, text state) into `next`; false if a state on the way is not
    // plain, or (when `last`) if any byte of a text character has an edge at all.
    auto expand = [&](auto&& self, int32_t s, int32_t text, bool last) -> bool {
      const TextRanges ranges = TextRangesFrom(text);
      for (const TextRange* r = ranges.begin; r != ranges.end; ++r) {
        for (int32_t e = a.byte_edge_begin[s]; e < a.byte_edge_begin[s + 1]; ++e) {
          const DfaByteEdge& edge = a.byte_edges[e];
          if (std::max<int32_t>(edge.lo, r->lo) > std::min<int32_t>(edge.hi, r->hi)) continue;
          if (last && text == 0) return false;
          if (!plain(edge.target)) return false;
          if (r->next != 0) {
            if (!self(self, edge.target, r->next, last)) return false;
          } else if (std::find(next.begin(), next.end(), edge.target) == next.end()) {
            next.push_back(edge.target);
          }
        }
      }
      return true;
    };
    for (int32_t chars = 0; chars <= k; ++chars) {
      for (int32_t s : level) {
        if (!expand(expand, s, 0, chars == k)) return false;
      }
      level.swap(next);
      next.clear();
    }
    return true;
  }

  // TextBound over the lazy DFA's codes from `start` (loop mode, where a state is a loop
  // configuration): byte by byte, each (state, text state) pair inside a character expanded
  // once.
  int32_t TextBoundOfCode(int32_t start) {
    std::vector<uint8_t> seen;  // per local state: bit 0 at a boundary, bit (1 + text state) inside
    auto mark = [&](int32_t code, int32_t text) {
      const size_t local = static_cast<size_t>(code >> 2);
      if (local >= seen.size()) seen.resize(local + 1, 0);
      const uint8_t bit = static_cast<uint8_t>(1u << (text == 0 ? 0 : text));
      if (seen[local] & bit) return false;
      seen[local] |= bit;
      return true;
    };
    std::vector<int32_t> level{start}, next;
    mark(start, 0);
    auto expand = [&](auto&& self, int32_t code, int32_t text) -> bool {
      const TextRanges ranges = TextRangesFrom(text);
      for (const TextRange* r = ranges.begin; r != ranges.end; ++r) {
        for (int b = r->lo; b <= r->hi; ++b) {
          const int32_t t = dfa_.Step(code, static_cast<uint8_t>(b));
          if (t == LazyDfa::kDead) return false;
          if (r->next == 0) {
            if (mark(t, 0)) next.push_back(t);
          } else if (mark(t, r->next) && !self(self, t, r->next)) {
            return false;
          }
        }
      }
      return true;
    };
    for (int32_t chars = 0; !level.empty(); ++chars) {
      if (chars >= kTextCharsCap - 1) return kTextCharsCap - 1;
      for (int32_t code : level) {
        if (!expand(expand, code, 0)) return chars;
      }
      level.swap(next);
      next.clear();
    }
    return kTextCharsCap;
  }

  // The DFA step of WalkDfa and WalkSkeleton at node i (depth d, byte b), from the code of its
  // parent: true if the node is alive and its children follow (its code stored, a completion
  // depth pushed); false if its subtree is done (dead, or walked by the parser). The walk's
  // locals come by reference, to stay in registers once inlined.
  [[gnu::always_inline]] bool StepNode(int32_t i, int32_t d, uint8_t b, int32_t* code_at, uint8_t* path,
                                       const int32_t*& rows, int32_t* ends, int32_t& num_ends, int32_t& run_begin,
                                       int32_t& run_end, TrieWalkResult* out) {
    while (num_ends > 0 && ends[num_ends - 1] >= d) --num_ends;
    const int32_t from = code_at[d - 1];
    int32_t code = rows[256 * static_cast<size_t>(from >> 2) + b];
    path[d] = b;
    // One test for the common case (alive, not final, no rule edges), so one branch.
    if (__builtin_expect((code & (INT32_MIN | LazyDfa::kFinal | LazyDfa::kRuleEdges)) != 0, 0)) {
      if (code == LazyDfa::kUnresolved) {
        code = dfa_.Resolve(from, b);
        rows = dfa_.rows();
      }
      if (code == LazyDfa::kDead) {
        if (num_ends > 0) Dead(i, ends, num_ends, out);
        return false;
      }
      if (code & LazyDfa::kRuleEdges) {
        AcceptRun(out, run_begin, run_end);
        run_begin = run_end = 0;
        ParserSubtree(i, d, ends, num_ends, out);
        rows = dfa_.rows();
        return false;
      }
      if (code & LazyDfa::kFinal) ends[num_ends++] = d;
    }
    code_at[d] = code;
    return true;
  }

  // Nodes [begin, end) of whole subtrees whose paths start at depth 1 from `start` (a DFA code).
  // Most of a broad state's walk: kept to locals (the stores into `out` would otherwise make
  // the compiler reload every member per node).
  // What WalkDfa does with a subtree whose tokens are all text.
  enum class TextSubtrees {
    kWalk,
    kAcceptShort,  // its tokens have at most text_bound characters: accepted whole
    kLeave,        // always skipped: the caller accounts for text by length (TextExact)
  };
  template <TextSubtrees kText>
  void WalkDfa(int32_t start, int32_t begin, int32_t end, TrieWalkResult* out, int32_t text_bound = 0) {
    const uint8_t* text_chars = trie_.text_chars.data();
    const uint8_t* byte = trie_.byte.data();
    const int32_t* depth = trie_.depth.data();
    const int32_t* subtree_end = trie_.subtree_end.data();
    const int32_t* token_begin = trie_.token_begin.data();
    int32_t* code_at = code_.data();
    uint8_t* path = path_.data();
    int32_t* ends = ends_.data();
    int32_t num_ends = 0;
    const int32_t* rows = dfa_.rows();
    int32_t run_begin = 0, run_end = 0;  // the accepted run being extended
    code_at[0] = start;
    int32_t i = begin;
    while (i < end) {
      if constexpr (kText == TextSubtrees::kLeave) {
        if (text_chars[i] != 0) {
          i = subtree_end[i];
          continue;
        }
      }
      if constexpr (kText == TextSubtrees::kAcceptShort) {
        // text_chars - 1 wraps 0 (not all text) to 255, above any bound.
        if (static_cast<uint8_t>(text_chars[i] - 1) < text_bound) {
          const int32_t tb = token_begin[i];
          if (tb != run_end) {
            AcceptRun(out, run_begin, run_end);
            run_begin = tb;
          }
          i = subtree_end[i];
          run_end = token_begin[i];
          continue;
        }
      }
      if (!StepNode(i, depth[i], byte[i], code_at, path, rows, ends, num_ends, run_begin, run_end, out)) {
        i = subtree_end[i];
        continue;
      }
      // Extends the run (or starts one after a gap). No test for a node without tokens: a
      // data-dependent branch the predictor misses on, and tb == te == run_end there anyway
      // unless a gap precedes it (then an empty run starts).
      const int32_t tb = token_begin[i];
      if (tb != run_end) {
        AcceptRun(out, run_begin, run_end);
        run_begin = tb;
      }
      run_end = token_begin[i + 1];
      ++i;
    }
    AcceptRun(out, run_begin, run_end);
  }

  // WalkDfa with every text-only subtree accepted whole (the start takes all text), over the
  // trie's text skeleton entries [begin, end) (whole subtrees; see TokenTrie::text_skeleton).
  void WalkSkeleton(int32_t start, int32_t begin, int32_t end, TrieWalkResult* out) {
    const TokenTrie::SkeletonNode* sk = trie_.text_skeleton.data();
    int32_t* code_at = code_.data();
    uint8_t* path = path_.data();
    int32_t* ends = ends_.data();
    int32_t num_ends = 0;
    const int32_t* rows = dfa_.rows();
    int32_t run_begin = 0, run_end = 0;  // the accepted run being extended
    code_at[0] = start;
    int32_t k = begin;
    while (k < end) {
      const TokenTrie::SkeletonNode& e = sk[k];
      if (!e.text_root &&
          !StepNode(e.node, e.depth, e.byte, code_at, path, rows, ends, num_ends, run_begin, run_end, out)) {
        k = e.next;
        continue;
      }
      if (e.token_begin != run_end) {
        AcceptRun(out, run_begin, run_end);
        run_begin = e.token_begin;
      }
      run_end = e.token_end;
      ++k;
    }
    AcceptRun(out, run_begin, run_end);
  }

  // The whole trie with the parser.
  void WalkParser(TrieWalkResult* out) {
    parser_ends_.clear();
    EarleyParser& p = Parser();
    p.TruncateRows(rows0_);
    row_code_[0] = kParserRow;
    has_row_[0] = 1;
    WalkParserNodes(1, trie_.num_nodes(), out);
  }

 private:
  static constexpr int32_t kParserRow = -1;  // row_code_: the row needs the parser

  EarleyParser& Parser() {
    if (!parser_) {
      parser_.emplace(loop_state_ >= 0 ? EarleyParser::InLoop(automaton_, state_, loop_state_)
                                       : EarleyParser(automaton_, state_));
      rows0_ = parser_->num_rows();
    }
    return *parser_;
  }

  // Node i died below the completion depths ends[0, num_ends).
  void Dead(int32_t i, const int32_t* ends, int32_t num_ends, TrieWalkResult* out) {
    if (num_ends > 0 && trie_.token_begin[i] < trie_.token_begin[trie_.subtree_end[i]]) {
      out->dead_nodes.push_back(i);
      out->dead_offsets.insert(out->dead_offsets.end(), ends, ends + num_ends);
      out->dead_offset_begin.push_back(static_cast<int32_t>(out->dead_offsets.size()));
    }
  }

  // Node i (depth d, its path's first d - 1 bytes alive in the DFA) and its subtree, with the
  // parser; the completion depths along the path so far carry over.
  void ParserSubtree(int32_t i, int32_t d, const int32_t* ends, int32_t num_ends, TrieWalkResult* out) {
    EarleyParser& p = Parser();
    p.TruncateRows(rows0_);
    for (int32_t k = 1; k < d; ++k) p.Advance(path_[k]);  // alive: the DFA says so
    row_code_[d - 1] = kParserRow;
    for (int32_t k = 0; k < d; ++k) has_row_[k] = 1;
    parser_ends_.assign(ends, ends + num_ends);
    WalkParserNodes(i, trie_.subtree_end[i], out);
  }

  // Nodes [begin, end), whole subtrees, the parser holding the rows of the path before begin.
  // Where a row is one item in a state without rule edges that is not final (a lexical
  // stretch: a string body inside a called rule, say), the children step the lazy DFA from
  // that state instead, for as long as it stays in such states (the parser would make the
  // same one-item rows, and nothing completes); the rows are made, replaying the path, when a
  // node needs the parser again (a final state or one with rule edges).
  void WalkParserNodes(int32_t begin, int32_t end, TrieWalkResult* out) {
    EarleyParser& p = *parser_;
    const GrammarAutomaton& a = *automaton_;
    int32_t i = begin;
    while (i < end) {
      const int32_t d = trie_.depth[i];
      while (!parser_ends_.empty() && parser_ends_.back() >= d) parser_ends_.pop_back();
      const uint8_t b = trie_.byte[i];
      path_[d] = b;
      const int32_t from = row_code_[d - 1];
      if (from != kParserRow) {
        const int32_t code = dfa_.Step(from, b);
        if (code == LazyDfa::kDead) {
          Dead(i, parser_ends_.data(), static_cast<int32_t>(parser_ends_.size()), out);
          i = trie_.subtree_end[i];
          continue;
        }
        if ((code & (LazyDfa::kFinal | LazyDfa::kRuleEdges)) == 0) {
          row_code_[d] = code;
          has_row_[d] = 0;
          out->Accept(trie_.token_begin[i], trie_.token_begin[i + 1]);
          ++i;
          continue;
        }
        // Make the rows up to the parent: from the deepest one the parser holds.
        int32_t held = d - 1;
        while (!has_row_[held]) --held;
        p.TruncateRows(rows0_ + held);
        for (int32_t k = held + 1; k < d; ++k) {
          p.Advance(path_[k]);  // alive: the DFA says so
          has_row_[k] = 1;
        }
      }
      p.TruncateRows(rows0_ + d - 1);
      if (!p.Advance(b)) {
        Dead(i, parser_ends_.data(), static_cast<int32_t>(parser_ends_.size()), out);
        i = trie_.subtree_end[i];
        continue;
      }
      has_row_[d] = 1;
      row_code_[d] = kParserRow;
      if (fast_paths_ && p.last_row_end() - p.last_row_begin() == 1) {
        const int32_t s = p.last_row_begin()->state;
        if (!a.is_virtual(s) && (a.closure_trivial[s] & 2)) row_code_[d] = dfa_.Code(s);
      }
      if (p.CanEnd()) parser_ends_.push_back(d);
      out->Accept(trie_.token_begin[i], trie_.token_begin[i + 1]);
      ++i;
    }
  }

  const std::shared_ptr<const GrammarAutomaton>& automaton_;
  const TokenTrie& trie_;
  const int32_t state_;
  const int32_t loop_state_;
  const bool fast_paths_;
  LazyDfa dfa_;
  std::optional<EarleyParser> parser_;  // built on first need: most DFA walks never reach a rule edge
  int32_t rows0_ = 0;                   // the parser's rows before the first byte
  std::vector<int32_t> code_;           // per depth: the DFA code after the path's first d bytes
  std::vector<uint8_t> path_;           // per depth: the path's byte there
  std::vector<int32_t> ends_;           // WalkDfa's depths where the rule may complete, increasing
  std::vector<int32_t> parser_ends_;    // the same for the parser's walks
  std::vector<int32_t> row_code_;       // per depth: the DFA code a lexical stretch is in, or kParserRow
  std::vector<uint8_t> has_row_;        // per depth: the parser holds the path's row
};

}  // namespace

TrieWalkResult WalkVocabulary(const std::shared_ptr<const GrammarAutomaton>& automaton,
                              const TokenizerInfo& tokenizer, int32_t state, int32_t loop_state, SubtreeMemo* memo,
                              bool fast_paths) {
  const TokenTrie& trie = tokenizer.trie();
  TrieWalkResult out;
  // Inside a counted loop the top item is the loop (so iterations chain with exact or star
  // counting and the loop's completion is what may end); elsewhere it is the state itself.
  VocabWalker walker(automaton, trie, state, loop_state, fast_paths);
  const int32_t start = walker.StartCode();
  if (start < 0) {
    walker.WalkParser(&out);
    return out;
  }
  if (walker.loop_mode()) {  // configurations are not states: no memo
    const int32_t text_bound = fast_paths ? walker.TextBoundOfCode(start) : 0;
    if (text_bound > 0) walker.WalkDfa<VocabWalker::TextSubtrees::kAcceptShort>(start, 1, trie.num_nodes(), &out, text_bound);
    else walker.WalkDfa<VocabWalker::TextSubtrees::kWalk>(start, 1, trie.num_nodes(), &out);
    return out;
  }
  int32_t text_bound = 0;
  if (fast_paths) text_bound = memo != nullptr ? memo->TextBound(state, walker) : walker.TextBound(state);
  auto walk_dfa = [&](int32_t begin, int32_t end, TrieWalkResult* result) {
    if (text_bound > 0) walker.WalkDfa<VocabWalker::TextSubtrees::kAcceptShort>(start, begin, end, result, text_bound);
    else walker.WalkDfa<VocabWalker::TextSubtrees::kWalk>(start, begin, end, result);
  };
  // Text up to a length and no longer (a maxLength string body): text by length, the rest of
  // the vocabulary walked (no memo: its walks hold no text).
  if (text_bound > 0 && text_bound <= TokenTrie::kTextLengthSets && walker.TextExact(state, text_bound)) {
    walker.WalkDfa<VocabWalker::TextSubtrees::kLeave>(start, 1, trie.num_nodes(), &out);
    out.text_up_to = text_bound;
    return out;
  }
  // All text alive: over the text skeleton (root children are all in it, in order).
  const bool skeleton = text_bound >= kTextCharsCap;
  int32_t sk = 0;  // the skeleton entry of root child c
  auto walk_subtree = [&](int32_t c, TrieWalkResult* result) {
    if (skeleton) walker.WalkSkeleton(start, sk, trie.text_skeleton[sk].next, result);
    else walk_dfa(c, trie.subtree_end[c], result);
  };
  // Subtree by subtree below the root, through the memo (if any) where the first byte leads
  // to a state without rule edges.
  TrieWalkResult fresh;  // one subtree's walk, before it is memoised
  for (int32_t c = 1; c < trie.num_nodes(); c = trie.subtree_end[c], sk = skeleton ? trie.text_skeleton[sk].next : 0) {
    const int32_t first = walker.dfa().Step(start, trie.byte[c]);
    if (first == LazyDfa::kDead) continue;  // dead at depth 1: nothing accepted, no completion inside
    if (memo == nullptr || (first & LazyDfa::kRuleEdges) || walker.dfa().IsLoopCall(first)) {
      walk_subtree(c, &out);
      continue;
    }
    const int32_t target = walker.dfa().Global(first);
    if (memo->AppendTo(target, c, &out)) continue;
    fresh.Clear();
    walk_subtree(c, &fresh);
    memo->Insert(target, c, fresh);
    out.Append(fresh);
  }
  return out;
}

}  // namespace xg2
