// Rule attributes of xgrammar's EBNF (`name[lazy] ::= ...`, `name[max_chars=N] ::= ...`) and
// of Lark rules, as language transforms of a rule body.
//
// Both need a regular body: rule references are expanded in place (a recursive one is an
// error), and the result is one ByteDfa node, so the printed grammar shows the automaton.
#pragma once

#include <cstdint>
#include <string>

#include "xg2/grammar.h"

namespace xg2 {

struct RuleAttributes {
  bool lazy = false;       // the shortest match commits: strings of the body with no proper prefix in it
  int64_t max_chars = -1;  // at most this many code points (-1: no bound)
  bool any() const { return lazy || max_chars >= 0; }
};

// Replaces the body of `rule` by its language under `attrs`. Throws Error(kGrammarSemantic)
// naming the rule when the body is not regular, and Error(kLimitExceeded) when the automaton
// has more than max_states states.
void ApplyRuleAttributes(Grammar* g, RuleId rule, const RuleAttributes& attrs, int64_t max_states = 200000);

}  // namespace xg2
