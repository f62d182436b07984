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
// every scanning item at once, each (rule, origin) node once, stopping at a rule with a
// temperature; masks (which do not depend on temperatures) are untouched.
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

 private:
  struct Node {
    RuleId rule;
    int32_t origin;
  };
  std::vector<Node> stack_;
  std::unordered_set<uint64_t> seen_;
};

}  // namespace xg2
