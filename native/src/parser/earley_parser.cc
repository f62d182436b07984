#include "parser/earley_parser.h"

#include <algorithm>

#include "automata/char_budget_dist.h"
#include "automata/json_decoder.h"
#include "xg2/errors.h"

namespace xg2 {

EarleyParser::EarleyParser(std::shared_ptr<const GrammarAutomaton> automaton, int32_t start_state)
    : EarleyParser(std::move(automaton), EmptyTag{}) {
  NewRowStamp();
  AddItem(start_state, -1);
  CloseRow(0);
}

EarleyParser::EarleyParser(std::shared_ptr<const GrammarAutomaton> automaton, EmptyTag)
    : g_(std::move(automaton)), tracks_bytes_(g_->has_budget_closes), tracks_chars_(g_->has_char_budgets) {
  dedup_keys_.assign(64, 0);
  dedup_stamp_.assign(64, 0);
  rule_predicted_.assign(g_->num_rules(), 0);
  predicted_state_.assign(g_->num_states(), 0);
  row_begin_.push_back(0);
}

EarleyParser EarleyParser::AfterRule(std::shared_ptr<const GrammarAutomaton> automaton, RuleId rule) {
  EarleyParser p(std::move(automaton), EmptyTag{});
  p.NewRowStamp();
  for (int32_t t : p.g_->rule_follow_targets[rule]) p.AddItem(t, -2);
  p.CloseRow(0);
  return p;
}

EarleyParser EarleyParser::InLoop(std::shared_ptr<const GrammarAutomaton> automaton, int32_t state,
                                  int32_t loop_state) {
  EarleyParser p(std::move(automaton), EmptyTag{});
  p.NewRowStamp();
  p.AddItem(loop_state, -1);
  p.CloseRow(0);
  p.NewRowStamp();
  p.AddItem(state, 0);
  p.CloseRow(1);
  return p;
}

bool EarleyParser::PushCompletionRow(RuleId rule, int32_t origin) {
  const GrammarAutomaton& g = *g_;
  int32_t row = num_rows();
  size_t before = items_.size();
  NewRowStamp();
  for (int32_t j = row_begin_[origin]; j < row_begin_[origin + 1]; ++j) {
    const EarleyItem parent = items_[j];
    if (!(g.AwaitedBits(parent.state) & (1ull << (rule & 63)))) continue;
    if (!budget_commits_.empty() && IsClosed(g.RuleOf(parent.state), parent.origin)) continue;
    int32_t target = g.RuleEdgeTarget(parent.state, rule);
    if (target >= 0) AddItem(target, parent.origin);
  }
  if (items_.size() == before) return false;
  CloseRow(row);
  return true;
}

void EarleyParser::NewRowStamp() {
  // On wrap-around stale slots could look current: clear them.
  if (++stamp_ == 0) {
    std::fill(dedup_stamp_.begin(), dedup_stamp_.end(), 0);
    stamp_ = 1;
  }
  dedup_count_ = 0;
}

void EarleyParser::GrowDedup() {
  // Every item of the row goes in, predicted ones too (they are deduplicated by state alone and
  // not counted): size for all of them, or the probing below would find no free slot.
  const size_t row_items = items_.size() - static_cast<size_t>(row_begin_.back());
  size_t cap = dedup_keys_.size() * 2;
  while (cap < 2 * row_items + 2) cap *= 2;
  dedup_keys_.assign(cap, 0);
  dedup_stamp_.assign(cap, 0);
  NewRowStamp();
  size_t mask = cap - 1;
  for (size_t i = static_cast<size_t>(row_begin_.back()); i < items_.size(); ++i) {
    uint64_t key =
        (static_cast<uint64_t>(static_cast<uint32_t>(items_[i].state)) << 32) | static_cast<uint32_t>(items_[i].origin);
    size_t h = (key * 0x9E3779B97F4A7C15ull) >> 20;
    while (true) {
      size_t slot = h & mask;
      if (dedup_stamp_[slot] != stamp_) {
        dedup_stamp_[slot] = stamp_;
        dedup_keys_[slot] = key;
        ++dedup_count_;
        break;
      }
      ++h;
    }
  }
}

void EarleyParser::AddItem(int32_t state, int32_t origin, CharCount chars) {
  if (origin == closing_row_ && static_cast<size_t>(state) < predicted_state_.size()) {
    if (predicted_state_[state] == row_serial_) return;
    predicted_state_[state] = row_serial_;
    items_.push_back(EarleyItem{state, origin});
    if (tracks_chars_) item_chars_.push_back(chars);
    return;
  }
  uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(state)) << 32) | static_cast<uint32_t>(origin);
  size_t mask = dedup_keys_.size() - 1;
  size_t h = (key * 0x9E3779B97F4A7C15ull) >> 20;
  while (true) {
    size_t slot = h & mask;
    if (dedup_stamp_[slot] != stamp_) {
      dedup_stamp_[slot] = stamp_;
      dedup_keys_[slot] = key;
      break;
    }
    if (dedup_keys_[slot] == key) return;
    ++h;
  }
  items_.push_back(EarleyItem{state, origin});
  if (tracks_chars_) item_chars_.push_back(chars);
  if (++dedup_count_ * 2 > static_cast<int32_t>(dedup_keys_.size())) GrowDedup();
}

