#include "compiler/token_mask_cache.h"

#include <algorithm>
#include <thread>

#include "parser/earley_parser.h"

namespace xg2 {

TokenMaskCache::TokenMaskCache(std::shared_ptr<const GrammarAutomaton> automaton,
                               std::shared_ptr<const TokenizerInfo> tokenizer)
    : automaton_(std::move(automaton)), tokenizer_(std::move(tokenizer)) {
  num_states_ = automaton_->num_states();
  entries_.reset(new std::atomic<TokenMaskEntry*>[num_states_]);
  for (int32_t i = 0; i < num_states_; ++i) entries_[i].store(nullptr);
  num_words_ = (tokenizer_->vocab_size() + 31) / 32;
  normal_token_bitset_.assign(num_words_, 0);
  for (int32_t t : tokenizer_->trie().sorted_tokens) normal_token_bitset_[t >> 5] |= 1u << (t & 31);
}

TokenMaskCache::~TokenMaskCache() {
  for (int32_t i = 0; i < num_states_; ++i) delete entries_[i].load();
}

const TokenMaskEntry& TokenMaskCache::Get(int32_t state) {
  TokenMaskEntry* e = entries_[state].load(std::memory_order_acquire);
  if (e) return *e;
  auto* built = new TokenMaskEntry(ComputeEntry(automaton_, *tokenizer_, state));
  TokenMaskEntry* expected = nullptr;
  if (entries_[state].compare_exchange_strong(expected, built, std::memory_order_acq_rel)) {
    return *built;
  }
  delete built;  // another thread won the race; its entry is identical
  return *expected;
}

void TokenMaskCache::PrecomputeAll(int num_threads) {
  std::vector<int32_t> todo;
  for (int32_t s = 0; s < num_states_; ++s) {
    if (automaton_->state_used[s] && automaton_->has_byte_edges(s) && !IsBuilt(s)) todo.push_back(s);
  }
  std::atomic<size_t> next{0};
  auto work = [&]() {
    while (true) {
      size_t i = next.fetch_add(1);
      if (i >= todo.size()) return;
      Get(todo[i]);
    }
  };
  int n = std::max(1, std::min<int>(num_threads, static_cast<int>(todo.size())));
  if (n <= 1) {
    work();
    return;
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) threads.emplace_back(work);
  for (auto& t : threads) t.join();
}

TokenMaskCacheStats TokenMaskCache::Stats() const {
  TokenMaskCacheStats s;
  for (int32_t i = 0; i < num_states_; ++i) {
    const TokenMaskEntry* e = entries_[i].load(std::memory_order_acquire);
    if (!e) continue;
    ++s.num_entries;
    s.memory_bytes += static_cast<int64_t>(e->MemoryBytes());
    switch (e->storage) {
      case TokenMaskEntry::Storage::kAcceptedIds: ++s.num_accepted_list; break;
      case TokenMaskEntry::Storage::kNotAcceptedIds: ++s.num_not_accepted_list; break;
      case TokenMaskEntry::Storage::kAcceptedBitset: ++s.num_bitset; break;
    }
  }
  return s;
}

TokenMaskEntry TokenMaskCache::ComputeEntry(const std::shared_ptr<const GrammarAutomaton>& automaton,
                                            const TokenizerInfo& tokenizer, int32_t state) {
  const TokenTrie& trie = tokenizer.trie();
  const int32_t num_nodes = trie.num_nodes();
  // inner: the rule of `state` alone; follow: also continues into every call site after the
  // rule completes. A token is accepted if inner consumes it; uncertain if the rule ends
  // inside it and follow consumes it (or a call site's rule ends too); otherwise rejected.
  EarleyParser inner(automaton, state, /*with_follow=*/false);
  EarleyParser follow(automaton, state, /*with_follow=*/true);
  std::vector<int32_t> accepted;  // token ids
  TokenMaskEntry entry;
  auto add_uncertain = [&entry](int32_t b, int32_t e) {
    if (b >= e) return;
    if (!entry.uncertain.empty() && entry.uncertain.back().second == b) {
      entry.uncertain.back().second = e;
    } else {
      entry.uncertain.emplace_back(b, e);
    }
    entry.num_uncertain += e - b;
  };
  // Per depth along the current trie path: inner alive, rule ended, bytes. `follow` is
  // synced with the current path up to follow_depth, and advanced lazily: only on paths where
  // inner dies after its rule could end.
  std::vector<uint8_t> inner_alive{1}, ended{inner.CanEnd()}, path{0};
  int32_t follow_depth = 0;
  auto sync_follow = [&](int32_t depth) {
    while (follow_depth < depth) {
      follow.TruncateRows(follow_depth + 1);
      follow.Advance(path[follow_depth + 1]);  // succeeds: inner (a subset) was alive here
      ++follow_depth;
    }
  };
  int32_t i = 1;
  while (i < num_nodes) {
    const int32_t d = trie.depth[i];
    const uint8_t byte = trie.byte[i];
    if (static_cast<int32_t>(inner_alive.size()) <= d) {
      inner_alive.resize(d + 1);
      ended.resize(d + 1);
      path.resize(d + 1);
    }
    path[d] = byte;
    if (follow_depth > d - 1) follow_depth = d - 1;  // the path changed at depth d
    bool in = false;
    if (inner_alive[d - 1]) {
      inner.TruncateRows(d);
      in = inner.Advance(byte);
    }
    if (in) {
      inner_alive[d] = 1;
      ended[d] = ended[d - 1] || inner.CanEnd();
      for (int32_t k = trie.token_begin[i]; k < trie.token_begin[i + 1]; ++k) {
        accepted.push_back(trie.sorted_tokens[k]);
      }
      ++i;
      continue;
    }
    inner_alive[d] = 0;
    if (!ended[d - 1]) {  // the rule never ended on this path: follow adds nothing
      i = trie.subtree_end[i];
      continue;
    }
    sync_follow(d - 1);
    follow.TruncateRows(d);
    if (follow.Advance(byte)) {
      follow_depth = d;
      ended[d] = 1;
      add_uncertain(trie.token_begin[i], trie.token_begin[i + 1]);
      ++i;
    } else {
      i = trie.subtree_end[i];
    }
  }
  std::sort(accepted.begin(), accepted.end());
  int32_t vocab_size = tokenizer.vocab_size();
  int32_t num_normal = static_cast<int32_t>(trie.sorted_tokens.size());
  int32_t num_accepted = static_cast<int32_t>(accepted.size());
  int32_t num_not_accepted = num_normal - num_accepted;
  entry.num_accepted = num_accepted;
  // Smallest storage: a list costs 32 bits per id, the bitset one bit per vocabulary entry.
  int64_t bitset_words = (vocab_size + 31) / 32;
  if (num_accepted <= bitset_words && num_accepted <= num_not_accepted) {
    entry.storage = TokenMaskEntry::Storage::kAcceptedIds;
    entry.ids = std::move(accepted);
  } else if (num_not_accepted <= bitset_words) {
    entry.storage = TokenMaskEntry::Storage::kNotAcceptedIds;
    std::vector<uint32_t> mark(bitset_words, 0);
    for (int32_t t : accepted) mark[t >> 5] |= 1u << (t & 31);
    for (int32_t t : trie.sorted_tokens) {
      if (!(mark[t >> 5] >> (t & 31) & 1)) entry.ids.push_back(t);
    }
    std::sort(entry.ids.begin(), entry.ids.end());
  } else {
    entry.storage = TokenMaskEntry::Storage::kAcceptedBitset;
    entry.bitset.assign(bitset_words, 0);
    for (int32_t t : accepted) entry.bitset[t >> 5] |= 1u << (t & 31);
  }
  entry.ids.shrink_to_fit();
  entry.uncertain.shrink_to_fit();
  return entry;
}

}  // namespace xg2
