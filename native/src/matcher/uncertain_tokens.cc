// GrammarMatcher's decision of the uncertain tokens: those whose acceptance depends on what
// follows a rule's completion in its caller. Each (rule, origin) pending completion is
// walked once from its real continuation, and the walk is kept while the rule goes on.
#include <algorithm>
#include <climits>

#include "matcher/grammar_matcher.h"
#include "support/token_bits.h"

namespace xg2 {

namespace {

constexpr size_t kSeenBefore = size_t{1} << (sizeof(size_t) * 8 - 1);

// Whether every token below trie node i (0: the whole trie) is allowed already, by the
// accepted sets or another item's walk: a parser walk there could only set bits that are
// set. Rows with many items of one state (a value parsed under several contexts, a union's
// alternatives) repeat the same suffixes.
bool SuffixesAllowed(const SuffixTrie& trie, int32_t i, const uint32_t* words) {
  for (int32_t k = trie.token_begin[i], end = trie.token_begin[trie.subtree_end[i]]; k < end; ++k) {
    if (!HasTokenBit(words, trie.tokens[k])) return false;
  }
  return true;
}

}  // namespace

void GrammarMatcher::DecideUncertainTokens(uint32_t* words) {
  // For each (rule, origin), build the real continuation of the rule once and walk the
  // tokens (k = 0) and suffixes (k >= 1) after which it may complete.
  std::sort(pending_.begin(), pending_.end(), [](const Pending& a, const Pending& b) {
    if (a.rule != b.rule) return a.rule < b.rule;
    if (a.origin != b.origin) return a.origin < b.origin;
    if (a.entry != b.entry) return a.entry < b.entry;
    return a.recheck_len < b.recheck_len;  // the strictest first: duplicates walk it only
  });
  pending_.erase(std::unique(pending_.begin(), pending_.end(),
                             [](const Pending& a, const Pending& b) {
                               return a.rule == b.rule && a.origin == b.origin && a.entry == b.entry;
                             }),
                 pending_.end());
  const bool keep_walks = !compiled_->automaton()->has_token_budgets;
  for (size_t gi = 0; gi < pending_.size();) {
    size_t gj = gi;
    while (gj < pending_.size() && pending_[gj].rule == pending_[gi].rule &&
           pending_[gj].origin == pending_[gi].origin) {
      ++gj;
    }
    // Walks kept whole go in as they are. The others are walked here: a completion seen for
    // the first time as before (skipping what other items allowed), one seen again whole,
    // and kept, so only a completion that lasts (a string in progress) pays for a whole walk.
    std::vector<size_t>& to_walk = scratch_to_walk_;
    to_walk.clear();
    bool walk_whole = false;
    for (size_t k = gi; k < gj; ++k) {
      CompletionWalk* kept = keep_walks ? FindCompletionWalk(pending_[k]) : nullptr;
      if (kept != nullptr && kept->whole) {
        for (int32_t t : kept->tokens) SetTokenBit(words, t);
        fill_stats_.uncertain_tokens += static_cast<int64_t>(kept->tokens.size());
        continue;
      }
      // (Seen before: walked whole below; the flag rides in the index's top bit.)
      to_walk.push_back(kept != nullptr ? (k | kSeenBefore) : k);
      walk_whole = walk_whole || kept != nullptr;
    }
    bool open = walk_whole;
    for (size_t k : to_walk) {
      open = open || !SuffixesAllowed(pending_[k & ~kSeenBefore].entry->uncertain_suffixes, 0, words);
    }
    if (!open) {  // another item decided them all: no completion row to build
      for (size_t k : to_walk) {
        if (keep_walks) KeepCompletionWalk(pending_[k & ~kSeenBefore], false, {});
      }
      gi = gj;
      continue;
    }
    const int32_t rows0 = parser_.num_rows();
    const bool pushed = parser_.PushCompletionRow(pending_[gi].rule, pending_[gi].origin);
    const int32_t rows_ctx = parser_.num_rows();
    for (size_t k : to_walk) {
      const Pending& p = pending_[k & ~kSeenBefore];
      if (k & kSeenBefore) {
        WalkAndKeepSuffixes(p, pushed ? rows_ctx : -1, words);
        continue;
      }
      if (pushed) WalkSuffixes(p.entry->uncertain_suffixes, rows_ctx, words, p.recheck_len);
      if (keep_walks) KeepCompletionWalk(p, false, {});  // seen once
    }
    parser_.TruncateRows(rows0);
    gi = gj;
  }
}

GrammarMatcher::CompletionWalk* GrammarMatcher::FindCompletionWalk(const Pending& p) {
  for (CompletionWalk& w : completion_walks_) {
    if (w.rule == p.rule && w.origin == p.origin && w.entry == p.entry && w.recheck_len == p.recheck_len) return &w;
  }
  return nullptr;
}

void GrammarMatcher::KeepCompletionWalk(const Pending& p, bool whole, std::vector<int32_t> tokens) {
  if (CompletionWalk* kept = FindCompletionWalk(p)) {
    kept->whole = whole;
    kept->tokens = std::move(tokens);
    return;
  }
  if (completion_walks_.size() == kMaxCompletionWalks) completion_walks_.erase(completion_walks_.begin());
  completion_walks_.push_back({p.rule, p.origin, p.entry, p.recheck_len, whole, std::move(tokens)});
}

void GrammarMatcher::WalkAndKeepSuffixes(const Pending& p, int32_t rows_ctx, uint32_t* words) {
  std::vector<int32_t> tokens;
  if (rows_ctx >= 0) {  // (else no caller waits for the rule there: nothing is accepted)
    const SuffixTrie& trie = p.entry->uncertain_suffixes;
    if (scratch_walk_.size() != static_cast<size_t>(compiled_->mask_cache().num_words())) {
      scratch_walk_.assign(compiled_->mask_cache().num_words(), 0);
    }
    WalkSuffixes(trie, rows_ctx, scratch_walk_.data(), p.recheck_len);
    // The walk set only bits of the trie's tokens: read them off, leaving the row zeroed.
    for (int32_t t : trie.tokens) {
      if (!HasTokenBit(scratch_walk_.data(), t)) continue;
      ClearTokenBit(scratch_walk_.data(), t);
      tokens.push_back(t);
      SetTokenBit(words, t);
    }
  }
  KeepCompletionWalk(p, true, std::move(tokens));
}

void GrammarMatcher::ForgetCompletionWalksFrom(int32_t rows) {
  // A walk depends on rows 0..origin: it goes once row origin is popped.
  completion_walks_.erase(std::remove_if(completion_walks_.begin(), completion_walks_.end(),
                                         [rows](const CompletionWalk& w) { return w.origin >= rows; }),
                          completion_walks_.end());
}

void GrammarMatcher::WalkSuffixes(const SuffixTrie& trie, int32_t rows_ctx, uint32_t* words, int32_t max_token_len) {
  const auto& tok = *compiled_->tokenizer();
  const int32_t n = trie.num_nodes();
  int32_t i = 1;
  while (i < n) {
    if (SuffixesAllowed(trie, i, words)) {
      i = trie.subtree_end[i];
      continue;
    }
    if (!AdvanceTrieNode(rows_ctx, trie.depth[i], trie.byte[i])) {
      i = trie.subtree_end[i];
      continue;
    }
    for (int32_t k = trie.token_begin[i]; k < trie.token_begin[i + 1]; ++k) {
      int32_t t = trie.tokens[k];
      // Tokens at or over max_token_len are re-checked from the real row instead.
      if (max_token_len != INT32_MAX && static_cast<int32_t>(tok.token_bytes(t).size()) >= max_token_len) {
        continue;
      }
      SetTokenBit(words, t);
    }
    fill_stats_.uncertain_tokens += trie.token_begin[i + 1] - trie.token_begin[i];
    ++i;
  }
}

}  // namespace xg2