bool EarleyParser::ScanChars(const EarleyItem& item, size_t index, uint8_t byte, int32_t target, CharCount* out) const {
  *out = CharCount{};
  if (!tracks_chars_) return true;
  const GrammarAutomaton& g = *g_;
  const RuleId rule = g.state_rule[item.state];
  if (!g.HasCharBudget(rule)) return true;
  const CharCount& now = item_chars_[index];
  bool starts = false;
  const int dec = JsonDecNext(now.dec, byte, &starts);
  const int32_t base = g.state_char_dist[target];
  if (dec < 0 || base < 0) return false;
  // Refused where no end within the budget remains, so a dead end never enters the mask.
  const int64_t chars = int64_t{now.chars} + (starts ? 1 : 0);
  const int32_t least = g.char_min_dist[base + dec];
  const int32_t most = g.char_max_dist[base + dec];
  const int32_t max = g.rule_json_max_chars[rule];
  if (least == kCharDistNone || (max >= 0 && chars + least > max)) return false;
  if (most != kCharDistUnbounded && chars + most < g.rule_json_min_chars[rule]) return false;
  *out = CharCount{static_cast<int32_t>(chars), dec};
  return true;
}

bool EarleyParser::MayComplete(const EarleyItem& item, size_t index) const {
  if (!tracks_chars_ || g_->is_virtual(item.state)) return true;
  const RuleId rule = g_->state_rule[item.state];
  if (!g_->HasCharBudget(rule)) return true;
  const CharCount& now = item_chars_[index];
  return now.dec == kB && now.chars >= g_->rule_json_min_chars[rule];
}

bool EarleyParser::MayScan(const EarleyItem& item, size_t index, uint8_t byte) const {
  CharCount unused;
  const int32_t target = g_->ByteTarget(item.state, byte);
  return target >= 0 && ScanChars(item, index, byte, target, &unused);
}

void EarleyParser::CloseRow(int32_t row) {
  const GrammarAutomaton& g = *g_;
  uint8_t can_end = 0;
  if (++row_serial_ == 0) {
    std::fill(rule_predicted_.begin(), rule_predicted_.end(), 0);
    std::fill(predicted_state_.begin(), predicted_state_.end(), 0);
    row_serial_ = 1;
  }
  closing_row_ = row;
  for (size_t i = static_cast<size_t>(row_begin_[row]); i < items_.size(); ++i) {
    const EarleyItem it = items_[i];
    // Items that start in this row come from a bulk prediction, which already holds their
    // whole closure; their completions within the row are covered by the nullable advance.
    if (it.origin == row) continue;
    if (g.IsFinal(it.state) && MayComplete(it, i)) {
      if (it.origin == -1) {
        can_end |= 1;
      } else if (it.origin == -2) {
        // A caller's continuation completed: continue into its callers' continuations too.
        // This is the context-free FOLLOW over-approximation, closed over all levels.
        for (int32_t t : g.rule_follow_targets[g.RuleOf(it.state)]) AddItem(t, -2);
      } else {
        // (An item completed in its own row is handled by the nullable advance in predict.)
        Complete(g.RuleOf(it.state), it.origin);
      }
    }
    g.ForEachRuleEdge(it.state, [&](RuleId rule, int32_t target) {
      if (rule_predicted_[rule] != row_serial_) {
        for (RuleId q : g.rule_prediction_rules[rule]) rule_predicted_[q] = row_serial_;
        for (int32_t s : g.rule_prediction_states[rule]) AddItem(s, row);
      }
      if (g.rule_nullable[rule]) AddItem(target, it.origin);
    });
  }
  FinishRow(can_end);
  closing_row_ = INT32_MIN;
}

