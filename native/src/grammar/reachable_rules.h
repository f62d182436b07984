// Rules that a grammar's root can reach through rule references.
//
// After deduplication and inlining most rules of a front end's grammar are referenced from
// nowhere (their bodies were copied into their callers, or a twin represents them); their
// automata would be built only to be left unused.
#pragma once

#include <cstdint>
#include <vector>

#include "xg2/grammar.h"

namespace xg2 {

// Per rule: 1 if the root's body reaches it through references (the root included), else 0.
// extra_callees (empty, or one list per rule): references a rule makes besides its body's.
std::vector<uint8_t> RulesReachableFromRoot(const Grammar& g,
                                            const std::vector<std::vector<RuleId>>& extra_callees = {});

}  // namespace xg2
