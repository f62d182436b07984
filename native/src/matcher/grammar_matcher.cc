#include "matcher/grammar_matcher.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <tuple>

#include "automata/mid_token_distance.h"
#include "support/token_bits.h"
#include "xg2/errors.h"

namespace xg2 {

GrammarMatcher::GrammarMatcher(std::shared_ptr<CompiledGrammar> compiled, std::vector<int32_t> stop_token_ids,
                               bool terminate_without_stop_token, std::optional<float> default_temperature)
    : compiled_(std::move(compiled)),
      default_temperature_(default_temperature),
      stop_token_ids_(std::move(stop_token_ids)),
      terminate_without_stop_token_(terminate_without_stop_token),
      parser_(compiled_->automaton(), compiled_->automaton()->root_start()) {
  if (default_temperature_ && !(std::isfinite(*default_temperature_) && *default_temperature_ >= 0.0f)) {
    throw Error(ErrorKind::kInvalidArgument, "default_temperature must be a finite non-negative number, not " +
                                                 std::to_string(*default_temperature_));
  }
  const TokenizerInfo& tok = *compiled_->tokenizer();
  if (stop_token_ids_.empty()) stop_token_ids_ = tok.stop_token_ids();
  for (int32_t id : stop_token_ids_) {
    if (id < 0 || id >= tok.vocab_size()) {
      throw Error(ErrorKind::kInvalidArgument, "stop token id " + std::to_string(id) +
                                                   " is outside the vocabulary [0, " +
                                                   std::to_string(tok.vocab_size()) + ")");
    }
  }
}

bool GrammarMatcher::IsStopToken(int32_t id) const {
  return std::find(stop_token_ids_.begin(), stop_token_ids_.end(), id) != stop_token_ids_.end();
}

bool GrammarMatcher::AcceptToken(int32_t token_id) {
  UseGuard guard(in_use_, "accept_token");
  StepRestore restore(this);
  const TokenizerInfo& tok = *compiled_->tokenizer();
  if (token_id < 0 || token_id >= tok.vocab_size()) {
    throw Error(ErrorKind::kInvalidArgument, "token id " + std::to_string(token_id) +
                                                 " is outside the vocabulary [0, " + std::to_string(tok.vocab_size()) +
                                                 ")");
  }
  // After a stop token nothing more is accepted, as in xgrammar.
  if (stop_accepted_) return false;
  const int32_t rows = parser_.num_rows();
  const std::string& text = tok.token_bytes(token_id);
  if (IsStopToken(token_id)) {
    // A stop token ends the output where the grammar can end (never with
    // terminate_without_stop_token), or, as in xgrammar, is read by id (Token(...)) or, when
    // the tokenizer has it as text (a stop set by override_stop_tokens), as text, where that
    // completes the grammar; either way it terminates. A stop token of the tokenizer is
    // never text: its text is not in the output the caller detokenizes.
    if (!terminate_without_stop_token_ && parser_.CanEnd()) {
      history_.push_back({rows, stop_accepted_, tokens_accepted_});
      stop_accepted_ = true;
      return true;
    }
    if (!AdvanceByToken(token_id, rows, text)) return false;
    if (!parser_.CanEnd()) {
      DropRowsFrom(rows);
      return false;
    }
    AcceptedToken(rows, text);
    stop_accepted_ = true;
    return true;
  }
  return AdvanceByToken(token_id, rows, text) && AcceptedToken(rows, text);
}

bool GrammarMatcher::AdvanceByToken(int32_t token_id, int32_t rows, const std::string& text) {
  const TokenizerInfo& tok = *compiled_->tokenizer();
  if (token_id >= tok.num_tokens()) return false;
  // A token is read as its text, or by id as its virtual string (see VirtualTokenBytes), which
  // only token-level grammar nodes read (Token(...), ExcludeToken(...), special tokens). Where
  // both readings fit, the parse goes on from both (as xgrammar merges them): a text token
  // may close a literal and also be a free token of an ExcludeToken region.
  const bool text_token = tok.is_text_token(token_id);
  EarleyParser::RowSnapshot by_id;
  if (compiled_->automaton()->scans_virtual_tokens && AdvanceToken(VirtualTokenBytes(token_id))) {
    if (!text_token) return true;
    by_id = parser_.SnapshotLastRow();
    parser_.TruncateRows(rows);
  }
  const bool by_text = text_token && AdvanceToken(text);
  if (!by_text) {
    if (by_id.row >= 0 && AdvanceToken(VirtualTokenBytes(token_id))) return true;
    return text_token && AdvanceMidTokenEntry(token_id, text);
  } else if (by_id.row >= 0 && !compiled_->automaton()->has_captures) {
    // (Captures read one derivation of the token's rows, so a capturing grammar keeps the text.)
    parser_.MergeIntoLastRow(by_id, rows);
  }
  return true;
}

bool GrammarMatcher::StopTokenCompletesGrammar(int32_t token_id) {
  const int32_t rows = parser_.num_rows();
  const bool completes =
      AdvanceByToken(token_id, rows, compiled_->tokenizer()->token_bytes(token_id)) && parser_.CanEnd();
  DropRowsFrom(rows);
  return completes;
}

void GrammarMatcher::DropRowsFrom(int32_t rows) {
  if (parser_.num_rows() <= rows) return;  // nothing was added (the common case of a fill)
  parser_.TruncateRows(rows);
  // Rows made by the trial may have been memoised; the next ones made at these indices differ.
  temperature_finder_.ForgetRowsFrom(rows);
  ForgetCompletionWalksFrom(rows);
}

bool GrammarMatcher::AcceptedToken(int32_t rows, const std::string& text) {
  history_.push_back({rows, false, tokens_accepted_});
  ++tokens_accepted_;
  RecordCaptures(rows, text);
  return true;
}

bool GrammarMatcher::AdvanceMidTokenEntry(int32_t token_id, const std::string& text) {
  if (compiled_->automaton()->mid_token_distance.empty() || text.size() < 2) return false;
  const int32_t rows = parser_.num_rows();
  parser_.set_row_token(tokens_accepted_);
  int32_t k = 0;
  while (k + 1 < static_cast<int32_t>(text.size()) && parser_.Advance(static_cast<uint8_t>(text[k]))) ++k;
  // The longest prefix first, as xgrammar takes the latest row where the region could start.
  const std::string entry = MidTokenEntryBytes(token_id);
  const auto* data = reinterpret_cast<const uint8_t*>(entry.data());
  for (; k >= 1; --k) {
    parser_.TruncateRows(rows + k);
    if (!parser_.AdvanceBytes(data, entry.size() - 1)) continue;
    parser_.set_row_token(tokens_accepted_ + 1);
    if (parser_.Advance(data[entry.size() - 1])) return true;
    parser_.set_row_token(tokens_accepted_);
  }
  parser_.TruncateRows(rows);
  return false;
}

bool GrammarMatcher::AdvanceToken(const std::string& bytes) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  // The rows inside the token belong to it; the row after its last byte to the next token.
  parser_.set_row_token(tokens_accepted_);
  if (bytes.empty()) return true;
  const int32_t rows = parser_.num_rows();
  if (!parser_.AdvanceBytes(data, bytes.size() - 1)) return false;
  parser_.set_row_token(tokens_accepted_ + 1);
  if (parser_.Advance(data[bytes.size() - 1])) return true;
  parser_.TruncateRows(rows);
  return false;
}