void EarleyParser::FinishRow(uint8_t can_end) {
  row_begin_.push_back(static_cast<int32_t>(items_.size()));
  row_can_end_.push_back(can_end);
  leo_head_.push_back(-1);
  row_token_.push_back(token_index_);
}

void EarleyParser::Complete(RuleId rule, int32_t origin) {
  const EarleyItem memo = FindLeo(rule, origin);
  if (memo.state >= 0) {
    AddItem(memo.state, memo.origin);
    return;
  }
  const GrammarAutomaton& g = *g_;
  const uint64_t bit = 1ull << (rule & 63);
  const int32_t end = row_begin_[origin + 1];
  // The first advanced item waits until a second one shows the completion is not
  // deterministic (then both go in, in row order).
  int32_t found = 0;
  EarleyItem first{-1, 0};
  for (int32_t j = row_begin_[origin]; j < end; ++j) {
    const EarleyItem parent = items_[j];
    if (!(g.AwaitedBits(parent.state) & bit)) continue;
    if (!budget_commits_.empty() && IsClosed(g.RuleOf(parent.state), parent.origin)) continue;
    const int32_t target = g.RuleEdgeTarget(parent.state, rule);
    if (target < 0) continue;
    if (++found == 1) {
      first = EarleyItem{target, parent.origin};
      continue;
    }
    if (found == 2) AddItem(first.state, first.origin);
    AddItem(target, parent.origin);
  }
  if (found != 1) return;
  // A Leo chain skips the intermediate completions, which budgets and captures read.
  if (first.origin >= 0 && !g.needs_all_completions() && IsEdgelessFinal(first.state)) {
    first = LeoTop(rule, origin, first);
  }
  AddItem(first.state, first.origin);
}

EarleyItem EarleyParser::LeoTop(RuleId rule, int32_t origin, EarleyItem first) {
  // Iterative (a chain is as long as the input): follow deterministic completions down the
  // origin rows until one is not, or one whose top is already known.
  std::vector<std::pair<RuleId, int32_t>> keys{{rule, origin}};
  EarleyItem top = first;
  while (top.origin >= 0) {
    const RuleId r = g_->RuleOf(top.state);
    const EarleyItem known = FindLeo(r, top.origin);
    if (known.state >= 0) {
      top = known;
      break;
    }
    const EarleyItem next = DeterministicAdvance(r, top.origin);
    if (next.state < 0) break;
    keys.emplace_back(r, top.origin);
    top = next;
  }
  for (const auto& [r, o] : keys) {
    leo_.push_back(LeoEntry{r, o, top, leo_head_[o], closing_row_});
    leo_head_[o] = static_cast<int32_t>(leo_.size()) - 1;
  }
  return top;
}

EarleyItem EarleyParser::FindLeo(RuleId rule, int32_t origin) const {
  for (int32_t k = leo_head_[origin]; k >= 0; k = leo_[k].next) {
    if (leo_[k].rule == rule) return leo_[k].top;
  }
  return EarleyItem{-1, 0};
}

