// The vocabulary walk of one automaton state: which tokens its rule accepts from there, which
// die after the rule may have completed inside them (TokenMaskCache's uncertain tokens), over
// the token trie, with the fast paths that keep a first mask cheap (a lazy DFA instead of the
// Earley parser wherever the parse is one lexical stretch or a counted loop of a plain rule,
// text-only trie subtrees taken whole where the state accepts such text, and subtree walks
// shared between the states of a grammar).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "automata/grammar_automaton.h"
#include "compiler/text_analysis.h"
#include "support/sequence_interner.h"
#include "tokenizer/text_slice.h"
#include "xg2/tokenizer.h"

namespace xg2 {

// What a walk over (part of) the token trie found: accepted tokens as runs of trie-order
// indices (into trie.sorted_tokens), and the dead subtrees after which the rule may have
// completed inside a token, with those completion offsets.
struct TrieWalkResult {
  std::vector<std::pair<int32_t, int32_t>> runs;  // [begin, end)
  std::vector<int32_t> dead_nodes;
  std::vector<int32_t> dead_offset_begin{0};  // size dead_nodes + 1
  std::vector<int32_t> dead_offsets;
  // Also accepted (not in runs): every text token of at most this many characters
  // (TokenTrie::text_up_to), from a walk that left the text-only subtrees to that set.
  int32_t text_up_to = 0;
  void Accept(int32_t begin, int32_t end) {
    if (begin == end) return;
    if (!runs.empty() && runs.back().second == begin)
      runs.back().second = end;
    else
      runs.emplace_back(begin, end);
  }
  // Appends o's runs [run_begin, run_end) and dead nodes [dead_begin, dead_end).
  void AppendPart(const TrieWalkResult& o, size_t run_begin, size_t run_end, size_t dead_begin, size_t dead_end) {
    for (size_t r = run_begin; r < run_end; ++r) Accept(o.runs[r].first, o.runs[r].second);
    for (size_t n = dead_begin; n < dead_end; ++n) {
      dead_nodes.push_back(o.dead_nodes[n]);
      dead_offsets.insert(dead_offsets.end(), o.dead_offsets.begin() + o.dead_offset_begin[n],
                          o.dead_offsets.begin() + o.dead_offset_begin[n + 1]);
      dead_offset_begin.push_back(static_cast<int32_t>(dead_offsets.size()));
    }
  }
  void Append(const TrieWalkResult& o) { AppendPart(o, 0, o.runs.size(), 0, o.dead_nodes.size()); }
  void Clear() {
    runs.clear();
    dead_nodes.clear();
    dead_offset_begin.assign(1, 0);
    dead_offsets.clear();
  }
  size_t CapacityBytes() const {
    return 8 * runs.capacity() + 4 * (dead_nodes.capacity() + dead_offset_begin.capacity() + dead_offsets.capacity());
  }
};

// Walks of one depth-1 trie subtree from one automaton state, shared by the states of a
// grammar: text-like states (free text, JSON string bodies) mostly reach the same state
// after their first byte, and from there their subtrees' results are identical.
// The walks are stored back to back in one set of arrays: a grammar memoises thousands of
// them, and a few blocks per walk were most of what a lazily compiled grammar allocated
// (and what freeing it handed back to the allocator).
class SubtreeMemo {
 public:
  explicit SubtreeMemo(int32_t num_states) : text_bound_(static_cast<size_t>(num_states), -1) {}
  // TextBound (compiler/text_analysis.h) of a state, once per grammar: an unbounded result
  // holds for every state the search reached too (the other states of a property-name
  // automaton, say).
  int32_t TextBound(int32_t state, const GrammarAutomaton& automaton) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (text_bound_[state] >= 0) return text_bound_[state];
    }
    std::vector<int32_t> reached;
    const int32_t bound = xg2::TextBound(automaton, state, &reached);
    std::lock_guard<std::mutex> lock(mu_);
    text_bound_[state] = static_cast<int16_t>(bound);
    if (bound == kTextCharsCap) {
      for (int32_t s : reached) text_bound_[s] = static_cast<int16_t>(bound);
    }
    return bound;
  }

  // Appends the walk memoised for (state, trie node) to out; false if none.
  bool AppendTo(int32_t state, int32_t node, TrieWalkResult* out) {
    std::lock_guard<std::mutex> lock(mu_);
    key_.assign({state, node});
    const int32_t w = walks_.Find(key_);
    if (w < 0) return false;
    const Slice& s = slices_[w];
    out->AppendPart(arena_, s.run_begin, s.run_end, s.dead_begin, s.dead_end);
    return true;
  }
  size_t MemoryBytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return arena_.CapacityBytes() + walks_.RetainedBytes() + sizeof(Slice) * slices_.capacity() +
           2 * text_bound_.capacity();
  }
  void Insert(int32_t state, int32_t node, const TrieWalkResult& walk) {
    std::lock_guard<std::mutex> lock(mu_);
    if (arena_.CapacityBytes() + walks_.RetainedBytes() + sizeof(Slice) * slices_.capacity() >= kMaxBytes) return;
    key_.assign({state, node});
    bool inserted = false;
    walks_.Intern(key_, &inserted);  // ids count up with slices_
    if (!inserted) return;           // another thread walked it too
    Slice s;
    s.run_begin = arena_.runs.size();
    s.dead_begin = arena_.dead_nodes.size();
    // Raw runs (Accept would merge the first one into the previous walk's last).
    arena_.runs.insert(arena_.runs.end(), walk.runs.begin(), walk.runs.end());
    arena_.AppendPart(walk, 0, 0, 0, walk.dead_nodes.size());
    s.run_end = arena_.runs.size();
    s.dead_end = arena_.dead_nodes.size();
    slices_.push_back(s);
  }

 private:
  static constexpr size_t kMaxBytes = size_t{64} << 20;
  struct Slice {
    size_t run_begin, run_end, dead_begin, dead_end;
  };

  std::mutex mu_;
  TrieWalkResult arena_;  // every memoised walk, back to back
  std::vector<Slice> slices_;
  SequenceInterner walks_;           // (state, trie node) -> index into slices_
  std::vector<int32_t> key_;         // the key being looked up
  std::vector<int16_t> text_bound_;  // per state, -1 until known
};

// The walk of `state` (under the loop context loop_state, or -1) over the whole vocabulary.
// memo (optional) shares subtree walks between the states of one grammar. fast_paths false
// walks node by node, loops with the parser: the reference for tests.
TrieWalkResult WalkVocabulary(const std::shared_ptr<const GrammarAutomaton>& automaton, const TokenizerInfo& tokenizer,
                              int32_t state, int32_t loop_state, SubtreeMemo* memo, bool fast_paths);

}  // namespace xg2