int32_t GrammarMatcher::AcceptTokens(const int32_t* tokens, int64_t n) {
  const int32_t vocab = compiled_->tokenizer()->vocab_size();
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab) {
      throw Error(ErrorKind::kInvalidArgument, "token id " + std::to_string(tokens[i]) + " at position " +
                                                   std::to_string(i) + " is outside the vocabulary [0, " +
                                                   std::to_string(vocab) + ")");
    }
  }
  int32_t accepted = 0;
  while (accepted < n && !IsTerminated() && AcceptToken(tokens[accepted])) ++accepted;
  return accepted;
}

int32_t GrammarMatcher::CountValidTokens(const int32_t* tokens, int64_t n) {
  StepRestore restore(this);  // a throw part way leaves no token accepted
  const int32_t accepted = AcceptTokens(tokens, n);
  Rollback(accepted);
  return accepted;
}

bool GrammarMatcher::AcceptString(const std::string& bytes) {
  UseGuard guard(in_use_, "accept_string");
  StepRestore restore(this);
  if (stop_accepted_) return false;
  // A string has no token boundaries, so it never matches a token read by id: its virtual
  // string's lead byte 0xFF is not text (as xgrammar, whose strings never match token edges).
  if (bytes.find(static_cast<char>(kVirtualTokenLead)) != std::string::npos) return false;
  int32_t rows = parser_.num_rows();
  // A string has no token boundaries: token budgets do not count it (its rows' first token
  // is the next one).
  parser_.set_row_token(tokens_accepted_);
  if (!parser_.AdvanceBytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())) {
    return false;
  }
  history_.push_back({rows, false, tokens_accepted_});
  RecordCaptures(rows, bytes);
  return true;
}

void GrammarMatcher::Reset() {
  UseGuard guard(in_use_, "reset");
  // A budget commit may have pruned the first row: start again from the grammar's own (made
  // before anything changes, in case it throws).
  if (compiled_->automaton()->has_token_budgets) {
    parser_ = EarleyParser(compiled_->automaton(), compiled_->automaton()->root_start());
  } else {
    parser_.TruncateRows(1);
  }
  temperature_finder_.ForgetRowsFrom(parser_.num_rows());
  history_.clear();
  stop_accepted_ = false;
  tokens_accepted_ = 0;
  ForgetCapturesFrom(1);
  completion_walks_.clear();
}

void GrammarMatcher::Rollback(int32_t n) {
  UseGuard guard(in_use_, "rollback");
  if (n < 0) throw Error(ErrorKind::kInvalidArgument, "rollback count must be >= 0");
  if (n > static_cast<int32_t>(history_.size())) {
    throw Error(ErrorKind::kMatcherState, "cannot roll back " + std::to_string(n) + " steps: only " +
                                              std::to_string(history_.size()) + " accepted");
  }
  if (n == 0) return;
  const Step& step = history_[history_.size() - n];
  parser_.TruncateRows(step.rows_before);
  temperature_finder_.ForgetRowsFrom(parser_.num_rows());  // rows made again may differ
  stop_accepted_ = step.stop_accepted_before;
  tokens_accepted_ = step.tokens_before;
  history_.resize(history_.size() - n);
  ForgetCapturesFrom(parser_.num_rows());
  ForgetCompletionWalksFrom(parser_.num_rows());
}

void GrammarMatcher::RecordCaptures(int32_t rows_before, const std::string& text) {
  captures_.Record(*compiled_->automaton(), parser_, rows_before, text);
}

void GrammarMatcher::ForgetCapturesFrom(int32_t rows) {
  if (compiled_->automaton()->has_captures) captures_.ForgetFrom(rows);
}

std::vector<std::pair<std::string, std::string>> GrammarMatcher::Captures(bool deduplicate) const {
  return captures_.Captures(*compiled_->automaton(), deduplicate);
}

GrammarMatcher::UseGuard::UseGuard(const InUse& flag, const char* call) : flag_(flag) {
  if (flag_.busy.exchange(true, std::memory_order_acquire)) {
    throw Error(ErrorKind::kMatcherState, std::string(call) +
                                              ": the matcher is in use by another thread (a matcher is not "
                                              "thread-safe: fork() one per thread)");
  }
}

