// Masks of rules with a character budget (Rule::json_min_chars / json_max_chars).
//
// A state's entry is built without the budget (entries do not know positions). Its accepted
// tokens stay inside the rule for their whole length, so the characters such a token starts
// depend only on its bytes and the item's JSON decoder state: far from the maximum every one
// fits, and near it those that start more characters than are left are cleared. Its uncertain
// tokens complete the rule inside the token: the completion must come within the budget (at
// least the minimum, at most the maximum), which the parser checks, so below the minimum or
// near the maximum they are walked from the real row instead of from a completion row.
#include <algorithm>
#include <climits>

#include "automata/char_budget_dist.h"
#include "matcher/grammar_matcher.h"
#include "support/token_bits.h"

namespace xg2 {

bool GrammarMatcher::NeedsCharBudget(const EarleyItem& item, const TokenMaskEntry* e) {
  const GrammarAutomaton& g = *compiled_->automaton();
  const RuleId rule = g.state_rule[item.state];
  const CharCount count = parser_.item_chars(&item);
  const int32_t max = g.rule_json_max_chars[rule];
  const int64_t remaining = max < 0 ? INT64_MAX : int64_t{max} - count.chars;
  const int64_t room = g.rule_char_room[rule];
  // A token of n bytes starts at most n characters; after it the rule needs up to `room` more.
  const bool near_max = remaining < int64_t{compiled_->mask_cache().max_token_bytes()} + room;
  const int64_t to_min = int64_t{g.rule_json_min_chars[rule]} - count.chars;
  if (!near_max && to_min <= 0) return false;
  // Below the minimum, a token may end where the rule cannot grow enough (a bounded tail).
  const int32_t growth = g.rule_char_least_growth[rule];
  const int64_t keep_from = (to_min > 0 && growth != kCharDistUnbounded) ? to_min - growth : 0;
  char_budget_items_.push_back({e, count.dec, near_max ? remaining : INT64_MAX, near_max ? remaining - room : INT64_MAX,
                                std::max<int64_t>(keep_from, 0)});
  return true;
}

void GrammarMatcher::ApplyCharBudgetItems(uint32_t* words) {
  TokenMaskCache& cache = compiled_->mask_cache();
  const int32_t vocab_words = cache.num_words();
  const TokenTrie& trie = compiled_->tokenizer()->trie();
  char_budget_walk_.clear();
  for (const CharBudgetItem& b : char_budget_items_) {
    if (b.keep_up_to == INT64_MAX && b.keep_from == 0) {  // below the minimum, every length holds
      ApplyEntry(*b.entry, words);
      continue;
    }
    scratch_item_.assign(vocab_words, 0);
    ApplyEntry(*b.entry, scratch_item_.data());
    const std::vector<uint16_t>& chars = cache.TokenJsonChars(b.dec);
    auto decide = [&](int32_t t) {
      const int64_t c = chars[t];
      if (c > b.refuse_above) {
        ClearTokenBit(scratch_item_.data(), t);
      } else if (c > b.keep_up_to || c < b.keep_from) {
        ClearTokenBit(scratch_item_.data(), t);
        char_budget_walk_.push_back(trie.sorted_index[t]);
      }
    };
    if (b.keep_from == 0 && b.keep_up_to + 1 >= TokenTrie::kLongTokenBytes) {
      // Only tokens longer than keep_up_to bytes can start more characters: the long ones.
      for (const auto& [len, index] : trie.long_tokens) {
        if (len <= b.keep_up_to) break;
        const int32_t t = trie.sorted_tokens[index];
        if (HasTokenBit(scratch_item_.data(), t)) decide(t);
      }
    } else {
      const auto num_tokens = static_cast<int32_t>(chars.size());
      for (int32_t w = 0; w < vocab_words; ++w) {
        for (uint32_t bits = scratch_item_[w]; bits != 0; bits &= bits - 1) {
          const int32_t t = (w << kTokenWordShift) + __builtin_ctz(bits);
          if (t < num_tokens) decide(t);
        }
      }
    }
    for (int32_t w = 0; w < vocab_words; ++w) words[w] |= scratch_item_[w];
  }
}

void GrammarMatcher::WalkCharBudgetTokens(uint32_t* words) {
  if (char_budget_items_.empty()) return;
  const auto& trie = compiled_->tokenizer()->trie();
  std::vector<int32_t>& candidates = char_budget_walk_;
  for (const CharBudgetItem& b : char_budget_items_) {
    for (int32_t t : b.entry->uncertain_suffixes.tokens) candidates.push_back(trie.sorted_index[t]);
  }
  candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                  [&](int32_t k) { return HasTokenBit(words, trie.sorted_tokens[k]); }),
                   candidates.end());
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  WalkTokens(candidates, words);
}

}  // namespace xg2
