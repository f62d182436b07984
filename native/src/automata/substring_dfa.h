// The DFA of xgrammar's Substring("c1", "c2", ...): every run of consecutive chunks
// c_i c_i+1 ... c_j (the empty run included), chunks kept whole.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xg2/grammar.h"

namespace xg2 {

// Subset construction over the byte positions of the concatenated chunks (a factor
// automaton at chunk granularity, linear in the text for ordinary text). Throws
// Error(kLimitExceeded) above max_states states.
ByteDfaSpec SubstringDfa(const std::vector<std::string>& chunks, int64_t max_states = 1000000);

}  // namespace xg2
