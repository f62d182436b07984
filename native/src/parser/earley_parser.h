// Earley parser over the grammar automaton, one row per input byte.
//
// An item is (global DFA state, origin row). The parser's top item has origin -1: when it
// reaches a final state the row "can end" (the whole input so far is a complete sentence of
// the start rule). Rows are stored flat, so popping bytes (rollback) is a truncation and a
// copy of the parser (fork) is a few vector copies.
#pragma once

#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "automata/grammar_automaton.h"

namespace xg2 {

struct EarleyItem {
  int32_t state;
  int32_t origin;  // row where the item's rule started; -1 for the top item
};

// A character budget's count (Rule::json_min_chars / json_max_chars): the characters an item's
// occurrence has read and its JSON decoder state (automata/json_decoder.h); zero for items of
// other rules. An item's (state, origin) fixes its count (its rule's automaton is deterministic
// and reads no rule), so deduplication by (state, origin) holds.
struct CharCount {
  int32_t chars = 0;
  int32_t dec = 0;  // JsonDec (0: a character boundary)
};

// The callers' graph above the last row's items, with the occurrences a token budget closes
// (parser/token_budget.cc).
class OccurrenceGraph;

class EarleyParser {
 public:
  // Starts with the closure of the single top item (start_state, -1).
  EarleyParser(std::shared_ptr<const GrammarAutomaton> automaton, int32_t start_state);

  // A parser for what may follow a completed `rule` in any context: its first row holds the
  // continuations of every call site (origin -2); when one of those completes, its own
  // callers' continuations follow, and so on. This context-free FOLLOW over-approximation
  // lets the mask cache reject suffixes that no context could accept.
  static EarleyParser AfterRule(std::shared_ptr<const GrammarAutomaton> automaton, RuleId rule);

  // A parser for one iteration of a counted loop in progress at `state` (a state of the loop's
  // child rule), under the loop state `loop_state` (a virtual state): row 0 holds the loop
  // item as the top item, row 1 the iteration's item. CanEnd() means the loop may complete.
  static EarleyParser InLoop(std::shared_ptr<const GrammarAutomaton> automaton, int32_t state, int32_t loop_state);

  // Items of row r.
  const EarleyItem* row_items_begin(int32_t r) const { return items_.data() + row_begin_[r]; }
  const EarleyItem* row_items_end(int32_t r) const { return items_.data() + row_begin_[r + 1]; }

  // Pushes a zero-width row holding the continuations of the callers that wait in row
  // `origin` for `rule`, as if the rule had just completed. Returns false (nothing pushed)
  // if no item of that row waits for it.
  bool PushCompletionRow(RuleId rule, int32_t origin);

  // Consumes one byte. On success pushes a row and returns true; on failure leaves the
  // parser unchanged and returns false. A throw (std::bad_alloc) also leaves it unchanged.
  bool Advance(uint8_t byte);
  // Consumes bytes; on failure (or a throw) restores the state before the call and returns
  // false (rethrows).
  bool AdvanceBytes(const uint8_t* data, size_t size);
  // Drops the last n rows (n <= num_rows() - 1).
  void PopRows(int32_t n);
  // Truncates to the given number of rows (>= 1).
  void TruncateRows(int32_t rows) { PopRows(num_rows() - rows); }

  // Another reading of the input since row `shared_rows` - 1 (a token read by id as well as by
  // its text), as a closed last row made by Advance from that row: its items, and whether the
  // input could end there. Taken off (TruncateRows) before the other reading is advanced.
  struct RowSnapshot {
    std::vector<EarleyItem> items;
    std::vector<CharCount> chars;  // per item, when the grammar has character budgets
    int32_t row = -1;              // the row the snapshot was the last row of
    uint8_t can_end = 0;
  };
  RowSnapshot SnapshotLastRow() const;
  // Adds a snapshot's items to the (closed) last row, the union of two closed rows being
  // closed: items predicted in the snapshot's own row move to the last row, the others keep
  // their origin, which must lie before `shared_rows`. False (nothing changed) if an item
  // started inside the other reading.
  bool MergeIntoLastRow(const RowSnapshot& other, int32_t shared_rows);

