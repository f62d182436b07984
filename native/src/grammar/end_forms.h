// Rules that may also end at the end of the input (xgrammar's any-text suffix/stop rules and
// lazy trigger rules, `r[suffix="M"]: TEXT` / `r[lazy]: TEXT "M"`, which xgrammar lowers to a
// dispatch over free text that the end of the input also ends).
//
// Such a rule has extra texts (the free text before any marker) that are sentences only when
// nothing follows them up to the end of the input. The grammar keeps them apart: each rule X
// that can end its text with one (the rule itself, or a rule whose body ends with a reference
// to such a rule where what follows can be empty) gets a copy X_end whose language is exactly
// those extra texts, and the root takes them as a second alternative. Copies keep the
// rule's capture, split, budget and temperature, and are Rule::end_only (their captures count
// only at the end of the input).
#pragma once

#include <utility>
#include <vector>

#include "xg2/grammar.h"

namespace xg2 {

// `ends` holds (rule, the ByteDfa expression of its extra texts). Rules not reachable from the
// root along such endings get no copy.
void AddEndForms(Grammar* g, const std::vector<std::pair<RuleId, ExprId>>& ends);

}  // namespace xg2
