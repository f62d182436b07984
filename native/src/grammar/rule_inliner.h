// Inlines small non-recursive rules into the rules that reference them.
//
// A sub-rule that ends inside a token makes the token "uncertain" in the mask cache (its fate
// depends on what follows the sub-rule), and uncertain tokens are re-checked at every mask
// fill. Inlining leaf rules such as a JSON string's character rule keeps those tokens
// decidable at compile time.
#pragma once

#include "xg2/grammar.h"

namespace xg2 {

// Replaces, in place, every reference to a non-recursive rule of g (other than the root)
// whose fully inlined body has at most max_inline_size expression nodes by that body. Rule
// ids and names are unchanged; inlined rules simply become unreferenced.
void InlineSmallRules(Grammar* g, int max_inline_size = 64);

}  // namespace xg2
