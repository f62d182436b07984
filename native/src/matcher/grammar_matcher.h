// GrammarMatcher: the per-request state (Earley parser with byte history and token history)
// and the per-step operations: fill the next-token bitmask, accept tokens, roll back, fork.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/grammar_compiler.h"
#include "matcher/active_temperature.h"
#include "matcher/capture_recorder.h"
#include "parser/earley_parser.h"

namespace xg2 {

class GrammarMatcher {
 public:
  // stop_token_ids empty: the tokenizer's stop tokens.
  // default_temperature: the temperature when the parse is inside no rule with one (none:
  // Temperature() is then empty there). Throws Error(kInvalidArgument) unless it is finite
  // and >= 0.
  GrammarMatcher(std::shared_ptr<CompiledGrammar> compiled, std::vector<int32_t> stop_token_ids,
                 bool terminate_without_stop_token, std::optional<float> default_temperature = std::nullopt);

  // Returns false (state unchanged) if the token would break the structure. Throws
  // Error(kMatcherState) after termination and Error(kInvalidArgument) for ids outside the
  // model vocabulary.
  bool AcceptToken(int32_t token_id);
  // Accepts tokens[0..n) in order, up to the first one the grammar rejects or through the
  // one that terminates it; returns how many were accepted (0 if already terminated). Every
  // id is range-checked first (Error(kInvalidArgument), nothing accepted).
  int32_t AcceptTokens(const int32_t* tokens, int64_t n);
  // The length of the prefix of tokens[0..n) that AcceptTokens would accept; the state is
  // unchanged (the accepted steps are rolled back).
  int32_t CountValidTokens(const int32_t* tokens, int64_t n);
  // Accepts raw bytes as one history step; false (state unchanged) if not a valid continuation.
  bool AcceptString(const std::string& bytes);
  // Writes the allowed-token bitmask into `words` (num_words >= ceil(vocab_size / 32); extra
  // words are zeroed). Returns true if some token of the vocabulary is disallowed. Throws
  // Error(kMatcherState) after a stop token was accepted, as xgrammar does.
  bool FillNextTokenBitmask(int32_t* words, int64_t num_words);
  // xgrammar's semantics: a stop token was accepted, or, with terminate_without_stop_token,
  // the input so far is complete (more may still be accepted while the grammar continues).
  bool IsTerminated() const { return stop_accepted_ || (terminate_without_stop_token_ && parser_.CanEnd()); }
  // Nothing more is accepted: a stop token was accepted, or, with
  // terminate_without_stop_token, the input is complete and nothing can follow.
  bool HasEnded() const {
    return stop_accepted_ || (terminate_without_stop_token_ && parser_.CanEnd() && !parser_.CanContinue());
  }
  // Whether a stop token was accepted (fills then throw, as in xgrammar).
  bool StopAccepted() const { return stop_accepted_; }
  // The input so far is a complete sentence (a stop token would be accepted).
  bool IsCompleted() const { return parser_.CanEnd(); }
  void Reset();
  // The sampling temperature the parse asks for now (see matcher/active_temperature.h): the
  // innermost rule temperature on the current parse, the largest when paths disagree, else
  // the default. Empty when neither applies.
  std::optional<float> Temperature();
  // True once, the first time Temperature() met paths that disagree (the caller warns).
  bool TakeTemperatureConflict() {
    bool pending = temperature_conflict_pending_;
    temperature_conflict_pending_ = false;
    return pending;
  }
  const std::optional<float>& default_temperature() const { return default_temperature_; }
  // The spans of the captured rules' completions (xgrammar's get_captures) as (name, bytes),
  // in completion order; with deduplicate, only the last (longest) completion of each
  // occurrence. Recorded by accepts (not by fills); rollback and reset forget theirs.
  std::vector<std::pair<std::string, std::string>> Captures(bool deduplicate) const;
  // Undoes the last n accepted steps (tokens or strings). Throws if n exceeds the history.
  void Rollback(int32_t n);
  std::unique_ptr<GrammarMatcher> Fork() const;
  // The longest string every continuation must start with (cut to whole UTF-8 characters).
  std::string FindJumpForwardString();
  // The forced continuation as tokens: greedy longest matches of normal, non-stop tokens
  // over the forced bytes (not cut to characters), without the last one when a longer such
  // token extends it (the model may still write that longer token). Empty once the input
  // can end or the matcher terminated. The state is unchanged.
  std::vector<int32_t> FindJumpForwardTokens();
  // The matcher's state as text (history length, termination, parser rows and the items of
  // the last row): equal for equal states, for tests that check a call changed nothing.
  std::string DebugState() const;
  int32_t num_accepted_steps() const { return static_cast<int32_t>(history_.size()); }
  const std::vector<int32_t>& stop_token_ids() const { return stop_token_ids_; }
  const std::shared_ptr<CompiledGrammar>& compiled() const { return compiled_; }
  // What the last FillNextTokenBitmask did (for profiling and benchmarks).
  struct FillStats {
    int32_t scannable_states = 0;
    int64_t uncertain_tokens = 0;  // candidates re-checked by the parser
    int64_t walk_nodes = 0;        // trie nodes the parser advanced over
  };
  const FillStats& last_fill_stats() const { return fill_stats_; }
  int64_t last_row_size() const { return parser_.last_row_end() - parser_.last_row_begin(); }