  int32_t num_rows() const { return static_cast<int32_t>(row_begin_.size()) - 1; }
  // The character count of an item of this parser (zero unless its rule has a budget).
  CharCount item_chars(const EarleyItem* it) const {
    return tracks_chars_ ? item_chars_[static_cast<size_t>(it - items_.data())] : CharCount{};
  }
  bool CanEnd() const { return (row_can_end_.back() & 1) != 0; }
  // Items of the last row.
  const EarleyItem* last_row_begin() const { return items_.data() + row_begin_[num_rows() - 1]; }
  const EarleyItem* last_row_end() const { return items_.data() + items_.size(); }
  // True if the last row has an item with a byte edge (more input is possible).
  bool CanContinue() const;
  // Bitmap of bytes that can come next (256 bits).
  void NextBytes(uint64_t out[4]) const;
  // Token budgets (Rule::max_tokens; see parser/token_budget.cc). `first_token` is, for the
  // rows made from now on, the index (among accepted tokens) of the first token that may put
  // bytes after them: the token being scanned inside it, the next one after its last byte.
  // An occurrence predicted in such a row may consume tokens first_token .. first_token +
  // max_tokens - 1, so a token it shares with what came before counts.
  void set_row_token(int32_t first_token) { token_index_ = first_token; }
  enum class BudgetOutcome {
    kNone,      // no occurrence on the parse has run out of budget
    kEnforced,  // the last row lost the items of every occurrence that ran out
    kRelaxed,   // some ran out, but nothing else could continue or end here: kept this step
  };
  // A rule occurrence: the rule and the row where it started (-1: the top item's).
  struct Occurrence {
    RuleId rule;
    int32_t origin;
  };
  // Before token `next_token`: closes every occurrence that has consumed its budget (and
  // everything derived only through one), provided another item of the last row can go on
  // scanning or the input can end here; otherwise relaxes them for this step. A closed
  // occurrence never advances again: completions skip it (until rollback pops the row).
  // A closed suffix/stop occurrence (a marker split) with a budget of its own whose text so
  // far is a body completes here without its marker, as in xgrammar; those occurrences are
  // appended to `forced` when enforced.
  BudgetOutcome EnforceTokenBudgets(int32_t next_token, std::vector<Occurrence>* forced);
  // For the debug print: each budgeted occurrence among the last row's items, as
  // "budget_deadline=T (rule R@O)" with T the first token it may not consume.
  std::string DescribeBudgets() const;
  const GrammarAutomaton& automaton() const { return *g_; }
  const std::shared_ptr<const GrammarAutomaton>& automaton_ptr() const { return g_; }
  size_t MemoryBytes() const;