EarleyItem EarleyParser::DeterministicAdvance(RuleId rule, int32_t origin) const {
  const GrammarAutomaton& g = *g_;
  const uint64_t bit = 1ull << (rule & 63);
  EarleyItem advanced{-1, 0};
  for (int32_t j = row_begin_[origin]; j < row_begin_[origin + 1]; ++j) {
    const EarleyItem parent = items_[j];
    if (!(g.AwaitedBits(parent.state) & bit)) continue;
    const int32_t target = g.RuleEdgeTarget(parent.state, rule);
    if (target < 0) continue;
    if (advanced.state >= 0) return EarleyItem{-1, 0};  // a second waiting item
    advanced = EarleyItem{target, parent.origin};
  }
  if (advanced.state < 0 || !IsEdgelessFinal(advanced.state)) return EarleyItem{-1, 0};
  return advanced;
}

bool EarleyParser::IsEdgelessFinal(int32_t state) const {
  const GrammarAutomaton& g = *g_;
  return !g.is_virtual(state) && g.state_final[state] && g.byte_edge_begin[state + 1] == g.byte_edge_begin[state] &&
         g.rule_edge_begin[state + 1] == g.rule_edge_begin[state];
}

void EarleyParser::PopLeoEntries(int32_t rows) {
  while (!leo_.empty() && leo_.back().created_row >= rows) {
    leo_head_[leo_.back().origin] = leo_.back().next;
    leo_.pop_back();
  }
}

bool EarleyParser::Advance(uint8_t byte) {
  const int32_t row = num_rows();
  try {
    return AdvanceRow(row, byte);
  } catch (...) {
    // A std::bad_alloc while the row was built: drop what it had, so the parser is as before.
    closing_row_ = INT32_MIN;
    RestoreRows(row);
    throw;
  }
}

bool EarleyParser::AdvanceRow(int32_t row, uint8_t byte) {
  const GrammarAutomaton& g = *g_;
  int32_t prev_begin = row_begin_[row - 1], prev_end = row_begin_[row];
  if (prev_end - prev_begin == 1) {
    // Fast path (lexical stretches): one item scans into at most one, and if that one needs
    // no closure the row is complete without deduplication.
    const EarleyItem it = items_[prev_begin];
    if (g.is_virtual(it.state)) return false;
    const int32_t target = g.ByteTarget(it.state, byte);
    if (target < 0) return false;
    CharCount chars;
    if (!ScanChars(it, static_cast<size_t>(prev_begin), byte, target, &chars)) return false;
    const uint8_t trivial = g.closure_trivial[target];
    if ((trivial & 2) || ((trivial & 1) && it.origin == -1 && !g.HasCharBudget(g.state_rule[target]))) {
      items_.push_back(EarleyItem{target, it.origin});
      if (tracks_chars_) item_chars_.push_back(chars);
      FinishRow((trivial & 2) ? 0 : 1);
      if (tracks_bytes_) row_bytes_.push_back(static_cast<char>(byte));
      return true;
    }
  }
  NewRowStamp();
  const int32_t num_real = g.num_states();
  for (int32_t i = prev_begin; i < prev_end; ++i) {
    const EarleyItem it = items_[i];
    if (it.state >= num_real) continue;  // counted-loop states consume no bytes
    const int32_t target = g.ByteTarget(it.state, byte);
    CharCount chars;
    if (target >= 0 && ScanChars(it, static_cast<size_t>(i), byte, target, &chars)) AddItem(target, it.origin, chars);
  }
  if (static_cast<int32_t>(items_.size()) == prev_end) return false;
  CloseRow(row);
  if (tracks_bytes_) row_bytes_.push_back(static_cast<char>(byte));
  return true;
}

bool EarleyParser::AdvanceBytes(const uint8_t* data, size_t size) {
  const int32_t rows = num_rows();
  try {
    for (size_t i = 0; i < size; ++i) {
      if (!Advance(data[i])) {
        TruncateRows(rows);
        return false;
      }
    }
  } catch (...) {
    TruncateRows(rows);
    throw;
  }
  return true;
}

void EarleyParser::PopRows(int32_t n) {
  if (n <= 0) return;
  if (n >= num_rows()) throw Error(ErrorKind::kMatcherState, "cannot pop the initial parser row");
  RestoreRows(num_rows() - n);
}