 private:
  // Set while a call runs: a second thread using the same matcher gets Error(kMatcherState)
  // instead of a data race. Copies (fork) start free.
  struct InUse {
    mutable std::atomic<bool> busy{false};
    InUse() = default;
    InUse(const InUse&) {}
    InUse& operator=(const InUse&) { return *this; }
  };
  class UseGuard {
   public:
    UseGuard(const InUse& flag, const char* call);
    ~UseGuard() { flag_.busy.store(false, std::memory_order_release); }
    UseGuard(const UseGuard&) = delete;
    UseGuard& operator=(const UseGuard&) = delete;

   private:
    const InUse& flag_;
  };
  InUse in_use_;
  // Puts the matcher back where a call started if the call throws (a std::bad_alloc part way
  // through a step): the parser rows it pushed, the step bookkeeping, the captures and the
  // by-id result kept for the next fill. So the caller may go on with the matcher.
  class StepRestore {
   public:
    explicit StepRestore(GrammarMatcher* matcher);
    ~StepRestore();
    StepRestore(const StepRestore&) = delete;
    StepRestore& operator=(const StepRestore&) = delete;

   private:
    GrammarMatcher& m_;
    int32_t rows_;
    size_t history_;
    bool stop_accepted_;
    int32_t tokens_accepted_;
    int uncaught_;
  };
  struct Step {
    int32_t rows_before;
    bool stop_accepted_before;
    int32_t tokens_before;
  };
  bool IsStopToken(int32_t id) const;
  // Throws MatcherStateError after a stop token was accepted, naming `call`.
  void CheckNotStopped(const char* call) const;
  // Captures: after an accept that added the rows from rows_before on, reading `text`; and
  // dropping what rows from `rows` on recorded.
  void RecordCaptures(int32_t rows_before, const std::string& text);
  void ForgetCapturesFrom(int32_t rows);
  // Advances the parser over a token's bytes (its text or its virtual string); false (parser
  // unchanged) if they do not fit.
  bool AdvanceToken(const std::string& bytes);
  // Advances the parser by token `token_id` (its text, or by id, or entering a token region
  // mid-token), from `rows` rows; false (nothing added) when no reading fits.
  bool AdvanceByToken(int32_t token_id, int32_t rows, const std::string& text);
  // Whether reading stop token `token_id` as grammar text (or by id) completes the grammar
  // (xgrammar's stop token as a terminal); the parser is left as it was.
  bool StopTokenCompletesGrammar(int32_t token_id);
  // Undoes a trial advance: the rows from `rows` on and what was memoised for them.
  void DropRowsFrom(int32_t rows);
  // The bookkeeping of a token accepted from `rows` rows on (history, count, captures, the
  // end without a stop token); true.
  bool AcceptedToken(int32_t rows, const std::string& text);
  // Fill helpers: walk a suffix trie from a pushed context row (rows_ctx rows), or the
  // vocabulary trie from the last row for some tokens, setting the bits of accepted tokens.
  void WalkSuffixes(const SuffixTrie& trie, int32_t rows_ctx, uint32_t* words, int32_t max_token_len);
  // One step of a trie walk that started at rows_base rows: the parser moved to the node at
  // `depth` (its parent's row) and advanced by its byte; false if the byte does not fit.
  bool AdvanceTrieNode(int32_t rows_base, int32_t depth, uint8_t byte);
  // The steps of FillNextTokenBitmask, in order.
  void CheckRowWidth(int64_t num_words) const;
  // Closes the rule occurrences whose token budget ran out (xgrammar's max_tokens), so the
  // mask, and the accept that follows, leave them.
  void EnforceTokenBudgets();
  int32_t CollectRowEntries();  // returns the shortest re-check length (kNoRecheck: none)
  void ApplyAcceptedSets(uint32_t* words);
  void ApplyLoopBoundEntries(uint32_t* words);
  void DecideUncertainTokens(uint32_t* words);
  bool RowNeedsMasking(const uint32_t* words) const;
  void ApplyEntry(const TokenMaskEntry& e, uint32_t* words);
  void WalkTokens(const std::vector<int32_t>& sorted_indices, uint32_t* words);
  // Sets the bits of the tokens a token-level grammar node (Token, ExcludeToken, a special
  // token) accepts by id now.
  void AddTokensById(uint32_t* words);
  // AddTokensById's ids with high byte base >> 16, from the row after the lead and high bytes.
  void AddTokenIdsBelow(int32_t base, int32_t num_tokens, uint32_t* words);
  // The last row's states with an edge on a virtual token's lead byte, sorted, into *out.
  void LeadReadingStates(std::vector<int32_t>* out) const;
  // The ids the parser reads now, over the whole vocabulary (see AddTokensById).
  ByIdTokenCache::Words ReadTokensById(int32_t num_tokens);
  // Clears by_id_scans_only_ if the last row holds an item a closure could add to.
  void NoteClosures();
  // Tokens a token-level free region takes whole after their first bytes finish the text
  // before it (see MidTokenEntryBytes): a walk of the token trie with the parser, only as deep
  // as the automaton's mid_token_distance lets an entry lie inside a token.
  void AddTokensEnteringMidToken(uint32_t* words);
  void MarkMidTokenEntries(int32_t node, uint32_t* words);
  // The ids not allowed in `words` (stop tokens included) when at most 64; false otherwise.
  bool FewTokensLeft(const uint32_t* words, std::vector<int32_t>* left) const;
  // The last row's least mid_token_distance.
  int32_t MidTokenEntryDistance() const;
  // accept_token's last reading: the longest text prefix (1 .. all but one byte) after which
  // a free region takes the token; false (parser unchanged) if none.
  bool AdvanceMidTokenEntry(int32_t token_id, const std::string& text);
  // Stop tokens are decided by the stop rule alone, whatever the mask cache decided for their
  // text (an override may make a text token a stop token): allowed where the input can end
  // (never with terminate_without_stop_token), or where reading one completes the grammar.
  void ApplyStopTokens(uint32_t* words);
  // The bytes every continuation starts with (at most kMaxJumpForwardBytes), not cut.
  std::string ForcedBytes();
  // The smallest non-stop token id among trie.sorted_tokens[begin, end), or -1.
  int32_t FirstUsableToken(int32_t begin, int32_t end) const;
  struct Pending {
    RuleId rule;
    int32_t origin;
    const TokenMaskEntry* entry;
    int32_t recheck_len;  // suffix hits of tokens this long are left to the re-check
  };
  // A walk of an entry's uncertain suffixes from the completion of (rule, origin): the tokens
  // it accepts depend on rows 0..origin alone, fixed until a rollback pops row origin, so a
  // string value or free text in progress repeats it at every step (a big object's completion
  // row costs hundreds of microseconds to build). Kept unless the grammar has token budgets
  // (whose commits change completions); the oldest goes beyond kMaxCompletionWalks.
  struct CompletionWalk {
    RuleId rule;
    int32_t origin;
    const TokenMaskEntry* entry;
    int32_t recheck_len;
    bool whole;                   // false: seen once, walked skipping what others allowed
    std::vector<int32_t> tokens;  // whole: every token the walk accepts
  };
  static constexpr size_t kMaxCompletionWalks = 64;
  std::vector<CompletionWalk> completion_walks_;
  std::vector<uint32_t> scratch_walk_;  // all zeros between walks (emptied by StepRestore)
  std::vector<size_t> scratch_to_walk_;
  CompletionWalk* FindCompletionWalk(const Pending& p);
  void KeepCompletionWalk(const Pending& p, bool whole, std::vector<int32_t> tokens);
  void ForgetCompletionWalksFrom(int32_t rows);
  // Walks `p`'s suffixes from the completion row (rows_ctx rows) into a zeroed row, keeps the
  // tokens it accepts and sets them in `words`.
  void WalkAndKeepSuffixes(const Pending& p, int32_t rows_ctx, uint32_t* words);
  std::vector<uint32_t> scratch_item_;
  std::vector<int32_t> scratch_long_;
  std::vector<Pending> pending_;
  std::vector<const TokenMaskEntry*> seen_entries_;
  struct RecheckEntry {
    const TokenMaskEntry* entry;
    // The loop's star entry (any count): what it refuses, no count takes.
    const TokenMaskEntry* any_count;
    int32_t recheck_len;
    bool refused_only;  // TokenMaskCache::LoopChoice::refused_only
  };
  std::vector<RecheckEntry> recheck_entries_;
  // Character budgets (matcher/char_budgets.cc). An item of a budgeted rule below its minimum,
  // or whose maximum a token could pass, is masked here instead of by its entry alone: the
  // entry's accepted tokens (only those that fit what is left, near the maximum) and a parser
  // walk of its completions, which must end within the budget.
  struct CharBudgetItem {
    const TokenMaskEntry* entry;
    int32_t dec;  // the item's JSON decoder state
    // An accepted token starting c characters: refused if c > refuse_above; kept as accepted
    // if keep_from <= c <= keep_up_to; else decided by the parser (INT64_MAX / 0: no bound).
    int64_t refuse_above;
    int64_t keep_up_to;
    int64_t keep_from;
  };
  std::vector<CharBudgetItem> char_budget_items_;
  std::vector<int32_t> char_budget_walk_;  // trie indices of the tokens the parser decides
  // Whether `item` (of a budgeted rule, entry `e`) needs that; if so it is noted.
  bool NeedsCharBudget(const EarleyItem& item, const TokenMaskEntry* e);
  void ApplyCharBudgetItems(uint32_t* words);
  void WalkCharBudgetTokens(uint32_t* words);
  // Adds to scratch_long_ the shorter completions of loops below a near minimum.
  void AddShortCompletionTokens();
  // Drops from scratch_long_ the long tokens that every re-checked loop refuses at any count.
  void KeepLongTokensSomeCountTakes();