GrammarMatcher::StepRestore::StepRestore(GrammarMatcher* matcher)
    : m_(*matcher),
      rows_(matcher->parser_.num_rows()),
      history_(matcher->history_.size()),
      stop_accepted_(matcher->stop_accepted_),
      tokens_accepted_(matcher->tokens_accepted_),
      uncaught_(std::uncaught_exceptions()) {}

GrammarMatcher::StepRestore::~StepRestore() {
  if (std::uncaught_exceptions() <= uncaught_) return;
  // Only cuts back (no allocation). The parser's rows are whole: Advance undoes a row it was
  // building when it threw.
  if (m_.parser_.num_rows() > rows_) m_.parser_.TruncateRows(rows_);
  m_.temperature_finder_.ForgetRowsFrom(rows_);
  m_.history_.resize(history_);
  m_.stop_accepted_ = stop_accepted_;
  m_.tokens_accepted_ = tokens_accepted_;
  m_.ForgetCapturesFrom(rows_);
  m_.by_id_words_.reset();
  m_.by_id_states_.clear();
  m_.by_id_applied_ = nullptr;
  m_.ForgetCompletionWalksFrom(rows_);
  m_.scratch_walk_.clear();  // a walk cut short may have left bits set
}

std::string GrammarMatcher::DebugState() const {
  std::string out = "steps=" + std::to_string(history_.size()) + " terminated=" + (stop_accepted_ ? "1" : "0") +
                    " rows=" + std::to_string(parser_.num_rows()) + " last_row=[";
  for (const EarleyItem* it = parser_.last_row_begin(); it != parser_.last_row_end(); ++it) {
    if (it != parser_.last_row_begin()) out += ' ';
    out += std::to_string(it->state) + '@' + std::to_string(it->origin);
  }
  out += "]";
  const std::string budgets = parser_.DescribeBudgets();
  return budgets.empty() ? out : out + " budgets=[" + budgets + "]";
}

std::unique_ptr<GrammarMatcher> GrammarMatcher::Fork() const {
  UseGuard guard(in_use_, "fork");
  return std::unique_ptr<GrammarMatcher>(new GrammarMatcher(*this));
}

namespace {

constexpr int32_t kNoRecheck = INT32_MAX;  // a loop context with no bound near: nothing re-checked
// EarleyParser::NextBytes: the 256 byte values as a bitset of 64-bit words.
constexpr int kByteSetWords = 4;
constexpr int kByteSetWordBits = 64;
inline bool ByteSetHas(const uint64_t* set, int b) { return (set[b / kByteSetWordBits] >> (b % kByteSetWordBits)) & 1; }
// The longest forced continuation find_jump_forward_string returns (a grammar may force far more).
constexpr size_t kMaxJumpForwardBytes = size_t{1} << 16;

// Whether the bits of ids [begin, end) are all set.
bool AllIdsSet(const uint32_t* words, int32_t begin, int32_t end) {
  if (begin >= end) return true;
  const int32_t first_word = begin >> kTokenWordShift, last_word = (end - 1) >> kTokenWordShift;
  auto bits_from = [](int32_t bit) { return ~((1u << bit) - 1); };                          // bits [bit, 32)
  auto bits_below = [](int32_t bit) { return bit == 32 ? 0xFFFFFFFFu : (1u << bit) - 1; };  // [0, bit)
  if (first_word == last_word) {
    const uint32_t want = bits_from(begin & kTokenBitMask) & bits_below(end - (last_word << kTokenWordShift));
    return (words[first_word] & want) == want;
  }
  const uint32_t head = bits_from(begin & kTokenBitMask);
  const uint32_t tail = bits_below(end - (last_word << kTokenWordShift));
  if ((words[first_word] & head) != head || (words[last_word] & tail) != tail) return false;
  for (int32_t w = first_word + 1; w < last_word; ++w) {
    if (words[w] != 0xFFFFFFFFu) return false;
  }
  return true;
}

}  // namespace

bool GrammarMatcher::FillNextTokenBitmask(int32_t* out_words, int64_t num_words) {
  UseGuard guard(in_use_, "fill_next_token_bitmask");
  StepRestore restore(this);
  CheckRowWidth(num_words);  // a bad buffer is an argument error in any state
  CheckNotStopped("fill_next_token_bitmask");
  auto* words = reinterpret_cast<uint32_t*>(out_words);
  std::memset(words, 0, sizeof(uint32_t) * static_cast<size_t>(num_words));
  fill_stats_ = FillStats();
  by_id_applied_ = nullptr;
  EnforceTokenBudgets();
  const int32_t recheck_len = CollectRowEntries();
  ApplyAcceptedSets(words);
  ApplyLoopBoundEntries(words);
  ApplyCharBudgetItems(words);
  DecideUncertainTokens(words);
  // Long tokens in counted loops near a bound: the parser decides them from the real row.
  if (recheck_len != kNoRecheck) {
    compiled_->mask_cache().LongTokens(recheck_len, &scratch_long_);
    AddShortCompletionTokens();
    // A token some entry or walk allowed already is allowed (a mask is a union of exact parts).
    const auto& sorted = compiled_->tokenizer()->trie().sorted_tokens;
    scratch_long_.erase(std::remove_if(scratch_long_.begin(), scratch_long_.end(),
                                       [&](int32_t k) { return HasTokenBit(words, sorted[k]); }),
                        scratch_long_.end());
    KeepLongTokensSomeCountTakes();
    std::sort(scratch_long_.begin(), scratch_long_.end());
    scratch_long_.erase(std::unique(scratch_long_.begin(), scratch_long_.end()), scratch_long_.end());
    WalkTokens(scratch_long_, words);
  }
  WalkCharBudgetTokens(words);
  AddTokensById(words);
  AddTokensEnteringMidToken(words);
  ApplyStopTokens(words);
  return RowNeedsMasking(words);
}

