// AnyOrder nodes become a reference to an "any-order rule" that the automaton runs with the
// set of members seen in its parser state (automata/any_order_states.h), around two rules per
// member: the member alone (when it comes first) and the separator followed by the member.
#pragma once

#include <vector>

#include "xg2/grammar.h"

namespace xg2 {

struct LoweredAnyOrder {
  RuleId rule;                // the any-order rule (its body only says whether it is nullable)
  std::vector<RuleId> first;  // per member: the member alone
  std::vector<RuleId> rest;   // per member: separator, member
  AnyOrderSpec spec;
};

// Rewrites every AnyOrder node of every rule body. Throws Error(kGrammarSemantic) for a member
// that can match the empty string (its completion could not be told apart from its absence).
std::vector<LoweredAnyOrder> LowerAnyOrder(Grammar* g);

}  // namespace xg2