 private:
  struct EmptyTag {};
  EarleyParser(std::shared_ptr<const GrammarAutomaton> automaton, EmptyTag);
  // Advance's work: pushes row `row` (== num_rows()) read from the last one by `byte`.
  bool AdvanceRow(int32_t row, uint8_t byte);
  void AddItem(int32_t state, int32_t origin, CharCount chars = CharCount{});
  // The count after `item` (at items_[index]) reads `byte` into `target`; false if the JSON
  // decoder refuses the byte or its rule's budget can no longer be met after it (items of rules
  // without a budget: always true, zero).
  bool ScanChars(const EarleyItem& item, size_t index, uint8_t byte, int32_t target, CharCount* out) const;
  // Whether an item at a final state may complete its rule: a rule with a budget ends on a
  // character boundary with at least its minimum.
  bool MayComplete(const EarleyItem& item, size_t index) const;
  // Whether `item` (at items_[index]) may read `byte`, budgets included.
  bool MayScan(const EarleyItem& item, size_t index, uint8_t byte) const;
  void CloseRow(int32_t row);
  void GrowDedup();
  void NewRowStamp();
  // Completes `rule` started at row `origin`: advances every item there that waits on it.
  void Complete(RuleId rule, int32_t origin);
  // Leo's optimisation for right recursion: when exactly one item of row `origin` waits on
  // `rule` and advancing it gives a final state with no edges, that item's only effect is to
  // complete its own rule in turn. Such a chain of deterministic completions is followed to
  // its top, and only the top item enters the row (the intermediate ones would only complete
  // and have nothing to scan), so a right-recursive rule keeps rows of bounded size. Returns
  // the top item of the chain that starts with `first` (the one advanced item), memoised
  // per (rule, origin row).
  EarleyItem LeoTop(RuleId rule, int32_t origin, EarleyItem first);
  // The memoised top of (rule, origin), or {-1, 0} if none.
  EarleyItem FindLeo(RuleId rule, int32_t origin) const;
  // The one item of row `origin` that waits on `rule`, advanced, if it is a deterministic
  // completion (a final state without edges); else {-1, 0}.
  EarleyItem DeterministicAdvance(RuleId rule, int32_t origin) const;
  bool IsEdgelessFinal(int32_t state) const;
  void PopLeoEntries(int32_t rows);
  // Appends the bookkeeping of a row whose items are in place (begin offsets, end flag).
  void FinishRow(uint8_t can_end);
  // Cuts every per-row vector back to `rows` rows, also where a row was only partly added
  // (a throw while it was built); nothing here allocates.
  void RestoreRows(int32_t rows);
  // Whether the latest budget commit closed the occurrence (rule, origin).
  bool IsClosed(RuleId rule, int32_t origin) const;
  size_t BudgetCommitBytes() const;
  // EnforceTokenBudgets' steps (parser/token_budget.cc): the closed suffix/stop occurrences
  // that may end through their body here, the callers' items their completions add, the last
  // row closed again with those items in it, and the pruning of the closed occurrences.
  OccurrenceGraph LastRowOccurrences(int32_t next_token) const;
  std::vector<Occurrence> BodyCloses(const OccurrenceGraph& graph) const;
  std::vector<EarleyItem> CompletionItems(const std::vector<Occurrence>& closes) const;
  void RecloseLastRow(const std::vector<EarleyItem>& extra);
  BudgetOutcome PruneClosed(const OccurrenceGraph& graph);

  std::shared_ptr<const GrammarAutomaton> g_;
  std::vector<EarleyItem> items_;
  std::vector<int32_t> row_begin_;    // size num_rows + 1; last entry == items_.size()
  std::vector<uint8_t> row_can_end_;  // 1: the top item is complete
  // Per-row duplicate suppression: open addressing keyed by (state, origin), stamped.
  std::vector<uint64_t> dedup_keys_;
  std::vector<uint32_t> dedup_stamp_;
  uint32_t stamp_ = 0;
  // Rules already predicted in the row being closed (stamped with row_serial_).
  std::vector<uint32_t> rule_predicted_;
  uint32_t row_serial_ = 0;
  // Items predicted in the row being closed (origin == that row) are deduplicated by state
  // alone, through this array stamped with row_serial_ (most items of a row are predictions).
  std::vector<uint32_t> predicted_state_;
  int32_t closing_row_ = INT32_MIN;  // not closing a row
  int32_t dedup_count_ = 0;
  // Leo memo: entries in creation order (so rollback pops them off the back), chained per
  // origin row from leo_head_[row] (-1: none). An entry depends only on rows up to its
  // origin, but it is dropped with the row that created it, which keeps the order simple.
  struct LeoEntry {
    RuleId rule;
    int32_t origin;
    EarleyItem top;
    int32_t next;         // the previous head of the origin row's chain
    int32_t created_row;  // the row being closed when it was made
  };
  std::vector<LeoEntry> leo_;
  std::vector<int32_t> leo_head_;  // per row
  // Token budgets: each row's first token (see set_row_token), and the commits of EnforceTokenBudgets
  // (the row pruned, the occurrences closed as sorted (rule << 32 | origin) keys).
  int32_t token_index_ = 0;
  std::vector<int32_t> row_token_;
  struct BudgetCommit {
    int32_t row;
    std::vector<uint64_t> closed;
  };
  std::vector<BudgetCommit> budget_commits_;
  // The byte each row after the first read (GrammarAutomaton::has_budget_closes only): a
  // closed suffix/stop occurrence ends through its body where these bytes are one.
  bool tracks_bytes_ = false;
  std::string row_bytes_;
  // Per item (parallel to items_), only when the grammar has character budgets.
  bool tracks_chars_ = false;
  std::vector<CharCount> item_chars_;
};

}  // namespace xg2