void GrammarMatcher::EnforceTokenBudgets() {
  if (!compiled_->automaton()->has_token_budgets) return;
  std::vector<EarleyParser::Occurrence> forced;
  switch (parser_.EnforceTokenBudgets(tokens_accepted_, &forced)) {
    case EarleyParser::BudgetOutcome::kNone: break;
    case EarleyParser::BudgetOutcome::kEnforced:
      temperature_finder_.ForgetRowsFrom(parser_.num_rows() - 1);  // the last row changed
      if (!forced.empty() && compiled_->automaton()->has_captures) {
        captures_.RecordBodyCloses(*compiled_->automaton(), parser_, forced);
      }
      break;
    case EarleyParser::BudgetOutcome::kRelaxed:
      if (!budget_relaxed_warned_) {
        // xgrammar's note, once per matcher: a budget that cannot close where it runs out.
        std::fprintf(stderr,
                     "[xg2_jax] WARNING: a max_tokens rule consumed its token budget where its body cannot end; "
                     "the budget is relaxed until the rule can end.\n");
        budget_relaxed_warned_ = true;
      }
      break;
  }
}

void GrammarMatcher::CheckNotStopped(const char* call) const {
  if (!stop_accepted_) return;
  throw Error(ErrorKind::kMatcherState,
              std::string("GrammarMatcher has terminated after accepting the stop token, but ") + call +
                  " was called: nothing can follow; reset() or rollback() first");
}

void GrammarMatcher::ApplyStopTokens(uint32_t* words) {
  const bool can_end = parser_.CanEnd() && !terminate_without_stop_token_;
  for (int32_t id : stop_token_ids_) {
    if (can_end || StopTokenCompletesGrammar(id)) {
      SetTokenBit(words, id);
    } else {
      ClearTokenBit(words, id);
    }
  }
}

void GrammarMatcher::CheckRowWidth(int64_t num_words) const {
  const int32_t vocab_words = compiled_->mask_cache().num_words();
  if (num_words < vocab_words) {
    throw Error(ErrorKind::kInvalidArgument, "bitmask row has " + std::to_string(num_words) +
                                                 " words; the vocabulary of " +
                                                 std::to_string(compiled_->tokenizer()->vocab_size()) +
                                                 " tokens needs " + std::to_string(vocab_words));
  }
}

int32_t GrammarMatcher::CollectRowEntries() {
  const GrammarAutomaton& g = *compiled_->automaton();
  TokenMaskCache& cache = compiled_->mask_cache();
  pending_.clear();
  seen_entries_.clear();
  recheck_entries_.clear();
  char_budget_items_.clear();
  int32_t recheck_len = kNoRecheck;
  auto note_entry = [&](const TokenMaskEntry* e) {
    if (std::find(seen_entries_.begin(), seen_entries_.end(), e) == seen_entries_.end()) {
      seen_entries_.push_back(e);
    }
  };
  for (const EarleyItem* it = parser_.last_row_begin(); it != parser_.last_row_end(); ++it) {
    const int32_t s = it->state;
    if (!g.has_byte_edges(s)) continue;
    const RuleId rule = g.state_rule[s];
    const int32_t rep = g.child_repeat[rule];
    if (rep < 0) {
      const TokenMaskEntry* e = &cache.Get(s);
      if (g.HasCharBudget(rule) && NeedsCharBudget(*it, e)) continue;
      note_entry(e);
      // The rule's completion from the top item is the end of the input: nothing follows.
      if (e->has_uncertain() && it->origin >= 0) pending_.push_back({rule, it->origin, e, kNoRecheck});
      continue;
    }
    // One iteration of a counted loop: its entry depends on the loop's count, held by the
    // loop items of the row where the iteration started.
    const auto& r = g.repeats[rep];
    for (const EarleyItem* p = parser_.row_items_begin(it->origin); p != parser_.row_items_end(it->origin); ++p) {
      if (!g.is_loop_state(p->state) || g.RepeatOf(p->state).rule != r.rule) continue;
      if (g.RuleEdgeTarget(p->state, rule) < 0) continue;
      const TokenMaskCache::LoopChoice choice = cache.LoopContext(p->state);
      const TokenMaskEntry* e = &cache.Get(s, choice.loop_state);
      if (choice.recheck_len == kNoRecheck) {
        note_entry(e);
      } else {
        const TokenMaskEntry* any_count = choice.loop_state == r.star() ? e : &cache.Get(s, r.star());
        recheck_entries_.push_back({e, any_count, choice.recheck_len, choice.refused_only});
        recheck_len = std::min(recheck_len, choice.recheck_len);
      }
      if (e->has_uncertain() && p->origin >= 0) {
        pending_.push_back({r.rule, p->origin, e, choice.recheck_len});
      }
    }
  }
  fill_stats_.scannable_states =
      static_cast<int32_t>(seen_entries_.size() + recheck_entries_.size() + char_budget_items_.size());
  return recheck_len;
}

void GrammarMatcher::ApplyAcceptedSets(uint32_t* words) {
  // One core that prefers overwriting (the broad states: string contents) is written
  // straight into the zeroed row; the others are ORed in.
  TokenMaskCache& cache = compiled_->mask_cache();
  const int32_t vocab_words = cache.num_words();
  auto in_place = std::find_if(seen_entries_.begin(), seen_entries_.end(),
                               [](const TokenMaskEntry* e) { return e->core->PrefersOverwrite(); });
  if (in_place != seen_entries_.end()) {
    (*in_place)->core->WriteInto(words, cache.normal_token_bitset(), vocab_words);
  }
  for (auto e = seen_entries_.begin(); e != seen_entries_.end(); ++e) {
    if (e != in_place) ApplyEntry(**e, words);
  }
}

