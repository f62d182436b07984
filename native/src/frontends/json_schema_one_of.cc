// oneOf: alternatives checked for disjointness, rewritten with negations where they overlap,
// and the required-only form.
#include "frontends/json_schema_converter.h"

namespace xg2::jsonschema {

// oneOf lowers as anyOf, which is exact only when no value matches two alternatives (each
// merged with the rest of its schema); otherwise the widening is reported.
// Returns the alternatives to lower in place of the group when it had to rewrite them (see
// RequiredOnlyOneOf), else an empty vector.
std::vector<Merged> Converter::CheckOneOf(const Merged& base, const std::vector<Ref>& group, const std::string& at) {
  std::vector<Merged> alts;
  for (const auto& a : group) {
    Merged c = base;
    MergeInto(&c, a, 0);
    alts.push_back(std::move(c));
  }
  MergeFn merge = [this](const std::vector<Ref>& parts) {
    Merged c;
    for (const auto& p : parts) MergeInto(&c, p, 0);
    return c;
  };
  for (size_t i = 0; i < alts.size(); ++i) {
    for (size_t j = i + 1; j < alts.size(); ++j) {
      if (!ProvablyDisjoint(alts[i], alts[j], merge)) {
        std::vector<Merged> rewritten = RequiredOnlyOneOf(base, group);
        if (rewritten.empty()) {
          rewritten = NegatedOneOf(base, group, alts, merge, at);
          if (!rewritten.empty()) negated_one_of_.insert(at);
        }
        if (!rewritten.empty()) return rewritten;
        Unsupported("oneOf", at,
                    "alternatives " + std::to_string(i) + " and " + std::to_string(j) +
                        " are not provably exclusive (lowered as anyOf)");
        return {};
      }
    }
  }
  return {};
}

// oneOf as "alternative i and none of the others it may overlap": base, A_i and `not A_j`
// for every j not provably disjoint from i, when each such A_j has an exact negation (see
// NegateSchema). Empty otherwise.
std::vector<Merged> Converter::NegatedOneOf(const Merged& base, const std::vector<Ref>& group,
                                            const std::vector<Merged>& alts, const MergeFn& merge,
                                            const std::string& at) {
  const size_t n = group.size();
  std::vector<std::vector<uint8_t>> overlap(n, std::vector<uint8_t>(n, 0));
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      overlap[i][j] = overlap[j][i] = !ProvablyDisjoint(alts[i], alts[j], merge);
      if (overlap[i][j] && (!Negate(*group[i].v, group[i].ptr, 0) || !Negate(*group[j].v, group[j].ptr, 0))) return {};
    }
  }
  // Everything the rewrite merges and lowers runs in a negation scope: if some part of it
  // turns out unsupported, the conversion restarts without rewriting this oneOf, which is
  // then reported as such (rather than as the `not` it tried).
  if (no_negation_.count(at)) return {};
  std::vector<Merged> out;
  NegationScope scope(this, at);
  for (size_t i = 0; i < n; ++i) {
    Merged c = base;
    MergeInto(&c, group[i], 0);
    for (size_t j = 0; j < n; ++j) {
      if (j != i && overlap[i][j] && !MergeNegation(&c, group[j], at)) Unsupported("not", group[j].ptr);
    }
    out.push_back(std::move(c));
  }
  return out;
}

// oneOf whose alternatives only list required properties ("exactly one of these sets"):
// alternative i holds when its names are present and, for every other alternative j, one of
// j's names is absent, which is expressible when j has one name that i lacks (i is dropped
// when it has all of j's). Values that are not objects match every alternative and so none
// exactly once. Empty when the group has another shape.
std::vector<Merged> Converter::RequiredOnlyOneOf(const Merged& base, const std::vector<Ref>& group) {
  std::vector<std::vector<std::string>> names;
  for (const auto& a : group) {
    if (!a.v->is_object()) return {};
    std::vector<std::string> req;
    for (const auto& kv : a.v->members()) {
      if (IsAnnotation(kv.first)) continue;
      if (kv.first != "required" || !kv.second.is_array()) return {};
      for (const auto& it : kv.second.items()) {
        if (!it.is_string()) return {};
        req.push_back(it.as_string());
      }
    }
    names.push_back(req);
  }
  std::vector<Merged> out;
  for (size_t i = 0; i < group.size(); ++i) {
    Merged c = base;
    MergeInto(&c, group[i], 0);
    c.types &= kObj;
    for (size_t j = 0; j < group.size() && !c.is_false; ++j) {
      if (j == i) continue;
      std::vector<std::string> missing;
      for (const auto& n : names[j]) {
        if (std::find(names[i].begin(), names[i].end(), n) == names[i].end()) missing.push_back(n);
      }
      if (missing.empty())
        c.is_false = true;
      else if (missing.size() == 1)
        c.absent.push_back({missing[0], "oneOf", group[j].ptr});
      else
        return {};
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace xg2::jsonschema
