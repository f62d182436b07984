// Captures (xgrammar's `[capture]`, and the split of `[suffix=M]` / `[stop=M]` rules with
// `stop_capture`) recorded from the Earley chart as a matcher accepts.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "automata/grammar_automaton.h"
#include "parser/earley_parser.h"

namespace xg2 {

class CaptureRecorder {
 public:
  // After an accept that added the parser's rows from rows_before on, reading `text`.
  // Every occurrence of a captured rule that completes in a new row is recorded once per
  // row, inner ones first (a completion enters the row after the item it completes).
  void Record(const GrammarAutomaton& g, const EarleyParser& parser, int32_t rows_before, const std::string& text);
  // After a fill closed the suffix/stop occurrences `closes` through their bodies in the
  // parser's last row (EarleyParser::EnforceTokenBudgets): each is a completion without a
  // marker, and the completions that follow from it in that row are recorded too.
  void RecordBodyCloses(const GrammarAutomaton& g, const EarleyParser& parser,
                        const std::vector<EarleyParser::Occurrence>& closes);
  // Drops what the rows from `rows` on recorded (rollback, reset).
  void ForgetFrom(int32_t rows);
  // (name, bytes) per recorded completion, in order; with deduplicate, only the last
  // completion of each occurrence.
  std::vector<std::pair<std::string, std::string>> Captures(const GrammarAutomaton& g, bool deduplicate) const;

 private:
  // kBefore: the trigger marker a dispatch read before the occurrence (Rule::marker_before).
  enum class Part : uint8_t { kWhole, kBody, kMarker, kBefore };
  struct Event {
    RuleId rule;
    int32_t start_row;
    int32_t end_row;
    int32_t split;  // byte offset between body and marker (kBody, kMarker); the marker's (kBefore)
    Part part;
  };
  // The marker of a stop= occurrence, hidden from the captures of the rule occurrence
  // (owner, owner_row) whose derivation holds it, and of the occurrences above that one.
  struct HiddenSpan {
    int32_t begin, end;  // bytes
    int32_t recorded_row;
  };
  static uint64_t Key(RuleId rule, int32_t row) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(rule)) << 32) | static_cast<uint32_t>(row);
  }
  // Records the completions in row r of the occurrences not recorded there yet.
  void RecordRow(const GrammarAutomaton& g, const EarleyParser& parser, int32_t r);
  // Byte offset between the body and the marker of a split rule's text output_[begin, end):
  // the first where both parts are in their languages (-1 when there is none: a budget
  // closed the occurrence through its body alone).
  int32_t SplitPoint(const GrammarAutomaton::MarkerSplitDfas& split, int32_t begin, int32_t end) const;
  // Hands the hidden spans of occurrence (rule, row), recorded up to end_row, and `extra`
  // (if begin < end) to the occurrences awaiting it in that row.
  void HandUp(const GrammarAutomaton& g, const EarleyParser& parser, RuleId rule, int32_t row, int32_t end_row,
              std::pair<int32_t, int32_t> extra);
  void AddHidden(uint64_t owner, int32_t begin, int32_t end, int32_t recorded_row);
  // output_[begin, end) without the hidden spans of occurrence (rule, row) recorded up to end_row.
  std::string VisibleText(RuleId rule, int32_t row, int32_t end_row) const;

  std::string output_;                                                  // the bytes accepted
  std::vector<int32_t> row_offset_{0};                                  // each parser row's offset in output_
  int32_t scanned_rows_ = 0;                                            // parser rows whose completions are recorded
  std::vector<Event> events_;                                           // end rows ascending
  std::vector<std::pair<uint64_t, HiddenSpan>> hidden_;                 // recorded rows ascending
  std::unordered_map<uint64_t, std::vector<int32_t>> hidden_by_owner_;  // indices into hidden_
  std::vector<std::pair<RuleId, int32_t>> seen_;                        // Record's per-row set
};

}  // namespace xg2
