// oneOf: alternatives checked for disjointness, rewritten with negations where they overlap,
// and the required-only form.
#include "frontends/json_schema_converter.h"

namespace xg2::jsonschema {

MergeFn Converter::Merger() {
  return [this](const std::vector<Ref>& parts) {
    Merged c;
    for (const auto& p : parts) MergeInto(&c, p, 0);
    return c;
  };
}

bool Converter::ProvablyDisjointSchemas(const JsonValue& a, const std::string& a_ptr, const JsonValue& b,
                                        const std::string& b_ptr) {
  MergeFn merge = Merger();
  return ProvablyDisjoint(merge({Ref{&a, a_ptr}}), merge({Ref{&b, b_ptr}}), merge);
}

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
  MergeFn merge = Merger();
  for (size_t i = 0; i < alts.size(); ++i) {
    for (size_t j = i + 1; j < alts.size(); ++j) {
      if (!ProvablyDisjoint(alts[i], alts[j], merge)) {
        std::vector<Merged> rewritten = RequiredOnlyOneOf(base, group);
        if (rewritten.empty()) {
          rewritten = NegatedOneOf(base, group, alts, merge, at);
          if (!rewritten.empty()) negated_one_of_.insert(at);
        }
        if (!rewritten.empty()) return rewritten;
        // Why the exact rewrite did not apply, so the refusal names the part to support.
        std::string because;
        if (auto why = no_negation_.find(at); why != no_negation_.end()) {
          because = "; excluding the others needs " + why->second;
        } else {
          for (size_t k : {i, j}) {
            if (because.empty() && !Negatable(alts[i + j - k], group[k]))
              because = "; alternative " + std::to_string(k) + " has no exact negation";
          }
        }
        Unsupported("oneOf", at,
                    "alternatives " + std::to_string(i) + " and " + std::to_string(j) +
                        " are not provably exclusive (lowered as anyOf)" + because);
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
      if (!overlap[i][j]) continue;
      if (!Negatable(alts[i], group[j]) || !Negatable(alts[j], group[i])) return {};
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
      if (j != i && overlap[i][j] && !MergeExclusion(&c, group[j], at)) Unsupported("not", group[j].ptr);
    }
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

// The names an object matching m may have, when m closes its keys: a schema merged into m with
// additionalProperties false (and no patternProperties) admits only the names it declares in
// properties (additionalProperties applies to names declared elsewhere, see ObjectExpr).
std::optional<std::vector<std::string>> ClosedKeys(const Merged& m) {
  std::optional<std::vector<std::string>> keys;
  for (size_t i = 0; i < m.additional.size(); ++i) {
    const JsonValue& a = *m.additional[i].v;
    if (!a.is_bool() || a.as_bool()) continue;
    const JsonValue* parent = m.additional_parent[i];
    if (parent->Find("patternProperties") != nullptr) continue;
    std::vector<std::string> names;
    const JsonValue* props = parent->Find("properties");
    if (props && props->is_object()) {
      for (const auto& pm : props->members()) {
        if (!keys || std::find(keys->begin(), keys->end(), pm.first) != keys->end()) names.push_back(pm.first);
      }
    }
    keys = std::move(names);
  }
  return keys;
}

JsonValue RequiredWith(const std::string& name, JsonValue value_schema) {
  return JsonValue::Object({{"type", JsonValue::String("object")},
                            {"required", JsonValue::Array({JsonValue::String(name)})},
                            {"properties", JsonValue::Object({{name, std::move(value_schema)}})}});
}

}  // namespace

// not s = (not of s's other keywords) or (a declared property with a value s's schema for it
// rejects) or (a key of `keys` s does not declare, with a value additionalProperties rejects).
std::optional<JsonValue> Converter::NegateWithinKeys(const JsonValue& s, const std::string& ptr,
                                                     const std::vector<std::string>& keys, int guard) {
  if (guard > 16 || !s.is_object()) return std::nullopt;
  if (const JsonValue* ref = s.Find("$ref")) {
    bool ref_only = ref_overrides_siblings_ || std::all_of(s.members().begin(), s.members().end(), [](const auto& kv) {
                      return kv.first == "$ref" || IsAnnotation(kv.first);
                    });
    if (!ref_only || !ref->is_string()) return std::nullopt;
    Ref t = Resolve(ref->as_string(), ptr);
    return NegateWithinKeys(*t.v, t.ptr, keys, guard + 1);
  }
  const JsonValue* add = s.Find("additionalProperties");
  const JsonValue* props = s.Find("properties");
  if (add == nullptr || s.Find("patternProperties") != nullptr || (props && !props->is_object())) return std::nullopt;
  std::vector<std::pair<std::string, JsonValue>> rest;
  for (const auto& kv : s.members()) {
    if (kv.first != "properties" && kv.first != "additionalProperties") rest.push_back(kv);
  }
  std::vector<JsonValue> alts;
  if (!rest.empty()) {
    std::optional<JsonValue> neg_rest = Negate(JsonValue::Object(rest), ptr, guard + 1);
    if (!neg_rest) return std::nullopt;
    alts.push_back(std::move(*neg_rest));
  }
  auto not_of = [](const JsonValue& v) { return JsonValue::Object({{"not", v}}); };
  if (props) {
    for (const auto& pm : props->members()) {
      if (!(pm.second.is_bool() && pm.second.as_bool())) alts.push_back(RequiredWith(pm.first, not_of(pm.second)));
    }
  }
  if (!(add->is_bool() && add->as_bool())) {
    for (const auto& k : keys) {
      if (!props || props->Find(k) == nullptr) alts.push_back(RequiredWith(k, not_of(*add)));
    }
  }
  if (alts.empty()) return JsonValue::Bool(false);
  return JsonValue::Object({{"anyOf", JsonValue::Array(std::move(alts))}});
}

// Within closed keys first: its finite set of keys needs no member of its own (see
// SomePropertyObject), which the plain negation of additionalProperties has.
bool Converter::Negatable(const Merged& within, const Ref& other) {
  std::optional<std::vector<std::string>> keys = ClosedKeys(within);
  if (keys && NegateWithinKeys(*other.v, other.ptr, *keys, 0)) return true;
  return Negate(*other.v, other.ptr, 0).has_value();
}

bool Converter::MergeExclusion(Merged* c, const Ref& other, const std::string& at) {
  std::optional<std::vector<std::string>> keys = ClosedKeys(*c);
  std::optional<JsonValue> pos = keys ? NegateWithinKeys(*other.v, other.ptr, *keys, 0) : std::nullopt;
  if (!pos) return Negate(*other.v, other.ptr, 0) && MergeNegation(c, other, at);
  synth_.push_back(std::make_unique<JsonValue>(std::move(*pos)));
  MergeInto(c, Ref{synth_.back().get(), other.ptr}, 0);
  return true;
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