  std::shared_ptr<CompiledGrammar> compiled_;
  std::optional<float> default_temperature_;
  ActiveTemperatureFinder temperature_finder_;
  bool temperature_conflict_seen_ = false;     // warned once per matcher, as xgrammar
  bool temperature_conflict_pending_ = false;  // seen, not yet taken by the caller
  std::vector<int32_t> stop_token_ids_;
  bool terminate_without_stop_token_;
  EarleyParser parser_;
  std::vector<Step> history_;
  bool stop_accepted_ = false;
  int32_t tokens_accepted_ = 0;         // tokens in history_ (strings and stop tokens not counted)
  CaptureRecorder captures_;            // automaton().has_captures
  bool budget_relaxed_warned_ = false;  // warned once per matcher, as xgrammar
  FillStats fill_stats_;
  // Scratch for mask filling.
  std::vector<uint32_t> scratch_bits_;
  // AddTokensById's last result and the lead-reading states it came from ({-1}: none kept,
  // since a closure made it depend on more than those states). A result that depends on the
  // states alone is also shared through the compiled grammar's ByIdTokenCache.
  std::vector<int32_t> by_id_states_;
  std::vector<int32_t> scratch_states_;  // AddTokensById's current states
  std::vector<int32_t> scratch_left_;    // AddTokensEnteringMidToken's tokens not yet allowed
  ByIdTokenCache::Words by_id_words_;
  const ByIdTokens* by_id_applied_ = nullptr;  // the by-id tokens this fill added (or null)
  bool by_id_scans_only_ = true;
};

}  // namespace xg2
