// The sampling temperature a parse asks for (xgrammar's rule attribute [temperature=T]).
//
// Semantics (xgrammar 0.2.9): every way the parse can go on (an item of the last row that can
// scan a byte) lies inside a stack of rules; the innermost rule of that stack with a
// temperature gives that path its temperature, and a path inside none has none. The parse's
// temperature is the largest over the paths that have one; paths that disagree are a
// conflict (the matcher warns once). With no path inside a temperature rule, the matcher's
// default applies.
//
// The stacks are not stored: an item is (state, origin row), and the callers of its rule are
// the items of the origin row that wait on that rule. The search walks this graph upward from
// the scanning items, stopping at a rule with a temperature. What is above a node (rule R,
// origin row o) depends only on rows 0..o, which do not change while row o exists, so each
// node's summary (the temperatures its paths find) is memoised per row: a step costs the
// nodes of the rows it added, not the depth of the parse. The matcher forgets the rows it
// rolls back (ForgetRowsFrom). Masks do not depend on temperatures and are untouched.
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "parser/earley_parser.h"
#include "xg2/grammar.h"

namespace xg2 {

struct ActiveTemperature {
  bool found = false;     // some path is inside a rule with a temperature
  float value = 0.0f;     // the largest such temperature (when found)
  bool conflict = false;  // paths inside temperature rules disagree
};

// Per rule of `automaton`: the temperature of the grammar's rule with that id, or
// Rule::kNoTemperature (also for the rules lowering added: they inherit through their callers).
// Empty when the grammar has no temperature at all (the matcher then skips the search).
std::vector<float> RuleTemperatures(const Grammar& grammar, const GrammarAutomaton& automaton);

class ActiveTemperatureFinder {
 public:
  // rule_temperature as RuleTemperatures returns (empty: nothing found).
  ActiveTemperature Find(const EarleyParser& parser, const std::vector<float>& rule_temperature);
  // Drops what is memoised for rows >= rows (call when the parser drops them).
  void ForgetRowsFrom(int32_t rows) {
    if (static_cast<int32_t>(memo_.size()) > rows) memo_.resize(static_cast<size_t>(rows));
  }

 private:
  // The temperatures found on a set of paths: none, or their range.
  struct Summary {
    bool found = false;
    float lo = 0.0f, hi = 0.0f;
    void Add(float t);
    void Merge(const Summary& other);
  };
  struct Node {
    RuleId rule;
    int32_t origin;
  };
  // A node being summarised: its callers in its own row are expanded at once; callers that
  // started in earlier rows (deps) are summarised first (an explicit stack: parses nest deeply).
  struct Frame {
    Node node;
    Summary summary;
    std::vector<Node> deps;
    size_t next_dep = 0;
  };
  // The summary of every path above an item of `node.rule` started at row `node.origin`.
  Summary Summarize(const EarleyParser& parser, const std::vector<float>& rule_temperature, Node node);
  // Expands frame->node within its row: temperatures of callers there, and their deps.
  void ExpandInRow(const EarleyParser& parser, const std::vector<float>& rule_temperature, Frame* frame);
  const Summary* Memoised(Node node) const;

  std::vector<std::vector<std::pair<RuleId, Summary>>> memo_;  // per origin row
  std::vector<Frame> frames_;
  std::vector<RuleId> row_rules_;  // ExpandInRow's worklist (rules of one row)
  std::unordered_set<uint64_t> seen_;
};

}  // namespace xg2