void GrammarMatcher::ApplyLoopBoundEntries(uint32_t* words) {
  // Entries near a counted loop's bound: applied without the long tokens, which the parser
  // re-checks (FillNextTokenBitmask's last walk).
  TokenMaskCache& cache = compiled_->mask_cache();
  const int32_t vocab_words = cache.num_words();
  const auto& sorted = compiled_->tokenizer()->trie().sorted_tokens;
  for (const RecheckEntry& r : recheck_entries_) {
    if (r.refused_only) {  // its long tokens hold as they are
      ApplyEntry(*r.entry, words);
      continue;
    }
    scratch_item_.assign(vocab_words, 0);
    ApplyEntry(*r.entry, scratch_item_.data());
    cache.LongTokens(r.recheck_len, &scratch_long_);
    for (int32_t k : scratch_long_) ClearTokenBit(scratch_item_.data(), sorted[k]);
    for (int32_t w = 0; w < vocab_words; ++w) words[w] |= scratch_item_[w];
  }
}

void GrammarMatcher::AddShortCompletionTokens() {
  // Below a minimum, tokens under kLongTokenBytes that may complete the loop: the star form's
  // completions at least the re-check length long (the shorter ones would end it too early).
  const TokenizerInfo& tok = *compiled_->tokenizer();
  const auto& sorted_index = tok.trie().sorted_index;
  for (const RecheckEntry& r : recheck_entries_) {
    if (!r.refused_only || r.recheck_len >= TokenTrie::kLongTokenBytes) continue;
    for (int32_t t : r.any_count->uncertain_suffixes.tokens) {
      const auto len = static_cast<int32_t>(tok.token_bytes(t).size());
      if (len >= r.recheck_len && len < TokenTrie::kLongTokenBytes) scratch_long_.push_back(sorted_index[t]);
    }
  }
}

void GrammarMatcher::KeepLongTokensSomeCountTakes() {
  // The other items' tokens are in the row already, exactly; a long token is left to the parser
  // only if some loop's star entry (the union over its counts, completions pruned by FOLLOW)
  // takes it. Below a string's minimum that leaves the few long tokens that may close it,
  // instead of every long token the no-completion entry refuses (whitespace runs and such).
  if (scratch_long_.empty()) return;  // (no row of the vocabulary to build for nothing)
  TokenMaskCache& cache = compiled_->mask_cache();
  scratch_item_.assign(cache.num_words(), 0);
  for (size_t k = 0; k < recheck_entries_.size(); ++k) {
    const TokenMaskEntry* any_count = recheck_entries_[k].any_count;
    bool seen = false;
    for (size_t j = 0; j < k && !seen; ++j) seen = recheck_entries_[j].any_count == any_count;
    if (seen) continue;
    ApplyEntry(*any_count, scratch_item_.data());
    for (int32_t t : any_count->uncertain_suffixes.tokens) SetTokenBit(scratch_item_.data(), t);
  }
  const auto& sorted = compiled_->tokenizer()->trie().sorted_tokens;
  scratch_long_.erase(std::remove_if(scratch_long_.begin(), scratch_long_.end(),
                                     [&](int32_t k) { return !HasTokenBit(scratch_item_.data(), sorted[k]); }),
                      scratch_long_.end());
}

bool GrammarMatcher::RowNeedsMasking(const uint32_t* words) const {
  // Needs masking unless every id of the vocabulary is allowed.
  const int32_t vocab_size = compiled_->tokenizer()->vocab_size();
  const ByIdTokens* by_id = by_id_applied_;
  if (by_id == nullptr || by_id->many_open) return !AllIdsSet(words, 0, vocab_size);
  // The words the by-id tokens filled are all ones, but for stop tokens cleared since: the
  // others are read, and the ids past the tokenizer's (vocabulary padding).
  const int32_t num_tokens = compiled_->tokenizer()->num_tokens();
  for (int32_t w : by_id->open_words) {
    if (!AllIdsSet(words, w << kTokenWordShift, std::min((w + 1) << kTokenWordShift, num_tokens))) return true;
  }
  for (int32_t id : stop_token_ids_) {
    if (id < num_tokens && !HasTokenBit(words, id)) return true;
  }
  return !AllIdsSet(words, num_tokens, vocab_size);
}

void GrammarMatcher::ApplyEntry(const TokenMaskEntry& e, uint32_t* words) {
  TokenMaskCache& cache = compiled_->mask_cache();
  e.core->OrInto(words, cache.normal_token_bitset(), cache.num_words(), &scratch_bits_);
}

bool GrammarMatcher::AdvanceTrieNode(int32_t rows_base, int32_t depth, uint8_t byte) {
  parser_.TruncateRows(rows_base + depth - 1);
  ++fill_stats_.walk_nodes;
  return parser_.Advance(byte);
}

void GrammarMatcher::WalkTokens(const std::vector<int32_t>& sorted_indices, uint32_t* words) {
  // A walk of the vocabulary trie from the parser's last row, entering only subtrees that hold
  // one of the (trie-ordered) tokens to decide.
  const TokenTrie& trie = compiled_->tokenizer()->trie();
  const int32_t rows0 = parser_.num_rows();
  const int32_t num_nodes = trie.num_nodes();
  size_t next = 0;  // first candidate not yet decided
  int32_t i = 1;
  while (i < num_nodes && next < sorted_indices.size()) {
    const int32_t subtree_end = trie.token_begin[trie.subtree_end[i]];
    while (next < sorted_indices.size() && sorted_indices[next] < trie.token_begin[i]) ++next;
    if (next == sorted_indices.size()) break;
    if (sorted_indices[next] >= subtree_end) {
      i = trie.subtree_end[i];
      continue;
    }
    if (!AdvanceTrieNode(rows0, trie.depth[i], trie.byte[i])) {
      i = trie.subtree_end[i];
      continue;
    }
    for (; next < sorted_indices.size() && sorted_indices[next] < trie.token_begin[i + 1]; ++next) {
      const int32_t t = trie.sorted_tokens[sorted_indices[next]];
      SetTokenBit(words, t);
      ++fill_stats_.uncertain_tokens;
    }
    ++i;
  }
  parser_.TruncateRows(rows0);
}

