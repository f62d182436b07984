// Merges rules with identical bodies (up to the identity of the rules they reference).
//
// Front ends emit one rule per subschema or per use; many are structurally identical (every
// plain string property, say). One shared rule means one set of automaton states, so its
// token masks are computed once (and shared across grammars by the cross-grammar pool),
// instead of once per copy after inlining.
#pragma once

#include "xg2/grammar.h"

namespace xg2 {

// Redirects every reference to a rule of g to the representative of its class of identical
// rules (the root, or the lowest id), in place. Unreferenced duplicates remain.
void DeduplicateRules(Grammar* g);

}  // namespace xg2
