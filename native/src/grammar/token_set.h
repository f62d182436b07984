// Token-level grammar elements (xgrammar's `Token(ids...)` and `ExcludeToken(ids...)`): one
// token, matched by its id rather than its text.
//
// A token read by id is the 4-byte virtual string of VirtualTokenBytes (0xFF, then the id in
// 3 bytes), the same encoding special tokens already use, so the parser, the automata and the
// matcher need no second kind of terminal: the element is a ByteDfa over virtual strings,
// tagged with its id set so that printing shows `Token(...)` / `ExcludeToken(...)` again.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "xg2/grammar.h"

namespace xg2 {

// Ids above this have no virtual string (3 bytes); no vocabulary reaches them.
constexpr int32_t kMaxVirtualTokenId = (1 << 24) - 1;

// The automaton of one virtual token string whose id is in `ids` (excluded = false) or not in
// it (excluded = true). `ids` is sorted and deduplicated here; ids above kMaxVirtualTokenId
// are kept in the tag (they print) but match nothing. Throws Error(kInvalidArgument) for a
// negative id.
std::shared_ptr<const ByteDfaSpec> TokenSetDfa(std::vector<int32_t> ids, bool excluded);

// xgrammar's TokenTagDispatch as token sets: free tokens (any but the triggers and `excludes`),
// where a trigger token is followed by its continuation; after one, free tokens again (loop)
// or the end. Lowered to (free | trigger continuation)* with the loop, free* (trigger
// continuation)? without. The callers check that no trigger is excluded.
ExprId AddTokenTagDispatch(Grammar* g, const std::vector<std::pair<int32_t, ExprId>>& dispatches,
                           std::vector<int32_t> excludes, bool loop);

// The largest token id that the grammar's token-level elements name (-1: none), for the
// compiler's check against the vocabulary.
int64_t MaxNamedTokenId(const Grammar& g);

}  // namespace xg2