// Tokens read by id: the virtual strings the parser can take now. They are walked as a trie of
// their id bytes, advancing the parser over the first two and reading the last from the
// parser's next-byte set (a byte there always advances), so a mask costs at most
// 1 + 256 * (num_tokens >> 16) + ... advances however many ids ExcludeToken allows.
void GrammarMatcher::AddTokensById(uint32_t* words) {
  if (!compiled_->automaton()->scans_virtual_tokens) return;  // text grammars: nothing to do
  const int32_t num_tokens = compiled_->tokenizer()->num_tokens();
  if (num_tokens == 0) return;
  // Where reading the ids only scans, they depend on the last row's states alone (not on
  // the items' origins): a free region repeats them at every step, so the last result is kept,
  // and other matchers of the grammar reach the same states, so it is shared with them.
  std::vector<int32_t>& states = scratch_states_;  // reused: no allocation per fill
  LeadReadingStates(&states);
  if (states.empty()) return;  // nothing reads a token by id here
  const size_t num_words = static_cast<size_t>((num_tokens + 31) >> kTokenWordShift);
  if (!by_id_words_ || states != by_id_states_) {
    ByIdTokenCache& shared = compiled_->by_id_cache();
    ByIdTokenCache::Words found = shared.Find(states);
    if (!found) {
      found = ReadTokensById(num_tokens);
      if (by_id_scans_only_) {
        shared.Insert(states, found);
      } else {
        states.assign(1, -1);  // a closure made the result depend on more than the states
      }
    }
    // Kept together, once nothing more can throw.
    by_id_words_ = std::move(found);
    by_id_states_.swap(states);
  }
  const uint32_t* kept = by_id_words_->bits.data();
  for (size_t w = 0; w < num_words; ++w) words[w] |= kept[w];
  by_id_applied_ = by_id_words_.get();
  // Stop tokens among them are set or cleared by ApplyStopTokens, which follows.
}

// The ids the parser can read now, over the whole vocabulary; clears by_id_scans_only_ if a
// closure took part (then the ids depend on more than the lead-reading states).
ByIdTokenCache::Words GrammarMatcher::ReadTokensById(int32_t num_tokens) {
  std::vector<uint32_t> words(static_cast<size_t>((num_tokens + 31) >> kTokenWordShift), 0);
  by_id_scans_only_ = true;
  const int32_t rows = parser_.num_rows();
  parser_.Advance(kVirtualTokenLead);
  NoteClosures();
  uint64_t high[kByteSetWords];
  parser_.NextBytes(high);
  for (int32_t h = 0; h <= ((num_tokens - 1) >> 16); ++h) {
    if (!ByteSetHas(high, h)) continue;
    parser_.Advance(static_cast<uint8_t>(h));
    NoteClosures();
    AddTokenIdsBelow(h << 16, num_tokens, words.data());
    parser_.TruncateRows(rows + 1);
  }
  parser_.TruncateRows(rows);
  return std::make_shared<const ByIdTokens>(std::move(words), num_tokens);
}

void GrammarMatcher::LeadReadingStates(std::vector<int32_t>* out) const {
  const GrammarAutomaton& a = parser_.automaton();
  std::vector<int32_t>& states = *out;
  states.clear();
  for (const EarleyItem* it = parser_.last_row_begin(); it != parser_.last_row_end(); ++it) {
    if (!a.is_virtual(it->state) && a.ByteTarget(it->state, kVirtualTokenLead) >= 0) states.push_back(it->state);
  }
  std::sort(states.begin(), states.end());
  states.erase(std::unique(states.begin(), states.end()), states.end());
}

void GrammarMatcher::NoteClosures() {
  const GrammarAutomaton& a = parser_.automaton();
  for (const EarleyItem* it = parser_.last_row_begin(); it != parser_.last_row_end(); ++it) {
    if (a.is_virtual(it->state) || a.closure_trivial[it->state] != 3) by_id_scans_only_ = false;
  }
}

// Inside a virtual token string the parser only scans: its states there neither complete nor
// predict. So the middle and low id bytes are read off the automaton's byte edges, with the
// low byte sets of equal target sets shared (an ExcludeToken set sends almost every middle
// byte to one state), instead of a parser step per middle byte; a target that would need a
// closure goes through the parser.
void GrammarMatcher::AddTokenIdsBelow(int32_t base, int32_t num_tokens, uint32_t* words) {
  const GrammarAutomaton& a = parser_.automaton();
  std::vector<int32_t> from, to, shared_to;
  for (const EarleyItem* it = parser_.last_row_begin(); it != parser_.last_row_end(); ++it) {
    if (!a.is_virtual(it->state)) from.push_back(it->state);
  }
  std::sort(from.begin(), from.end());
  from.erase(std::unique(from.begin(), from.end()), from.end());
  uint64_t shared_low[kByteSetWords] = {0, 0, 0, 0};
  for (int32_t m = 0; m < 256 && base + (m << 8) < num_tokens; ++m) {
    to.clear();
    bool needs_closure = false;
    for (int32_t s : from) {
      const int32_t t = a.ByteTarget(s, static_cast<uint8_t>(m));
      if (t < 0) continue;
      to.push_back(t);
      needs_closure |= a.closure_trivial[t] != 3;  // predicts a rule, or may complete
    }
    if (to.empty()) continue;
    uint64_t low[kByteSetWords];
    if (needs_closure) {
      by_id_scans_only_ = false;
      const int32_t rows = parser_.num_rows();
      parser_.Advance(static_cast<uint8_t>(m));
      parser_.NextBytes(low);
      parser_.TruncateRows(rows);
    } else {
      std::sort(to.begin(), to.end());
      to.erase(std::unique(to.begin(), to.end()), to.end());
      if (to != shared_to) {
        shared_to = to;
        std::fill(shared_low, shared_low + kByteSetWords, 0);
        for (int32_t t : to) a.AddByteEdges(t, shared_low);
      }
      std::copy(shared_low, shared_low + kByteSetWords, low);
    }
    // Ids base | m << 8 | l for the bytes l in `low`: 256 ids, eight whole bitmask words.
    const int32_t first = base + (m << 8);
    for (int32_t j = 0; j < 8 && first + 32 * j < num_tokens; ++j) {
      uint32_t bits = static_cast<uint32_t>(low[j >> 1] >> (32 * (j & 1)));
      const int32_t left = num_tokens - (first + 32 * j);
      if (left < 32) bits &= (1u << left) - 1;
      words[(first >> kTokenWordShift) + j] |= bits;
    }
  }
}

