// Key languages of patternProperties as automata: a key takes the schemas of every pattern
// it matches, and additionalProperties only when it matches none and is not declared, so the
// keys are partitioned by the set of patterns they match. Regions are built over every JSON
// spelling of a key (raw, short and \u escapes), so the partition is exact however a key is
// written.
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

std::vector<KeyRegion> PatternKeyRegions(const std::vector<std::string>& patterns,
                                         const std::vector<std::string>& declared, bool with_none, int64_t max_states) {
  if (patterns.size() > 63) throw Error(ErrorKind::kLimitExceeded, "more than 63 patternProperties");
  Grammar g;  // scratch arena for the expressions the automata are built from
  ByteDfaSpec universe = ByteDfaOfExpr(g, g.AddRepeat(JsonCharExpr(&g), 0, kUnbounded), max_states);
  std::vector<ByteDfaSpec> parts;
  for (const auto& p : patterns) {
    parts.push_back(
        TrimAndMinimize(ByteDfaOfExpr(g, RegexToJsonContentAllSpellings(&g, PatternExpr(&g, p)), max_states)));
  }
  const uint64_t pattern_bits = (uint64_t{1} << patterns.size()) - 1;
  uint64_t care = pattern_bits;
  if (!declared.empty()) {
    std::vector<ExprId> names;
    for (const auto& d : declared) names.push_back(JsonStringContentAllSpellings(&g, d));
    parts.push_back(ByteDfaOfExpr(g, g.AddChoice(names), max_states));
    care |= uint64_t{1} << patterns.size();
  }
  ByteDfaProduct product = ProductWithParts(universe, parts, max_states);
  // The sets that occur at a final state, in first-seen order (deterministic output).
  std::vector<uint64_t> sets;
  for (size_t s = 0; s < product.accepted_by.size(); ++s) {
    const uint64_t m = product.accepted_by[s];
    if (!product.dfa.is_final[s] || (m & ~pattern_bits & care) != 0) continue;
    if ((m & pattern_bits) == 0 && !with_none) continue;
    if (std::find(sets.begin(), sets.end(), m & pattern_bits) == sets.end()) sets.push_back(m & pattern_bits);
  }
  std::vector<KeyRegion> out;
  for (uint64_t set : sets) out.push_back({set, TrimAndMinimize(SelectByParts(product, care, set))});
  return out;
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
