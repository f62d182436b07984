#include "compiler/vocab_walk.h"

#include <climits>
#include <optional>

#include "automata/lazy_dfa.h"
#include "compiler/text_analysis.h"
#include "parser/earley_parser.h"

namespace xg2 {

namespace {

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

TrieWalkResult WalkVocabulary(const std::shared_ptr<const GrammarAutomaton>& automaton, const TokenizerInfo& tokenizer,
                              int32_t state, int32_t loop_state, SubtreeMemo* memo, bool fast_paths) {
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
    const int32_t text_bound = fast_paths ? TextBoundOfCode(walker.dfa(), start) : 0;
    if (text_bound > 0)
      walker.WalkDfa<VocabWalker::TextSubtrees::kAcceptShort>(start, 1, trie.num_nodes(), &out, text_bound);
    else
      walker.WalkDfa<VocabWalker::TextSubtrees::kWalk>(start, 1, trie.num_nodes(), &out);
    return out;
  }
  int32_t text_bound = 0;
  if (fast_paths) text_bound = memo != nullptr ? memo->TextBound(state, *automaton) : TextBound(*automaton, state);
  auto walk_dfa = [&](int32_t begin, int32_t end, TrieWalkResult* result) {
    if (text_bound > 0)
      walker.WalkDfa<VocabWalker::TextSubtrees::kAcceptShort>(start, begin, end, result, text_bound);
    else
      walker.WalkDfa<VocabWalker::TextSubtrees::kWalk>(start, begin, end, result);
  };
  // Text up to a length and no longer (a maxLength string body): text by length, the rest of
  // the vocabulary walked (no memo: its walks hold no text).
  if (text_bound > 0 && text_bound <= TokenTrie::kTextLengthSets && TextExact(*automaton, state, text_bound)) {
    walker.WalkDfa<VocabWalker::TextSubtrees::kLeave>(start, 1, trie.num_nodes(), &out);
    out.text_up_to = text_bound;
    return out;
  }
  // All text alive: over the text skeleton (root children are all in it, in order).
  const bool skeleton = text_bound >= kTextCharsCap;
  int32_t sk = 0;  // the skeleton entry of root child c
  auto walk_subtree = [&](int32_t c, TrieWalkResult* result) {
    if (skeleton)
      walker.WalkSkeleton(start, sk, trie.text_skeleton[sk].next, result);
    else
      walk_dfa(c, trie.subtree_end[c], result);
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
