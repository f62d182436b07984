// A JSON Schema pattern that starts with lookaheads, `^(?=A)(?!B)R` (ECMAScript), is the
// intersection of patterns that must match (`^(?:A)`, `^(?:R)`) with the complements of
// patterns that must not (`^(?:B)`): a lookahead at the start of the string sees the whole
// string, so it is a language of its own. Lookaheads elsewhere stay refused by the regex
// front end.
#pragma once

#include <string>
#include <vector>

namespace xg2 {

struct LookaheadSplit {
  std::vector<std::string> must;      // patterns every match matches
  std::vector<std::string> must_not;  // patterns no match matches
};

// Splits `pattern` when it is `^` followed by one or more `(?=...)` / `(?!...)` groups and a
// rest with no top-level `|` (an alternation would bind the lookaheads to its first branch
// only). Returns false (out untouched) for any other pattern.
bool SplitLeadingLookaheads(const std::string& pattern, LookaheadSplit* out);

}  // namespace xg2
