// The adaptive token-mask cache.
//
// For every scannable automaton state (a state with byte edges) the tokens of the vocabulary
// fall into three classes, computed by walking the token trie with an Earley parser that
// starts at that state with no context:
//   accepted  - some path consumes the whole token inside the state's rule;
//   uncertain - no such path, but the rule can end inside the token, so the outcome depends
//               on what follows the rule (decided at fill time by the real parser);
//   rejected  - everything else.
// Each entry stores the smallest of: accepted ids, not-accepted ids, or an accepted bitset;
// uncertain tokens are stored as ranges of trie order, so the fill-time check is a pruned
// trie walk. Entries are built on demand (thread-safe) or all at once by Precompute.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "automata/grammar_automaton.h"
#include "xg2/tokenizer.h"

namespace xg2 {

struct TokenMaskEntry {
  enum class Storage : uint8_t { kAcceptedIds = 0, kNotAcceptedIds = 1, kAcceptedBitset = 2 };
  Storage storage = Storage::kAcceptedIds;
  std::vector<int32_t> ids;       // sorted token ids (list forms)
  std::vector<uint32_t> bitset;   // accepted tokens (bitset form), ceil(vocab_size / 32) words
  std::vector<std::pair<int32_t, int32_t>> uncertain;  // [begin, end) in trie token order
  int32_t num_accepted = 0;
  int32_t num_uncertain = 0;
  size_t MemoryBytes() const {
    return sizeof(*this) + ids.capacity() * 4 + bitset.capacity() * 4 + uncertain.capacity() * 8;
  }
};

struct TokenMaskCacheStats {
  int64_t num_entries = 0;
  int64_t memory_bytes = 0;
  int64_t num_accepted_list = 0;
  int64_t num_not_accepted_list = 0;
  int64_t num_bitset = 0;
};

class TokenMaskCache {
 public:
  TokenMaskCache(std::shared_ptr<const GrammarAutomaton> automaton,
                 std::shared_ptr<const TokenizerInfo> tokenizer);
  ~TokenMaskCache();
  TokenMaskCache(const TokenMaskCache&) = delete;
  TokenMaskCache& operator=(const TokenMaskCache&) = delete;

  // The entry of a scannable state, built now if needed. Thread-safe.
  const TokenMaskEntry& Get(int32_t state);
  bool IsBuilt(int32_t state) const { return entries_[state].load(std::memory_order_acquire); }
  // Builds the entries of every used scannable state on up to num_threads threads.
  void PrecomputeAll(int num_threads);
  TokenMaskCacheStats Stats() const;

  // Tokens that are neither special nor padding, as a bitset of ceil(vocab_size / 32) words.
  const std::vector<uint32_t>& normal_token_bitset() const { return normal_token_bitset_; }
  int32_t num_words() const { return num_words_; }

  // Classifies the vocabulary for one state (the pure computation behind Get).
  static TokenMaskEntry ComputeEntry(const std::shared_ptr<const GrammarAutomaton>& automaton,
                                     const TokenizerInfo& tokenizer, int32_t state);

 private:
  std::shared_ptr<const GrammarAutomaton> automaton_;
  std::shared_ptr<const TokenizerInfo> tokenizer_;
  std::unique_ptr<std::atomic<TokenMaskEntry*>[]> entries_;
  int32_t num_states_;
  int32_t num_words_;
  std::vector<uint32_t> normal_token_bitset_;
};

}  // namespace xg2
