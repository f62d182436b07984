// Counted repetition: a Repeat{min,max} with a large bound becomes a reference to a new
// "repeat rule" whose loop the automaton runs with a counter (virtual states), around a new
// "child rule" holding one iteration. Compile cost is then independent of the bound.
#pragma once

#include <cstdint>
#include <vector>

#include "xg2/grammar.h"

namespace xg2 {

struct LoweredRepeat {
  RuleId rule;   // the repeat rule (its body is a placeholder with the right nullability)
  RuleId child;  // one iteration
  int64_t min;
  int64_t max;  // kUnbounded for no bound
};

// Rewrites, in every rule body, each Repeat whose min or (finite) max exceeds max_unrolled and
// whose child cannot match the empty string. Smaller repeats stay as they are (the automaton
// unrolls them). A loop of more than max_counted_span counts is split into loops over blocks
// of items and a remainder, x{0,N} = (x{B}){0,q-1} x{0,B-1} | (x{B}){q} x{0,r} for N = qB + r:
// the same language, with counts growing as the square root of the bound.
std::vector<LoweredRepeat> LowerLargeRepeats(Grammar* g, int64_t max_unrolled, int64_t max_counted_span);

}  // namespace xg2
