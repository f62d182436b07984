// Distances to the end of rules with a character budget (Rule::json_min_chars /
// json_max_chars), for the parser to refuse a byte after which the budget cannot be met.
#pragma once

#include <climits>
#include <cstdint>

#include "automata/grammar_automaton.h"

namespace xg2 {

// A (state, decoder state) that cannot reach the rule's end; one with no most characters.
constexpr int32_t kCharDistNone = INT32_MAX;
constexpr int32_t kCharDistUnbounded = INT32_MAX - 1;

// Fills state_char_dist, char_min_dist, char_max_dist, rule_char_room and
// rule_char_least_growth (nothing without character budgets).
void ComputeCharBudgetDistances(GrammarAutomaton* g);

}  // namespace xg2
