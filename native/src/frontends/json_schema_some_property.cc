// Objects that must have some property (Merged::some_props, from `not` of patternProperties,
// propertyNames or additionalProperties): the ways the required members can be met, each an
// ordinary object with required names or with members of their own (witnesses).
#include "frontends/json_schema_converter.h"

namespace xg2::jsonschema {

namespace {

// More witnesses multiply the assignments (declared names times groupings); none of the
// schemas seen needs more.
constexpr size_t kMaxSomeProperties = 4;
// A witness key is split by the patterns it matches: 2^n regions.
constexpr size_t kMaxWitnessPatterns = 5;

// The names a witness can take among those the object declares or requires (in that order),
// and the strings its key schema enumerates (*enumerated: the key schema is an enum, so no
// other key qualifies).
std::vector<std::string> CandidateNames(const Merged& c, const Merged& keys, bool* enumerated) {
  std::vector<std::string> names;
  auto add = [&](const std::string& n) {
    if (!c.Forbids(n) && std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  };
  for (const auto& p : c.props) add(p.first);
  for (const auto& r : c.required) add(r);
  *enumerated = keys.has_enum;
  if (keys.has_enum) {
    for (const auto& v : keys.enum_values)
      if (v.is_string()) add(v.as_string());
  }
  return names;
}

}  // namespace

ExprId Converter::SomePropertyObject(const Merged& m, int depth) {
  if (m.some_props.size() > kMaxSomeProperties) {
    Unsupported("not", m.some_props[kMaxSomeProperties].ptr,
                "more than " + std::to_string(kMaxSomeProperties) + " properties an object must have");
  }
  Merged base = m;
  base.some_props.clear();
  std::vector<std::vector<size_t>> groups;
  std::vector<ExprId> alts;
  SomePropertyCases(m.some_props, 0, base, &groups, depth, &alts);
  return g_.AddChoice(alts);
}

void Converter::SomePropertyCases(const std::vector<Merged::SomeProperty>& ws, size_t i, const Merged& c,
                                  std::vector<std::vector<size_t>>* groups, int depth, std::vector<ExprId>* alts) {
  if (--expansion_budget_ < 0) {
    Unsupported("not", ws[0].ptr, "too many combinations of alternatives to expand");
    return;
  }
  if (c.is_false) return;
  if (i == ws.size()) {
    // Witnesses in one group share their key: one member satisfying all of them.
    std::vector<Merged::SomeProperty> members;
    for (const auto& g : *groups) {
      Merged::SomeProperty u;
      u.ptr = ws[g[0]].ptr;
      for (size_t j : g) {
        u.keys.insert(u.keys.end(), ws[j].keys.begin(), ws[j].keys.end());
        u.value.insert(u.value.end(), ws[j].value.begin(), ws[j].value.end());
      }
      members.push_back(std::move(u));
    }
    alts->push_back(ObjectExpr(c, depth, members));
    return;
  }
  const Merged::SomeProperty& w = ws[i];
  // propertyNames narrows every key: an enum there enumerates the witness's names too.
  Merged keys;
  for (const auto& r : w.keys) MergeInto(&keys, r, 0);
  for (const auto& r : c.property_names) MergeInto(&keys, r, 0);
  bool enumerated = false;
  for (const std::string& n : CandidateNames(c, keys, &enumerated)) {
    if (!ValueSatisfies(w.keys, JsonValue::String(n))) continue;
    // The name is present and its value also satisfies the witness's value schemas.
    Merged d = c;
    if (!d.Requires(n)) d.required.push_back(n);
    auto p = std::find_if(d.props.begin(), d.props.end(), [&](const auto& pr) { return pr.first == n; });
    if (p == d.props.end()) {
      if (!c.Requires(n)) d.witness_names.push_back(n);
      d.props.push_back({n, w.value});
    } else {
      p->second.insert(p->second.end(), w.value.begin(), w.value.end());
    }
    SomePropertyCases(ws, i + 1, d, groups, depth, alts);
  }
  if (enumerated || keys.is_false || !(keys.types & kStr)) return;
  // By index: the recursion appends groups, which may move them.
  for (size_t g = 0; g < groups->size(); ++g) {
    (*groups)[g].push_back(i);
    SomePropertyCases(ws, i + 1, c, groups, depth, alts);
    (*groups)[g].pop_back();
  }
  groups->push_back({i});
  SomePropertyCases(ws, i + 1, c, groups, depth, alts);
  groups->pop_back();
}

ExprId Converter::WitnessMember(const Merged& m, const Merged::SomeProperty& w,
                                const std::vector<std::string>& declared, const std::vector<Ref>* add, int depth) {
  const size_t np = m.pattern_props.size();
  if (np > kMaxWitnessPatterns) {
    Unsupported("not", w.ptr,
                "a property the object must have, beside more than " + std::to_string(kMaxWitnessPatterns) +
                    " patternProperties");
    return Never();
  }
  if (Excluding()) Unsupported("not", w.ptr, "a property the object must have, with excluded substrings");
  Merged keys;
  for (const auto& r : w.keys) MergeInto(&keys, r, 0);
  for (const auto& r : m.property_names) MergeInto(&keys, r, 0);
  if (keys.is_false || !(keys.types & kStr)) return Never();
  if (!keys.any_of.empty() || keys.has_enum) {
    // An enum of keys is met by names (SomePropertyCases); combinators have no key language here.
    if (!keys.any_of.empty()) Unsupported("not", w.ptr, "a property the object must have, with combinators in its key");
    return Never();
  }
  for (const auto& d : declared) keys.not_values.push_back(JsonValue::String(d));
  std::vector<ExprId> alts;
  for (uint64_t set = 0; set < (uint64_t{1} << np); ++set) {
    Merged region = keys;
    std::vector<Ref> value = w.value;
    for (size_t i = 0; i < np; ++i) {
      const auto& pp = m.pattern_props[i];
      if (set >> i & 1) {
        region.patterns.push_back(pp.first);
        value.insert(value.end(), pp.second.begin(), pp.second.end());
      } else {
        region.not_patterns.push_back(pp.first);
      }
    }
    if (set == 0) {
      if (add == nullptr) continue;
      value.insert(value.end(), add->begin(), add->end());
    }
    ExprId val = ValueRef(value, depth);
    if (val == kNoExpr) continue;
    alts.push_back(g_.AddSequence({StringExpr(region), KeySep(), val}));
  }
  return g_.AddChoice(alts);
}

}  // namespace xg2::jsonschema
