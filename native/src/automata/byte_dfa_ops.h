// Regular-language operations on byte DFAs (ByteDfaSpec), for languages that the grammar IR
// cannot express compactly: a regex's JSON string content with its decoded length bounded,
// and the complement of a union of key patterns.
#pragma once

#include <cstdint>

#include "automata/rule_dfa.h"
#include "xg2/grammar.h"

namespace xg2 {

// The DFA of expression `e` of g (no rule references: Error(kInvalidArgument) otherwise).
// Throws Error(kLimitExceeded) when it has more than max_states states.
ByteDfaSpec ByteDfaOfExpr(const Grammar& g, ExprId e, int64_t max_states);

// The strings of `content` (well-formed JSON string content: raw UTF-8 and escapes) whose
// decoded length, in characters, is within [min_len, max_len] (max_len -1: no bound). An
// escape such as \n or \u00e9 is one character, and so is a \u surrogate pair. Throws
// Error(kLimitExceeded) when the product has more than max_states states.
ByteDfaSpec IntersectJsonLength(const ByteDfaSpec& content, int64_t min_len, int64_t max_len, int64_t max_states);

// The strings of `universe` that `excluded` does not accept (same limit).
ByteDfaSpec Difference(const ByteDfaSpec& universe, const ByteDfaSpec& excluded, int64_t max_states);

// Drops states that reach no final state, then minimises when small enough. A DFA with no
// string keeps one non-final state.
ByteDfaSpec TrimAndMinimize(const ByteDfaSpec& dfa);

// Whether `dfa` accepts `s` (for tests and assertions).
bool ByteDfaAccepts(const ByteDfaSpec& dfa, const std::string& s);

}  // namespace xg2
