// The adaptive token-mask cache.
//
// For every scannable automaton state s (a state with byte edges) of rule R, the tokens of
// the vocabulary fall into three classes, found by walking the token trie through R's byte
// automaton from s with no context (compiler/vocab_walk: a DFA walk, counted loops as a lazy
// DFA, the Earley parser only where a walk crosses into other rules):
//   accepted  - some path consumes the whole token without leaving R;
//   uncertain - R may complete after the first k >= 1 bytes of the token, and what follows
//               the completion in some context can take the rest;
//   rejected  - everything else.
// A completion before the token (k = 0) needs nothing here: the matcher's Earley row already
// holds the callers' continuations, and their own entries cover those tokens.
// Accepted tokens are stored in the smallest of three forms (ids, not-accepted ids, bitset).
// Uncertain tokens are stored as the suffixes token[k:] in a trie of their own, pruned by the
// context-free FOLLOW set of R. At fill time the real continuation of R is built once per
// (rule, origin) and walks the suffix tries, so the re-check costs what it accepts.
// Entries are built on demand (thread-safe) or all at once by PrecomputeAll. One thread builds
// an entry; another that needs it meanwhile (a fill while the background build is on it) waits
// for that build instead of repeating it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "automata/grammar_automaton.h"
#include "compiler/cross_grammar_cache.h"
#include "compiler/structural_hash.h"
#include "compiler/suffix_trie.h"
#include "xg2/tokenizer.h"

namespace xg2 {

class SubtreeMemo;
struct TrieWalkResult;

// A state's entry in one compiled grammar: the shared core (accepted tokens; see
// cross_grammar_cache.h) and the suffixes, pruned by this grammar's FOLLOW set of the rule,
// after which the rule may complete inside a token.
struct TokenMaskEntry {
  std::shared_ptr<const MaskCore> core;
  SuffixTrie uncertain_suffixes;
  int32_t num_uncertain_suffixes = 0;
  size_t MemoryBytes() const { return sizeof(*this) + uncertain_suffixes.MemoryBytes(); }
  bool has_uncertain() const { return !uncertain_suffixes.empty(); }
};

struct TokenMaskCacheStats {
  int64_t num_entries = 0;
  int64_t memory_bytes = 0;
  int64_t num_accepted_list = 0;
  int64_t num_not_accepted_list = 0;
  int64_t num_bitset = 0;
  int64_t num_uncertain_suffixes = 0;  // summed over entries (k >= 1)
  int64_t max_uncertain_suffixes = 0;
};

class TokenMaskCache {
 public:
  TokenMaskCache(std::shared_ptr<const GrammarAutomaton> automaton, std::shared_ptr<const TokenizerInfo> tokenizer);
  ~TokenMaskCache();
  TokenMaskCache(const TokenMaskCache&) = delete;
  TokenMaskCache& operator=(const TokenMaskCache&) = delete;

  // The entry of a scannable state, built now if needed. Thread-safe. For a state of a
  // counted loop's child rule, loop_state is the loop context (see LoopContext).
  const TokenMaskEntry& Get(int32_t state, int32_t loop_state = -1) { return Get(state, loop_state, false); }
  bool IsBuilt(int32_t state) const { return entries_[state].load(std::memory_order_acquire); }
  // Which entry gives the masks of an iteration running under the real loop state
  // `loop_state` (count c). A token of n bytes completes at most n iterations, so far from
  // the bounds the "star" forms (count unknown) are exact; closer, the star forms are exact
  // for tokens shorter than recheck_len and the longer ones (few) are re-checked by the
  // parser; near a bound the exact count's own entry is used.
  struct LoopChoice {
    int32_t loop_state;   // entry context: star, star_no_complete or the exact count
    int32_t recheck_len;  // tokens with at least this many bytes need the parser (INT32_MAX: none)
    // The re-check is for the minimum alone (the maximum is out of any token's reach): a
    // long token the entry accepts never completes the loop, so it holds at any count, and
    // only the long tokens it refuses (which may complete the loop) need the parser.
    bool refused_only = false;
  };
  LoopChoice LoopContext(int32_t loop_state) const;
  // Tokens (trie order indices) of at least `min_len` bytes, longest first.
  void LongTokens(int32_t min_len, std::vector<int32_t>* sorted_indices) const;
  int32_t max_token_bytes() const { return max_token_bytes_; }
  // Per token id: the JSON string characters its bytes start when decoded from decoder state
  // `dec` (automata/json_decoder.h; 0xFFFF where they do not decode, and for special tokens).
  // Built on first use, then read without locking. Thread-safe.
  const std::vector<uint16_t>& TokenJsonChars(int dec);
  // Builds the entries of every used scannable state on up to num_threads threads.
  // Stops early (returns false) once `deadline` passes or *cancel becomes true; entries are
  // built broadest first (the ones a first mask would wait longest for).
  // An exception on any worker (std::bad_alloc included) stops the others and is rethrown
  // here. max_memory_bytes > 0: BudgetExceeded("max_memory_bytes") once the entries built
  // (and the walk memo) hold more than that.
  bool PrecomputeAll(int num_threads,
                     std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
                     const std::atomic<bool>* cancel = nullptr, int64_t max_memory_bytes = 0);
  TokenMaskCacheStats Stats() const;
  // Heap held besides the entries: per-state tables, rule hashes and the walk memo.
  size_t OverheadBytes() const;

