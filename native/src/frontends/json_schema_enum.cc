// enum/const beside other keywords: a value is written only when it satisfies them all (an
// enum narrows the schema, it never widens it). Keywords a literal cannot be checked against
// here are refused, not ignored.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "automata/byte_dfa_ops.h"
#include "frontends/json_schema_converter.h"

namespace xg2::jsonschema {
namespace {

int64_t CodepointCount(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool WithinBounds(double x, const NumBound& lo, const NumBound& hi) {
  if (lo.present && (x < lo.value || (lo.exclusive && x == lo.value))) return false;
  if (hi.present && (x > hi.value || (hi.exclusive && x == hi.value))) return false;
  return true;
}

// Exact: both literals scaled to integers over their common fraction digits; nullopt when they
// do not fit 64 bits.
std::optional<bool> IsMultipleOf(const std::string& value, const std::string& divisor) {
  Decimal v, d;
  try {
    v = ParseDecimal(value, "multipleOf");
    d = ParseDecimal(divisor, "multipleOf");
  } catch (const UnsupportedKeyword&) {
    return std::nullopt;  // an exponent beyond the parser's range
  }
  size_t digits = std::max(v.frac.size(), d.frac.size());
  auto scaled = [&](const Decimal& x) -> std::optional<int64_t> {
    if (x.ip.size() > 18) return std::nullopt;
    __int128 n = std::stoll(x.ip);
    for (size_t i = 0; i < digits; ++i) {
      n = n * 10 + (i < x.frac.size() ? x.frac[i] - '0' : 0);
      if (n > INT64_MAX) return std::nullopt;
    }
    return static_cast<int64_t>(n);
  };
  std::optional<int64_t> sv = scaled(v), sd = scaled(d);
  if (!sv || !sd || *sd == 0) return std::nullopt;
  return *sv % *sd == 0;
}

// A subschema every value satisfies: true or {} (nothing to check a literal against).
bool AllTrue(const std::vector<Ref>& refs) {
  return std::all_of(refs.begin(), refs.end(), [](const Ref& r) { return IsTrueSchema(*r.v); });
}

}  // namespace

bool Converter::EnumValueAllowed(const Merged& m, const JsonValue& v) {
  if (v.is_string()) return EnumStringAllowed(m, v.as_string());
  if (v.is_number()) {
    if (!WithinBounds(v.as_number(), m.lo, m.hi)) return false;
    for (const Ref& d : m.multiple_of) {
      std::optional<bool> yes = IsMultipleOf(v.number_literal(), d.v->number_literal());
      if (!yes) {
        Unsupported("multipleOf", d.ptr, "an enum value too large to check against it");
        return true;
      }
      if (!*yes) return false;
    }
    for (const Ref& d : m.not_multiple_of) {
      std::optional<bool> yes = IsMultipleOf(v.number_literal(), d.v->number_literal());
      if (!yes) {
        Unsupported("not", d.ptr, "an enum value too large to check against multipleOf");
        return true;
      }
      if (*yes) return false;
    }
    return true;
  }
  if (v.is_array()) {
    int64_t n = static_cast<int64_t>(v.items().size());
    if (n < m.min_items || (m.max_items >= 0 && n > m.max_items)) return false;
    if (m.unique_items) {
      // JSON equality (numbers by value, members in any order).
      for (size_t i = 0; i < v.items().size(); ++i)
        for (size_t j = i + 1; j < v.items().size(); ++j)
          if (v.items()[i] == v.items()[j]) return false;
    }
    for (size_t k = 0; k < m.contains.size(); ++k) {
      // Each contains (several come from allOf) counts the items of its own kind.
      const int64_t matches = std::count_if(v.items().begin(), v.items().end(),
                                            [&](const JsonValue& x) { return ValueSatisfies({m.contains[k]}, x); });
      const auto [lo, hi] = m.contains_counts[k];
      if (matches < lo || (hi >= 0 && matches > hi)) return false;
    }
    for (size_t i = 0; i < v.items().size(); ++i) {
      // Position i takes its prefixItems schema, or items past the prefix; items_all (items
      // without a sibling prefix) applies at every position.
      std::vector<Ref> refs = m.items_all;
      if (m.has_prefix && i < m.prefix.size()) {
        refs.insert(refs.end(), m.prefix[i].begin(), m.prefix[i].end());
      } else if (m.items_set) {
        refs.insert(refs.end(), m.items.begin(), m.items.end());
      }
      if (!ValueSatisfies(refs, v.items()[i])) return false;
    }
    return true;
  }
  if (v.is_object()) {
    int64_t n = static_cast<int64_t>(v.members().size());
    if (n < m.min_props || (m.max_props >= 0 && n > m.max_props)) return false;
    auto has = [&](const std::string& name) {
      for (const auto& kv : v.members())
        if (kv.first == name) return true;
      return false;
    };
    for (const std::string& name : m.required)
      if (!has(name)) return false;
    for (const auto& d : m.presence_deps) {
      if (has(d.name) && std::none_of(d.any_of.begin(), d.any_of.end(),
                                      [&](const auto& alt) { return std::all_of(alt.begin(), alt.end(), has); }))
        return false;
    }
    for (const auto& kv : v.members())
      if (m.Forbids(kv.first)) return false;
    for (const auto& w : m.some_props) {
      if (std::none_of(v.members().begin(), v.members().end(), [&](const auto& kv) {
            return ValueSatisfies(w.keys, JsonValue::String(kv.first)) && ValueSatisfies(w.value, kv.second);
          }))
        return false;
    }
    if (!AllTrue(m.property_names)) {
      for (const auto& kv : v.members())
        if (!ValueSatisfies(m.property_names, JsonValue::String(kv.first))) return false;
    }
    // Patterns match names by search, over the decoded text (as the names are here).
    auto name_matches = [&](const std::string& pattern, const std::string& name) {
      try {
        return ByteDfaAccepts(*ValueDfa('p', pattern), name);
      } catch (const Error& e) {
        Unsupported("patternProperties", cur_ptr_, std::string("matching an enum value's names: ") + e.what());
        return false;
      }
    };
    for (const auto& kv : v.members()) {
      std::vector<Ref> conj;
      for (const auto& pr : m.props)
        if (pr.first == kv.first) conj = pr.second;
      for (const auto& pp : m.pattern_props)
        if (name_matches(pp.first.v->as_string(), kv.first))
          conj.insert(conj.end(), pp.second.begin(), pp.second.end());
      // additionalProperties applies to every name its own schema object neither declares nor
      // matches with one of its patternProperties.
      for (size_t j = 0; j < m.additional.size(); ++j) {
        const JsonValue* parent = m.additional_parent[j];
        const JsonValue* sib = parent->Find("properties");
        if (sib && sib->is_object() && sib->Find(kv.first)) continue;
        const JsonValue* sib_patterns = parent->Find("patternProperties");
        if (sib_patterns && sib_patterns->is_object() &&
            std::any_of(sib_patterns->members().begin(), sib_patterns->members().end(),
                        [&](const auto& pm) { return name_matches(pm.first, kv.first); }))
          continue;
        conj.push_back(m.additional[j]);
      }
      if (!ValueSatisfies(conj, kv.second)) return false;
    }
    return true;
  }
  return true;  // null, booleans: only the type applies, checked by EnumValues
}

bool Converter::ValueSatisfies(const std::vector<Ref>& refs, const JsonValue& v) {
  if (AllTrue(refs)) return true;
  Merged c;
  for (const Ref& r : refs) MergeInto(&c, r, 0);
  if (c.is_false) return false;
  if (!c.any_of.empty()) {
    Unsupported("enum", c.any_of_at[0], "a value inside an enum beside anyOf/oneOf");
    return true;
  }
  ResolveUnevaluated(&c);
  Merged typed = c;
  typed.enum_values = {v};
  if (EnumValues(typed).empty()) return false;  // the type does not allow it
  if (c.has_enum &&
      std::none_of(c.enum_values.begin(), c.enum_values.end(), [&](const JsonValue& e) { return e == v; }))
    return false;
  return EnumValueAllowed(c, v);
}

bool Converter::EnumStringAllowed(const Merged& m, const std::string& s) {
  int64_t n = CodepointCount(s);
  if (n < m.min_len || (m.max_len >= 0 && n > m.max_len)) return false;
  if (m.Excludes(JsonValue::String(s))) return false;
  // Patterns and formats match the decoded text; their DFAs are built once per conversion.
  auto matches = [&](const Ref& r, char kind) -> std::optional<bool> {
    const ByteDfaSpec* dfa = ValueDfa(kind, r.v->as_string());
    if (dfa == nullptr) return std::nullopt;
    return ByteDfaAccepts(*dfa, s);
  };
  for (const Ref& p : m.patterns)
    if (!*matches(p, 'p')) return false;
  for (const Ref& p : m.not_patterns)
    if (*matches(p, 'p')) return false;
  auto in_format = [&](const Ref& f) { return matches(f, 'f'); };
  for (const Ref& f : m.formats) {
    std::optional<bool> yes = in_format(f);
    if (!yes) {
      Unsupported("format", f.ptr, "an enum value cannot be checked against this format");
      continue;
    }
    if (!*yes) return false;
  }
  for (const Ref& f : m.not_formats) {
    std::optional<bool> yes = in_format(f);
    if (!yes) {
      Unsupported("not", f.ptr, "an enum value cannot be checked against this format");
      continue;
    }
    if (*yes) return false;
  }
  return true;
}

const ByteDfaSpec* Converter::ValueDfa(char kind, const std::string& text) {
  auto key = std::make_pair(kind, text);
  auto it = value_dfas_.find(key);
  if (it == value_dfas_.end()) {
    ByteDfaSpec dfa;
    if (kind == 'p') {
      dfa = PatternTextDfa(text, kMaxPatternDfaStates);
    } else {
      Grammar g;
      ExprId e = FormatDecodedExpr(&g, text);
      if (e == kNoExpr) return nullptr;
      dfa = ByteDfaOfExpr(g, e, kMaxPatternDfaStates);
    }
    it = value_dfas_.emplace(std::move(key), std::move(dfa)).first;
  }
  return &it->second;
}

}  // namespace xg2::jsonschema
