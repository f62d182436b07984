// Regular-language operations on byte DFAs (ByteDfaSpec), for languages that the grammar IR
// cannot express compactly: a regex's JSON string content with its decoded length bounded,
// and the complement of a union of key patterns.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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
//
// With `stop` (per content state), the product does not expand the count past a stop state
// reached on a character boundary: that product state gets no edges, is not final, and is
// listed in *exits with its count, so the caller can append the rest as a counted repetition
// (see JsonStarStates) instead of one state per count.
struct JsonLengthExit {
  int32_t state;          // in the product
  int32_t content_state;  // the stop state
  int64_t count;          // characters read before it (saturated at min_len when unbounded)
};
ByteDfaSpec IntersectJsonLength(const ByteDfaSpec& content, int64_t min_len, int64_t max_len, int64_t max_states,
                                const std::vector<uint8_t>* stop = nullptr,
                                std::vector<JsonLengthExit>* exits = nullptr);

// Whether IntersectJsonLength(content, min_len, max_len, max_states, stop) would build more
// than max_states states. Counts the (content state, decoder state) pairs reachable with each
// number of characters, layer by layer, without building edges: a refusal costs a fraction
// of the product it spares.
bool JsonLengthProductExceeds(const ByteDfaSpec& content, int64_t min_len, int64_t max_len, int64_t max_states,
                              const std::vector<uint8_t>* stop = nullptr);

// Whether every state of `content` (from its start, at a character boundary) is reached in
// one JSON decoder state only, every byte it reads is well-formed there and every final state
// is at a character boundary: then IntersectJsonLength(content, 0, -1, ...) is `content`
// itself, state for state.
bool JsonDecoderDetermined(const ByteDfaSpec& content);

// Final states s of `content` whose residual language is C* for a set C of complete
// characters: every character read from s returns to s (e.g. the loop of "^x[a-z]*$").
std::vector<uint8_t> JsonStarStates(const ByteDfaSpec& content);

// The strings of one character leading from s back to s (s a star state), as a DFA.
ByteDfaSpec JsonCharLoop(const ByteDfaSpec& content, int32_t s);

// The product of `universe` with up to 64 `parts`: one state per reachable tuple, final
// where the universe is, and per state the set of parts that accept there (bit i: parts[i]).
// Selecting final states by that set gives any Boolean combination of the parts within the
// universe (intersection, union, difference, complement) from one construction.
struct ByteDfaProduct {
  ByteDfaSpec dfa;
  std::vector<uint64_t> accepted_by;
};
ByteDfaProduct ProductWithParts(const ByteDfaSpec& universe, const std::vector<ByteDfaSpec>& parts, int64_t max_states);

// The product's strings whose accepting parts, restricted to `care`, are exactly `want`.
ByteDfaSpec SelectByParts(const ByteDfaProduct& p, uint64_t care, uint64_t want);
// The same, taking the product's automaton over (no copy of its states).
ByteDfaSpec SelectByParts(ByteDfaProduct&& p, uint64_t care, uint64_t want);

// Whether the DFA accepts no string.
bool ByteDfaEmpty(const ByteDfaSpec& dfa);

// Drops states that reach no final state, then minimises when small enough (and asked: a DFA
// that becomes part of a rule is minimised with the rule anyway). A DFA with no string keeps
// one non-final state.
ByteDfaSpec TrimAndMinimize(ByteDfaSpec dfa, bool minimize = true);

// Whether `dfa` accepts `s` (for tests and assertions).
bool ByteDfaAccepts(const ByteDfaSpec& dfa, const std::string& s);

// The DFA's strings with each byte of `spelled` written as its text instead (XML entities for
// markup characters); a byte with an empty text cannot be written. Each text starts with a
// spelled byte and no text is a prefix of another, so the result stays deterministic and
// every string has one spelling.
ByteDfaSpec SpellBytes(const ByteDfaSpec& dfa, const std::vector<std::pair<uint8_t, std::string>>& spelled);

}  // namespace xg2