  // Tokens that are neither special nor padding, as a bitset of ceil(vocab_size / 32) words.
  const std::vector<uint32_t>& normal_token_bitset() const { return tokenizer_->trie().normal_bitset; }
  int32_t num_words() const { return num_words_; }

  // The vocabulary walk of one state (shared across grammars through the global pool).
  // memo (optional) shares subtree walks between the states of one grammar. fast_paths:
  // text-only trie subtrees taken whole where the state accepts such text, and counted loops
  // of plain rules walked as a DFA; false walks node by node, loops with the parser (the
  // reference for tests).
  static MaskCore ComputeCore(const std::shared_ptr<const GrammarAutomaton>& automaton, const TokenizerInfo& tokenizer,
                              int32_t state, int32_t loop_state, SubtreeMemo* memo = nullptr, bool fast_paths = true);
  // The walk's accepted tokens in the smallest form, with its dead subtrees.
  static MaskCore FinishCore(const TrieWalkResult& walk, const TokenizerInfo& tokenizer);
  // This grammar's entry from a core: the suffixes FOLLOW(rule) may take.
  static TokenMaskEntry FinishEntry(std::shared_ptr<const MaskCore> core,
                                    const std::shared_ptr<const GrammarAutomaton>& automaton,
                                    const TokenizerInfo& tokenizer, RuleId rule);
  // Get's computation: core from the pool (or walked and pooled), then FinishEntry (through
  // the suffix pool when pooled_suffixes).
  TokenMaskEntry BuildEntry(int32_t state, int32_t loop_state, bool pooled_suffixes = false);

 private:
  // Get; pooled_suffixes (PrecomputeAll) goes through the suffix pool, whose first use in a
  // grammar computes every rule's follow fingerprint: worth it for a whole compile, not for
  // the few entries of a lazy grammar's first fill.
  const TokenMaskEntry& Get(int32_t state, int32_t loop_state, bool pooled_suffixes);
  const TokenMaskEntry& GetLoopEntry(int32_t state, int32_t loop_state, bool pooled_suffixes);
  // PrecomputeAll's Get: nullptr where another thread is building the entry (it is left to
  // that thread rather than waited for).
  const TokenMaskEntry* GetUnlessBuilding(int32_t state, int32_t loop_state);
  // The entry from its core: the suffixes pruned by the rule's follow language, from the
  // suffix pool (when pooled_suffixes) if another grammar had the same core and follow language.
  TokenMaskEntry FinishFromCore(std::shared_ptr<const MaskCore> core, const Hash128& key, int32_t state,
                                int32_t loop_state, bool pooled_suffixes);
  // Publishes a state's entry (the first one wins a race; they are identical).
  const TokenMaskEntry& Store(int32_t state, TokenMaskEntry entry);
  // PrecomputeAll's use of rule bundles: fills the entries of plain states whose rule the
  // pool holds (one lookup per rule), and afterwards pools the rules it completed.
  void FillFromRuleBundles(const std::vector<std::pair<int32_t, int32_t>>& todo, std::vector<uint8_t>* bundled);
  void PoolRuleBundles(const std::vector<std::pair<int32_t, int32_t>>& todo, const std::vector<uint8_t>& bundled);

  std::shared_ptr<const GrammarAutomaton> automaton_;
  std::shared_ptr<const TokenizerInfo> tokenizer_;
  std::unique_ptr<std::atomic<TokenMaskEntry*>[]> entries_;
  int32_t num_states_;
  int32_t num_words_;
  int32_t max_token_bytes_ = 0;
  mutable std::mutex token_json_chars_mu_;
  std::vector<std::vector<uint16_t>> token_json_chars_;  // per decoder state, built on use
  RuleHashes rule_hashes_;
  // Follow fingerprints per rule (ComputeFollowFingerprints), made on the first entry that
  // has uncertain suffixes; empty or zero where none.
  // A mutex and a flag, not std::call_once: libstdc++'s call_once keeps its callable in
  // dynamically allocated thread-local storage and lets exceptions unwind through glibc's
  // pthread_once; under a memory limit either one aborts the process (glibc cannot allocate
  // the thread-local block, or cannot load the unwinder for pthread_once's frame).
  std::mutex follow_mu_;
  std::atomic<bool> follow_ready_{false};
  std::vector<Hash128> follow_fingerprints_;
  std::unique_ptr<SubtreeMemo> memo_;
  // Builds in progress: the plain states' flags, and the loop entries' keys under loop_mu_.
  // A build's end (its entry stored, or its exception) is announced on build_cv_ under
  // build_mu_ (plain states) or loop_mu_ (loop entries).
  std::unique_ptr<std::atomic<bool>[]> building_;
  std::mutex build_mu_;
  std::condition_variable build_cv_;
  // Entries of states inside counted loops, keyed by (state, loop context).
  mutable std::mutex loop_mu_;
  std::condition_variable loop_cv_;
  std::unordered_map<uint64_t, std::unique_ptr<TokenMaskEntry>> loop_entries_;
  std::unordered_set<uint64_t> loop_building_;
};

}  // namespace xg2
