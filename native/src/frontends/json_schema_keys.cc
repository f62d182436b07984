// Key languages of patternProperties as automata: a key takes the schemas of every pattern
// it matches, and additionalProperties only when it matches none and is not declared, so the
// keys are partitioned by the set of patterns they match. Regions are built over every JSON
// spelling of a key (raw, short and \u escapes), so the partition is exact however a key is
// written.
#include <algorithm>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "automata/byte_dfa_ops.h"
#include "frontends/json_schema_internal.h"
#include "frontends/regex.h"
#include "xg2/errors.h"

namespace xg2::jsonschema {
namespace {

ExprId PatternExpr(Grammar* g, const std::string& pattern) {
  RegexOptions ro;
  ro.search_semantics = true;
  return RegexToExpr(g, pattern, ro);
}

}  // namespace

namespace {

// How the keys' text is built in the scratch grammar: the universe of keys, and a pattern's
// or a name's keys in the same spelling.
struct KeySpelling {
  ExprId universe;
  std::function<ExprId(Grammar*, ExprId)> of_regex;
  std::function<ExprId(Grammar*, const std::string&)> of_name;
};

// Keys partitioned by the patterns they match (see PatternKeyRegions); `must`: automata every
// key is in, over the same spelling.
std::vector<KeyRegion> KeyRegions(Grammar& g, const KeySpelling& spelling, const std::vector<std::string>& patterns,
                                  const std::vector<std::string>& declared, bool with_none,
                                  const std::vector<ByteDfaSpec>& must, int64_t max_states) {
  if (patterns.size() + must.size() > 63) throw Error(ErrorKind::kLimitExceeded, "more than 63 patternProperties");
  ByteDfaSpec universe = ByteDfaOfExpr(g, spelling.universe, max_states);
  std::vector<ByteDfaSpec> parts;
  for (const auto& p : patterns)
    parts.push_back(TrimAndMinimize(ByteDfaOfExpr(g, spelling.of_regex(&g, PatternExpr(&g, p)), max_states)));
  const uint64_t pattern_bits = (uint64_t{1} << patterns.size()) - 1;
  uint64_t care = pattern_bits;
  if (!declared.empty()) {
    std::vector<ExprId> names;
    for (const auto& d : declared) names.push_back(spelling.of_name(&g, d));
    parts.push_back(ByteDfaOfExpr(g, g.AddChoice(names), max_states));
    care |= uint64_t{1} << (parts.size() - 1);
  }
  uint64_t must_bits = 0;
  for (const ByteDfaSpec& m : must) {
    parts.push_back(m);
    must_bits |= uint64_t{1} << (parts.size() - 1);
  }
  care |= must_bits;
  ByteDfaProduct product = ProductWithParts(universe, parts, max_states);
  // The sets that occur at a final state, in first-seen order (deterministic output).
  std::vector<uint64_t> sets;
  for (size_t s = 0; s < product.accepted_by.size(); ++s) {
    const uint64_t m = product.accepted_by[s];
    if (!product.dfa.is_final[s] || (m & care & ~pattern_bits) != must_bits) continue;
    if ((m & pattern_bits) == 0 && !with_none) continue;
    if (std::find(sets.begin(), sets.end(), m & pattern_bits) == sets.end()) sets.push_back(m & pattern_bits);
  }
  std::vector<KeyRegion> out;
  for (uint64_t set : sets) out.push_back({set, TrimAndMinimize(SelectByParts(product, care, set | must_bits))});
  return out;
}

}  // namespace

std::vector<KeyRegion> PatternKeyRegions(const std::vector<std::string>& patterns,
                                         const std::vector<std::string>& declared, bool with_none, int64_t max_states) {
  Grammar g;  // scratch arena for the expressions the automata are built from
  const KeySpelling json{g.AddRepeat(JsonCharExpr(&g), 0, kUnbounded), RegexToJsonContentAllSpellings,
                         JsonStringContentAllSpellings};
  return KeyRegions(g, json, patterns, declared, with_none, {}, max_states);
}

std::vector<KeyRegion> DecodedKeyRegions(const std::vector<std::string>& patterns,
                                         const std::vector<std::string>& declared, bool with_none,
                                         const std::vector<ByteDfaSpec>& must, int64_t max_states) {
  Grammar g;
  const KeySpelling decoded{g.AddRepeat(g.AddCharClass({}, /*negated=*/true), 0, kUnbounded),
                            [](Grammar*, ExprId e) { return e; }, Lit};
  return KeyRegions(g, decoded, patterns, declared, with_none, must, max_states);
}

ByteDfaSpec PatternTextDfa(const std::string& pattern, int64_t max_states) {
  Grammar g;
  return ByteDfaOfExpr(g, PatternExpr(&g, pattern), max_states);
}

std::vector<std::vector<size_t>> PatternsMatchingNames(const std::vector<std::string>& patterns,
                                                       const std::vector<std::string>& names, int64_t max_states) {
  std::vector<std::vector<size_t>> out(names.size());
  if (names.empty()) return out;
  for (size_t i = 0; i < patterns.size(); ++i) {
    // Over decoded UTF-8 text: names are decoded text.
    ByteDfaSpec dfa = PatternTextDfa(patterns[i], max_states);
    for (size_t n = 0; n < names.size(); ++n)
      if (ByteDfaAccepts(dfa, names[n])) out[n].push_back(i);
  }
  return out;
}

}  // namespace xg2::jsonschema