int32_t GrammarMatcher::MidTokenEntryDistance() const {
  const std::vector<uint8_t>& dist = compiled_->automaton()->mid_token_distance;
  int32_t best = kFarMidTokenEntry;
  for (const EarleyItem* it = parser_.last_row_begin(); it != parser_.last_row_end() && best > 0; ++it) {
    best = std::min<int32_t>(best, parser_.automaton().is_virtual(it->state) ? 0 : dist[it->state]);
  }
  return best;
}

void GrammarMatcher::AddTokensEnteringMidToken(uint32_t* words) {
  if (compiled_->automaton()->mid_token_distance.empty()) return;
  const TokenTrie& trie = compiled_->tokenizer()->trie();
  // An entry follows k >= 1 text bytes of a token of more than k bytes.
  const int32_t deepest = trie.max_token_bytes - 1;
  if (MidTokenEntryDistance() > deepest) return;
  const int32_t rows0 = parser_.num_rows();
  // In a free region most of the vocabulary is allowed already; with few tokens left, each is
  // tried as accept_token tries it, instead of walking the trie (whose checks below each node
  // read the whole vocabulary).
  std::vector<int32_t>& left = scratch_left_;  // reused: no allocation per fill
  left.clear();
  if (FewTokensLeft(words, &left)) {
    const TokenizerInfo& tok = *compiled_->tokenizer();
    for (int32_t t : left) {
      if (!tok.is_text_token(t) || IsStopToken(t)) continue;
      if (AdvanceMidTokenEntry(t, tok.token_bytes(t))) SetTokenBit(words, t);
      parser_.TruncateRows(rows0);
    }
    return;
  }
  parser_.set_row_token(tokens_accepted_);
  // Depth-first over the trie nodes with tokens below them, as far as the text goes and an
  // entry may still lie within reach. Each frame keeps the bytes its row can read next, so a
  // child whose byte cannot follow is passed over without a parser step (a text byte never
  // enters a virtual token's string, so these are all the bytes that advance); a wide node's
  // children are read from the trie's packed list.
  struct Frame {
    int32_t node;
    int32_t child;  // the next child, by sibling hops (a narrow node)
    const TokenTrie::Child* wide;
    const TokenTrie::Child* wide_end;
    uint64_t next[kByteSetWords];
  };
  auto open_frame = [&](int32_t node) {
    Frame f;
    f.node = node;
    f.child = node + 1;
    std::tie(f.wide, f.wide_end) = trie.WideChildren(node);
    parser_.NextBytes(f.next);
    return f;
  };
  // The frame's next child whose byte can follow (-1: none left).
  auto next_child = [&](Frame& f) {
    if (f.wide != nullptr) {
      for (; f.wide != f.wide_end; ++f.wide) {
        if (ByteSetHas(f.next, f.wide->byte)) return (f.wide++)->node;
      }
      return -1;
    }
    while (f.child < trie.subtree_end[f.node]) {
      const int32_t c = f.child;
      f.child = trie.subtree_end[c];
      if (ByteSetHas(f.next, trie.byte[c])) return c;
    }
    return -1;
  };
  std::vector<Frame> stack{open_frame(0)};
  while (!stack.empty()) {
    const int32_t c = next_child(stack.back());
    if (c < 0) {
      stack.pop_back();
      if (!stack.empty()) parser_.TruncateRows(rows0 + trie.depth[stack.back().node]);
      continue;
    }
    // Nothing to find below c: no longer token, or every one allowed already (most of a free
    // text's vocabulary).
    const int32_t* below = trie.sorted_tokens.data() + trie.token_begin[c + 1];
    const int32_t* below_end = trie.sorted_tokens.data() + trie.token_begin[trie.subtree_end[c]];
    if (std::all_of(below, below_end, [&](int32_t t) { return HasTokenBit(words, t) || IsStopToken(t); })) continue;
    if (!parser_.Advance(trie.byte[c])) continue;
    Frame below_c = open_frame(c);
    if (ByteSetHas(below_c.next, kMidTokenLead)) MarkMidTokenEntries(c, words);
    if (trie.depth[c] < deepest && MidTokenEntryDistance() <= deepest - trie.depth[c]) {
      stack.push_back(below_c);
    } else {
      parser_.TruncateRows(rows0 + trie.depth[c] - 1);
    }
  }
  parser_.TruncateRows(rows0);
}

bool GrammarMatcher::FewTokensLeft(const uint32_t* words, std::vector<int32_t>* left) const {
  constexpr size_t kFew = 64;
  const int32_t num_tokens = compiled_->tokenizer()->num_tokens();
  const int32_t num_words = (num_tokens + 31) >> kTokenWordShift;
  auto collect = [&](int32_t w) {
    uint32_t missing = ~words[w];
    const int32_t first = w << kTokenWordShift;
    if (num_tokens - first < 32) missing &= (1u << (num_tokens - first)) - 1;
    for (; missing != 0; missing &= missing - 1) {
      if (left->size() == kFew) return false;
      left->push_back(first + __builtin_ctz(missing));
    }
    return true;
  };
  // After the by-id tokens, only the words they left open can lack a token.
  if (by_id_applied_ != nullptr && !by_id_applied_->many_open) {
    for (int32_t w : by_id_applied_->open_words) {
      if (!collect(w)) return false;
    }
    return true;
  }
  // In a free region nearly every word is all ones: they are skipped eight at a time.
  constexpr int32_t kStride = 8;
  int32_t w = 0;
  for (; w + kStride < num_words; w += kStride) {
    uint32_t all = words[w];
    for (int32_t k = 1; k < kStride; ++k) all &= words[w + k];
    if (all == 0xFFFFFFFFu) continue;
    for (int32_t k = w; k < w + kStride; ++k) {
      if (!collect(k)) return false;
    }
  }
  for (; w < num_words; ++w) {
    if (!collect(w)) return false;
  }
  return true;
}

