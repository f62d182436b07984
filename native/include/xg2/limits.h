// Process-wide limits of the front ends (set from Python with xg2_jax.set_limits). Errors
// that hit one name it, so a caller can tell a hostile input from a limit set too low.
#pragma once

#include <string>

namespace xg2 {

// Nesting depth of EBNF expressions, regex groups and JSON documents (default 1000).
int MaxNestingDepth();
void SetMaxNestingDepth(int depth);  // Error(kInvalidArgument) unless 1 <= depth <= 100000

// " (limit max_nesting_depth=N, see xg2_jax.set_limits)": the tail of a depth error.
std::string NestingLimitNote();

}  // namespace xg2