void EarleyParser::RestoreRows(int32_t rows) {
  PopLeoEntries(rows);
  leo_head_.resize(static_cast<size_t>(rows));
  items_.resize(static_cast<size_t>(row_begin_[rows]));
  if (tracks_chars_) item_chars_.resize(items_.size());
  row_begin_.resize(static_cast<size_t>(rows) + 1);
  row_can_end_.resize(static_cast<size_t>(rows));
  row_token_.resize(static_cast<size_t>(rows));
  while (!budget_commits_.empty() && budget_commits_.back().row >= rows) budget_commits_.pop_back();
  if (row_bytes_.size() > static_cast<size_t>(rows - 1)) row_bytes_.resize(static_cast<size_t>(rows - 1));
}

EarleyParser::RowSnapshot EarleyParser::SnapshotLastRow() const {
  RowSnapshot snapshot{
      std::vector<EarleyItem>(last_row_begin(), last_row_end()), {}, num_rows() - 1, row_can_end_.back()};
  if (tracks_chars_) snapshot.chars.assign(item_chars_.begin() + row_begin_[num_rows() - 1], item_chars_.end());
  return snapshot;
}

bool EarleyParser::MergeIntoLastRow(const RowSnapshot& other, int32_t shared_rows) {
  const int32_t last = num_rows() - 1;
  std::vector<EarleyItem> added;
  std::vector<CharCount> added_chars;
  for (size_t k = 0; k < other.items.size(); ++k) {
    EarleyItem it = other.items[k];
    if (it.origin == other.row) {
      it.origin = last;
    } else if (it.origin >= shared_rows) {
      return false;  // a rule started inside the other reading
    }
    added.push_back(it);
    added_chars.push_back(tracks_chars_ ? other.chars[k] : CharCount{});
  }
  auto key = [](const EarleyItem& it) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(it.state)) << 32) | static_cast<uint32_t>(it.origin);
  };
  std::vector<uint64_t> present;
  for (const EarleyItem* it = last_row_begin(); it != last_row_end(); ++it) present.push_back(key(*it));
  std::sort(present.begin(), present.end());
  for (size_t k = 0; k < added.size(); ++k) {
    if (std::binary_search(present.begin(), present.end(), key(added[k]))) continue;
    items_.push_back(added[k]);
    if (tracks_chars_) item_chars_.push_back(added_chars[k]);
  }
  row_begin_.back() = static_cast<int32_t>(items_.size());
  row_can_end_.back() |= other.can_end;
  return true;
}

bool EarleyParser::CanContinue() const {
  for (const EarleyItem* it = last_row_begin(); it != last_row_end(); ++it) {
    if (!g_->has_byte_edges(it->state)) continue;
    if (!tracks_chars_ || !g_->HasCharBudget(g_->state_rule[it->state])) return true;
    const size_t index = static_cast<size_t>(it - items_.data());
    for (int b = 0; b < 256; ++b) {
      if (MayScan(*it, index, static_cast<uint8_t>(b))) return true;
    }
  }
  return false;
}

void EarleyParser::NextBytes(uint64_t out[4]) const {
  out[0] = out[1] = out[2] = out[3] = 0;
  for (const EarleyItem* it = last_row_begin(); it != last_row_end(); ++it) {
    if (g_->is_virtual(it->state)) continue;
    if (!tracks_chars_ || !g_->HasCharBudget(g_->state_rule[it->state])) {
      g_->AddByteEdges(it->state, out);
      continue;
    }
    const size_t index = static_cast<size_t>(it - items_.data());
    for (int b = 0; b < 256; ++b) {
      if (MayScan(*it, index, static_cast<uint8_t>(b))) out[b >> 6] |= uint64_t{1} << (b & 63);
    }
  }
}

size_t EarleyParser::MemoryBytes() const {
  return items_.capacity() * sizeof(EarleyItem) + row_begin_.capacity() * sizeof(int32_t) + row_can_end_.capacity() +
         dedup_keys_.capacity() * 12 + leo_.capacity() * sizeof(LeoEntry) +
         (leo_head_.capacity() + row_token_.capacity()) * sizeof(int32_t) + BudgetCommitBytes() +
         row_bytes_.capacity() + item_chars_.capacity() * sizeof(CharCount);
}

}  // namespace xg2