// The tokens longer than node c's prefix, below it, that the region entered at c takes.
void GrammarMatcher::MarkMidTokenEntries(int32_t c, uint32_t* words) {
  const TokenTrie& trie = compiled_->tokenizer()->trie();
  const int32_t rows = parser_.num_rows();
  if (!parser_.Advance(kMidTokenLead)) return;
  for (int32_t k = trie.token_begin[c + 1]; k < trie.token_begin[trie.subtree_end[c]]; ++k) {
    const int32_t t = trie.sorted_tokens[k];
    if (HasTokenBit(words, t) || IsStopToken(t)) continue;
    const std::string id = MidTokenEntryBytes(t);
    if (parser_.AdvanceBytes(reinterpret_cast<const uint8_t*>(id.data()) + 1, id.size() - 1)) {
      SetTokenBit(words, t);
      parser_.TruncateRows(rows + 1);
    }
  }
  parser_.TruncateRows(rows);
}

std::string GrammarMatcher::FindJumpForwardString() {
  UseGuard guard(in_use_, "find_jump_forward_string");
  StepRestore restore(this);
  std::string out = ForcedBytes();
  // Cut an incomplete trailing UTF-8 sequence.
  size_t n = out.size(), k = n;
  while (k > 0 && (static_cast<uint8_t>(out[k - 1]) & 0xC0) == 0x80) --k;
  if (k > 0) {
    uint8_t lead = static_cast<uint8_t>(out[k - 1]);
    size_t need = lead < 0x80 ? 1 : (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3 : 4;
    if (n - (k - 1) < need) out.resize(k - 1);
  }
  return out;
}

std::string GrammarMatcher::ForcedBytes() {
  std::string out;
  if (stop_accepted_) return out;
  const int32_t rows0 = parser_.num_rows();
  while (out.size() < kMaxJumpForwardBytes && !parser_.CanEnd()) {
    uint64_t next[kByteSetWords];
    parser_.NextBytes(next);
    int count = 0, byte = -1;
    for (int w = 0; w < kByteSetWords; ++w) {
      count += __builtin_popcountll(next[w]);
      if (next[w] && byte < 0) byte = w * kByteSetWordBits + __builtin_ctzll(next[w]);
    }
    // A virtual special-token string (or a region's mid-token entry) is never text to jump over.
    if (count != 1 || byte >= kMidTokenLead || !parser_.Advance(static_cast<uint8_t>(byte))) break;
    out.push_back(static_cast<char>(byte));
  }
  parser_.TruncateRows(rows0);
  return out;
}

namespace {

// The child of trie node `node` reached by `b`, or -1 (children are in byte order).
int32_t TrieChild(const TokenTrie& trie, int32_t node, uint8_t b) {
  for (int32_t c = node + 1; c < trie.subtree_end[node]; c = trie.subtree_end[c]) {
    if (trie.byte[c] == b) return c;
    if (trie.byte[c] > b) break;
  }
  return -1;
}

}  // namespace

int32_t GrammarMatcher::FirstUsableToken(int32_t begin, int32_t end) const {
  const TokenTrie& trie = compiled_->tokenizer()->trie();
  int32_t best = -1;
  for (int32_t k = begin; k < end; ++k) {
    const int32_t t = trie.sorted_tokens[k];
    if (!IsStopToken(t) && (best < 0 || t < best)) best = t;
  }
  return best;
}

std::vector<int32_t> GrammarMatcher::FindJumpForwardTokens() {
  UseGuard guard(in_use_, "find_jump_forward_tokens");
  StepRestore restore(this);
  const std::string forced = ForcedBytes();
  const TokenTrie& trie = compiled_->tokenizer()->trie();
  std::vector<int32_t> tokens;
  int32_t last_node = -1;
  for (size_t pos = 0; pos < forced.size();) {
    // The longest usable token starting at pos.
    int32_t node = 0, best = -1, best_node = -1;
    size_t best_len = 0;
    for (size_t i = pos; i < forced.size(); ++i) {
      node = TrieChild(trie, node, static_cast<uint8_t>(forced[i]));
      if (node < 0) break;
      const int32_t t = FirstUsableToken(trie.token_begin[node], trie.token_begin[node + 1]);
      if (t >= 0) best = t, best_node = node, best_len = i + 1 - pos;
    }
    if (best < 0) break;  // forced bytes no token covers: never skipped
    tokens.push_back(best);
    last_node = best_node;
    pos += best_len;
  }
  // A longer token extending the last one: the model may write it, so the last is not forced.
  if (last_node >= 0 &&
      FirstUsableToken(trie.token_begin[last_node + 1], trie.token_begin[trie.subtree_end[last_node]]) >= 0) {
    tokens.pop_back();
  }
  return tokens;
}

std::optional<float> GrammarMatcher::Temperature() {
  UseGuard guard(in_use_, "temperature");
  ActiveTemperature active = temperature_finder_.Find(parser_, compiled_->rule_temperatures());
  if (active.conflict && !temperature_conflict_seen_) {
    temperature_conflict_seen_ = true;
    temperature_conflict_pending_ = true;
  }
  if (active.found) return active.value;
  return default_temperature_;
}

}  // namespace xg2
