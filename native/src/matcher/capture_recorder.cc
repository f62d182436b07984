#include "matcher/capture_recorder.h"

#include <algorithm>
#include <map>

namespace xg2 {
namespace {

// The state after `byte` from `state`, or -1.
int32_t Step(const ByteDfaSpec& dfa, int32_t state, uint8_t byte) {
  for (const ByteDfaEdge& e : dfa.edges[state]) {
    if (byte < e.lo) return -1;
    if (byte <= e.hi) return e.target;
  }
  return -1;
}

bool Accepts(const ByteDfaSpec& dfa, const std::string& text, int32_t begin, int32_t end) {
  int32_t state = dfa.num_states() > 0 ? 0 : -1;
  for (int32_t i = begin; i < end && state >= 0; ++i) state = Step(dfa, state, static_cast<uint8_t>(text[i]));
  return state >= 0 && dfa.is_final[state];
}

}  // namespace

void CaptureRecorder::Record(const GrammarAutomaton& g, const EarleyParser& parser, int32_t rows_before,
                             const std::string& text) {
  if (!g.has_captures) return;
  const int32_t base = static_cast<int32_t>(output_.size());
  output_ += text;
  // Text is read one byte a row; a token read by id (its virtual string) has its rows at its
  // start but the last, which is after its text.
  const int32_t new_rows = parser.num_rows() - rows_before;
  const bool by_text = new_rows == static_cast<int32_t>(text.size());
  for (int32_t k = 1; k <= new_rows; ++k) {
    row_offset_.push_back(by_text ? base + k : (k == new_rows ? base + static_cast<int32_t>(text.size()) : base));
  }
  // Row 0 (completions of the empty string at the start) is read with the first accept.
  const int32_t first = std::min(scanned_rows_, rows_before);
  scanned_rows_ = parser.num_rows();
  for (int32_t r = first; r < parser.num_rows(); ++r) RecordRow(g, parser, r);
}

void CaptureRecorder::RecordBodyCloses(const GrammarAutomaton& g, const EarleyParser& parser,
                                       const std::vector<EarleyParser::Occurrence>& closes) {
  const int32_t r = parser.num_rows() - 1;
  for (const EarleyParser::Occurrence& c : closes) {
    // The whole text is the body; there is no marker to capture or hide.
    const int32_t origin = std::max(c.origin, 0);
    const Part part = g.rule_marker_split[c.rule].whole_capture ? Part::kWhole : Part::kBody;
    if (!g.rule_capture[c.rule].empty()) events_.push_back({c.rule, origin, r, row_offset_[r], part});
    if (c.origin >= 0) HandUp(g, parser, c.rule, origin, r, {0, 0});
  }
  RecordRow(g, parser, r);
}

void CaptureRecorder::RecordRow(const GrammarAutomaton& g, const EarleyParser& parser, int32_t r) {
  seen_.clear();
  // A row read again (after a budget close) keeps what it recorded before.
  for (auto e = events_.rbegin(); e != events_.rend() && e->end_row == r; ++e)
    seen_.emplace_back(e->rule, e->start_row);
  for (const EarleyItem* it = parser.row_items_begin(r); it != parser.row_items_end(r); ++it) {
    if (!g.IsFinal(it->state)) continue;
    const RuleId rule = g.RuleOf(it->state);
    const int32_t origin = std::max(it->origin, 0);
    const GrammarAutomaton::MarkerSplitDfas& split = g.rule_marker_split[rule];
    const bool parts = split.body != nullptr && !split.whole_capture;  // captures see body and marker
    const bool captured = !g.rule_capture[rule].empty();
    const bool owns_hidden = hidden_by_owner_.count(Key(rule, origin)) > 0;
    const MarkerBefore& before = g.rule_marker_before[rule];
    if (!captured && !parts && !owns_hidden && before.length == 0) continue;
    const std::pair<RuleId, int32_t> occurrence{rule, origin};
    if (std::find(seen_.begin(), seen_.end(), occurrence) != seen_.end()) continue;
    seen_.push_back(occurrence);
    std::pair<int32_t, int32_t> marker{0, 0};
    // The trigger before the occurrence: captured as its head's marker, hidden from the
    // occurrences around this one (its callers hold the trigger too) with stop=.
    const int32_t trigger = row_offset_[origin] - before.length;
    if (before.length > 0 && trigger >= 0) {
      if (!before.capture.empty()) events_.push_back({rule, origin, r, trigger, Part::kBefore});
      if (before.hides && it->origin >= 0) HandUp(g, parser, rule, origin, r, {trigger, row_offset_[origin]});
    }
    if (parts) {
      const int32_t end = row_offset_[r];
      const int32_t k = SplitPoint(split, row_offset_[origin], end);
      // No split: a character budget ended the occurrence through its body alone.
      if (k >= 0 && !split.stop_capture.empty()) events_.push_back({rule, origin, r, k, Part::kMarker});
      if (captured) events_.push_back({rule, origin, r, k >= 0 ? k : end, Part::kBody});
      if (k >= 0 && split.hides_marker) marker = {k, end};
    } else if (captured) {
      events_.push_back({rule, origin, r, 0, Part::kWhole});
    }
    if (it->origin >= 0) HandUp(g, parser, rule, origin, r, marker);
  }
}

int32_t CaptureRecorder::SplitPoint(const GrammarAutomaton::MarkerSplitDfas& split, int32_t begin, int32_t end) const {
  const ByteDfaSpec& body = *split.body;
  int32_t state = body.num_states() > 0 ? 0 : -1;
  for (int32_t k = begin; state >= 0; ++k) {
    if (body.is_final[state] && Accepts(*split.marker, output_, k, end)) return k;
    if (k == end) break;
    state = Step(body, state, static_cast<uint8_t>(output_[k]));
  }
  return -1;
}

void CaptureRecorder::HandUp(const GrammarAutomaton& g, const EarleyParser& parser, RuleId rule, int32_t row,
                             int32_t end_row, std::pair<int32_t, int32_t> extra) {
  std::vector<std::pair<int32_t, int32_t>> spans;
  if (extra.first < extra.second) spans.push_back(extra);
  auto own = hidden_by_owner_.find(Key(rule, row));
  if (own != hidden_by_owner_.end()) {
    for (int32_t i : own->second) {
      const HiddenSpan& h = hidden_[i].second;
      if (h.recorded_row <= end_row) spans.emplace_back(h.begin, h.end);
    }
  }
  if (spans.empty()) return;
  // The occurrences this one completes: the items of its start row awaiting its rule.
  const uint64_t bit = 1ull << (rule & 63);
  for (const EarleyItem* p = parser.row_items_begin(row); p != parser.row_items_end(row); ++p) {
    if (!(g.AwaitedBits(p->state) & bit) || g.RuleEdgeTarget(p->state, rule) < 0) continue;
    const uint64_t owner = Key(g.RuleOf(p->state), std::max(p->origin, 0));
    for (const auto& [begin, end] : spans) AddHidden(owner, begin, end, end_row);
  }
}

void CaptureRecorder::AddHidden(uint64_t owner, int32_t begin, int32_t end, int32_t recorded_row) {
  std::vector<int32_t>& indices = hidden_by_owner_[owner];
  for (int32_t i : indices) {
    if (hidden_[i].second.begin == begin && hidden_[i].second.end == end) return;
  }
  // The span first: ForgetFrom pops an owner's index for each span it pops.
  hidden_.push_back({owner, HiddenSpan{begin, end, recorded_row}});
  try {
    indices.push_back(static_cast<int32_t>(hidden_.size()) - 1);
  } catch (...) {
    hidden_.pop_back();
    throw;
  }
}

void CaptureRecorder::ForgetFrom(int32_t rows) {
  scanned_rows_ = std::min(scanned_rows_, rows);
  // Each part is cut on its own, so this also undoes a Record that threw part way.
  if (static_cast<int32_t>(row_offset_.size()) > rows) row_offset_.resize(static_cast<size_t>(rows));
  if (!row_offset_.empty()) output_.resize(static_cast<size_t>(row_offset_.back()));
  while (!events_.empty() && events_.back().end_row >= rows) events_.pop_back();
  while (!hidden_.empty() && hidden_.back().second.recorded_row >= rows) {
    auto owner = hidden_by_owner_.find(hidden_.back().first);
    owner->second.pop_back();
    if (owner->second.empty()) hidden_by_owner_.erase(owner);
    hidden_.pop_back();
  }
}

std::string CaptureRecorder::VisibleText(RuleId rule, int32_t row, int32_t end_row) const {
  const int32_t begin = row_offset_[row], end = row_offset_[end_row];
  std::vector<std::pair<int32_t, int32_t>> hidden;
  auto own = hidden_by_owner_.find(Key(rule, row));
  if (own != hidden_by_owner_.end()) {
    for (int32_t i : own->second) {
      const HiddenSpan& h = hidden_[i].second;
      if (h.recorded_row <= end_row && begin <= h.begin && h.end <= end) hidden.emplace_back(h.begin, h.end);
    }
  }
  std::sort(hidden.begin(), hidden.end());
  std::string out;
  int32_t at = begin;
  for (const auto& [b, e] : hidden) {  // overlapping spans (ambiguous parses) merge
    if (b > at) out.append(output_, at, b - at);
    at = std::max(at, e);
  }
  if (at < end) out.append(output_, at, end - at);
  return out;
}

std::vector<std::pair<std::string, std::string>> CaptureRecorder::Captures(const GrammarAutomaton& g,
                                                                           bool deduplicate) const {
  std::vector<bool> keep(events_.size(), true);
  if (deduplicate) {
    // An occurrence completes at every end the parse still considers: keep its last (longest).
    std::map<std::pair<uint64_t, Part>, size_t> last;
    for (size_t i = 0; i < events_.size(); ++i) {
      const Event& e = events_[i];
      auto [it, inserted] = last.emplace(std::make_pair(Key(e.rule, e.start_row), e.part), i);
      if (!inserted) {
        keep[it->second] = false;
        it->second = i;
      }
    }
  }
  std::vector<std::pair<std::string, std::string>> out;
  const int32_t last_row = static_cast<int32_t>(row_offset_.size()) - 1;
  for (size_t i = 0; i < events_.size(); ++i) {
    if (!keep[i]) continue;
    // An end-only rule that completed before the end lies on a parse that could not go on.
    if (g.rule_end_only[events_[i].rule] && events_[i].end_row != last_row) continue;
    const Event& e = events_[i];
    const int32_t begin = row_offset_[e.start_row], end = row_offset_[e.end_row];
    switch (e.part) {
      case Part::kWhole: out.emplace_back(g.rule_capture[e.rule], VisibleText(e.rule, e.start_row, e.end_row)); break;
      case Part::kBody: out.emplace_back(g.rule_capture[e.rule], output_.substr(begin, e.split - begin)); break;
      case Part::kMarker:
        out.emplace_back(g.rule_marker_split[e.rule].stop_capture, output_.substr(e.split, end - e.split));
        break;
      case Part::kBefore: {
        const MarkerBefore& before = g.rule_marker_before[e.rule];
        out.emplace_back(before.capture, output_.substr(e.split, before.length));
        break;
      }
    }
  }
  return out;
}

}  // namespace xg2
