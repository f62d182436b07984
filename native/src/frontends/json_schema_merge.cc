// Conjunctions: allOf, $ref with siblings, dependencies and if/then/else merged into one
// constraint set (Merged) before lowering.
#include "frontends/json_schema_converter.h"
#include "frontends/regex_lookaheads.h"

namespace xg2::jsonschema {

std::string NotASchemaMessage(const std::string& ptr) {
  const std::string generic = "a schema must be an object or a boolean";
  const size_t slash = ptr.rfind('/');
  if (slash == std::string::npos) return generic;
  const std::string last = ptr.substr(slash + 1);
  const size_t before = slash == 0 ? std::string::npos : ptr.rfind('/', slash - 1);
  const std::string parent = before == std::string::npos ? "" : ptr.substr(before + 1, slash - before - 1);
  const bool index =
      !last.empty() && std::all_of(last.begin(), last.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (index && (parent == "prefixItems" || parent == "items")) {
    return parent + " must be an array of objects or booleans: " + generic;
  }
  // A keyword whose value is one schema, unless the token is a property name under a map.
  static const char* const kSingle[] = {"items",
                                        "additionalItems",
                                        "unevaluatedItems",
                                        "additionalProperties",
                                        "unevaluatedProperties",
                                        "contains",
                                        "propertyNames",
                                        "not",
                                        "if",
                                        "then",
                                        "else"};
  const bool under_map = parent == "properties" || parent == "patternProperties" || parent == "$defs" ||
                         parent == "definitions" || parent == "dependentSchemas" || parent == "dependencies";
  // xgrammar words the array keywords "a boolean or an object", the others "an object".
  const bool array_keyword = last.size() > 5 && last.compare(last.size() - 5, 5, "Items") == 0;
  for (const char* k : kSingle) {
    if (last == k && !under_map) {
      return last +
             (last == "items" || array_keyword ? " must be a boolean or an object" : " must be an object or a boolean");
    }
  }
  return generic;
}

std::string BadMultipleOfMessage(const JsonValue& v) {
  return v.is_number() ? "multipleOf must be greater than 0"
                       : "Value must be a number: multipleOf must be a positive number";
}

void Converter::MergeInto(Merged* m, const Ref& r, int guard) {
  if (guard > 64) Invalid(r.ptr, "$ref chain too deep or cyclic");
  if (r.v == nullptr) return;
  const JsonValue& s = *r.v;
  if (s.is_bool()) {
    if (!s.as_bool()) m->is_false = true;
    return;
  }
  if (!s.is_object()) Invalid(r.ptr, NotASchemaMessage(r.ptr));
  if (guard == 0) {
    ++m->merge_roots;
    m->scope_root = &s;
  }
  const std::string& P = r.ptr;
  bool draft4_excl_min = false, draft4_excl_max = false;
  if (const JsonValue* e = s.Find("exclusiveMinimum")) draft4_excl_min = e->is_bool() && e->as_bool();
  if (const JsonValue* e = s.Find("exclusiveMaximum")) draft4_excl_max = e->is_bool() && e->as_bool();
  const JsonValue* items_v = s.Find("items");
  bool items_is_array = items_v && items_v->is_array();
  bool ref_only = ref_overrides_siblings_ && s.Find("$ref") != nullptr;
  for (const auto& kv : s.members()) {
    const std::string& k = kv.first;
    const JsonValue& v = kv.second;
    std::string kp = JsonPointerChild(P, k);
    if (IsAnnotation(k)) continue;
    if (ref_only && k != "$ref") continue;
    if (k == "$ref") {
      if (!v.is_string()) Invalid(kp, "$ref must be a string");
      Ref t = Resolve(v.as_string(), P);
      if (t.v && m->scope_root == &s && RefStandsAlone(s))
        m->scope_root = t.v;  // the target's keywords see the same scope
      if (t.v) MergeRef(m, t, guard + 1);
      continue;
    }
    if (k == "allOf" || k == "anyOf" || k == "oneOf") {
      if (!v.is_array() || v.items().empty()) Invalid(kp, k + " must be a non-empty array");
      if (k == "allOf") {
        for (size_t i = 0; i < v.items().size(); ++i)
          MergeInto(m, Ref{&v.items()[i], kp + "/" + std::to_string(i)}, guard + 1);
      } else {
        std::vector<Ref> alts;
        for (size_t i = 0; i < v.items().size(); ++i) alts.push_back(Ref{&v.items()[i], kp + "/" + std::to_string(i)});
        m->any_of.push_back(alts);
        m->any_of_at.push_back(P);
        m->any_of_exclusive.push_back(k == "oneOf");
      }
      continue;
    }
    if (k == "dependentRequired" || k == "dependentSchemas" || k == "dependencies") {
      MergeDependencies(m, v, kp, k);
      continue;
    }
    if (k == "if") {
      m->evaluation_unknown = true;
      if (!conditions_ignored_) MergeCondition(m, s, P);
      continue;
    }
    if (k == "then" || k == "else") continue;  // read with "if"; without one they assert nothing
    if (k == "unevaluatedProperties" || k == "unevaluatedItems") {
      if (v.is_bool() && v.as_bool()) {
        (k == "unevaluatedProperties" ? m->all_props_evaluated : m->all_items_evaluated) = true;
        continue;
      }
      if (!v.is_bool() && !v.is_object()) Invalid(kp, NotASchemaMessage(kp));
      m->constrained = true;
      (k == "unevaluatedProperties" ? m->unevaluated_props : m->unevaluated_items).push_back(Ref{&v, kp});
      m->unevaluated_at = P;
      if (&s != m->scope_root) m->unevaluated_off_root = true;
      continue;
    }
    if (k == "minContains" || k == "maxContains") {
      NonNegInt(v, kp, k);  // read beside "contains" (nothing without one)
      continue;
    }
    if (IsKnownUnsupported(k)) {
      Unsupported(k, P);
      continue;
    }
    m->constrained = true;
    if (k == "type") {
      uint8_t t = 0;
      if (v.is_string()) {
        t = TypeFromName(v.as_string());
        if (!t) Invalid(kp, "unknown type '" + v.as_string() + "'");
      } else if (v.is_array()) {
        for (const auto& it : v.items()) {
          uint8_t x = it.is_string() ? TypeFromName(it.as_string()) : 0;
          if (!x) Invalid(kp, "unknown type " + it.Dump());
          t |= x;
        }
      } else {
        Invalid(kp, "type must be a string or an array");
      }
      m->types &= t;
    } else if (k == "enum" || k == "const") {
      std::vector<JsonValue> vals;
      if (k == "const") {
        vals.push_back(v);
      } else {
        if (!v.is_array()) Invalid(kp, "enum must be an array");
        vals = v.items();
      }
      if (!m->has_enum) {
        m->has_enum = true;
        m->enum_values = vals;
      } else {
        std::vector<JsonValue> keep;
        for (const auto& a : m->enum_values) {
          for (const auto& b : vals) {
            if (a == b) {
              keep.push_back(a);
              break;
            }
          }
        }
        m->enum_values = keep;
      }
      if (!m->not_values.empty()) {
        std::vector<JsonValue> keep;
        for (const auto& a : m->enum_values) {
          if (!m->Excludes(a)) keep.push_back(a);
        }
        m->enum_values = keep;
      }
    } else if (k == "minLength") {
      m->min_len = std::max(m->min_len, NonNegInt(v, P, k));
    } else if (k == "maxLength") {
      int64_t x = NonNegInt(v, P, k);
      m->max_len = m->max_len < 0 ? x : std::min(m->max_len, x);
    } else if (k == "pattern") {
      if (!v.is_string()) Invalid(kp, "pattern must be a string");
      LookaheadSplit split;
      if (SplitLeadingLookaheads(v.as_string(), &split)) {  // `^(?!B)R`: R without B
        for (const std::string& p : split.must) m->patterns.push_back(Ref{&WrittenPattern(p), P});
        for (const std::string& p : split.must_not) m->not_patterns.push_back(Ref{&WrittenPattern(p), P});
      } else {
        m->patterns.push_back(Ref{&v, P});
      }
    } else if (k == "format") {
      // Unknown formats are annotations (2020-12 format-annotation): they assert nothing.
      if (v.is_string() && IsAssertedFormat(v.as_string())) m->formats.push_back(Ref{&v, P});
    } else if (k == "minimum") {
      if (!v.is_number()) Invalid(kp, "minimum must be a number");
      Tighten(&m->lo, Bound(v, draft4_excl_min), true);
    } else if (k == "maximum") {
      if (!v.is_number()) Invalid(kp, "maximum must be a number");
      Tighten(&m->hi, Bound(v, draft4_excl_max), false);
    } else if (k == "exclusiveMinimum") {
      if (v.is_number()) Tighten(&m->lo, Bound(v, true), true);
    } else if (k == "exclusiveMaximum") {
      if (v.is_number()) Tighten(&m->hi, Bound(v, true), false);
    } else if (k == "multipleOf") {
      if (!v.is_number() || v.as_number() <= 0) Invalid(kp, BadMultipleOfMessage(v));
      m->multiple_of.push_back(Ref{&v, P});
    } else if (k == "prefixItems" || (k == "items" && items_is_array)) {
      if (!v.is_array()) Invalid(kp, k + " must be an array");
      std::vector<std::vector<Ref>> pre;
      for (size_t i = 0; i < v.items().size(); ++i) {
        std::vector<Ref> c = One(&v.items()[i], kp + "/" + std::to_string(i));
        if (i < m->prefix.size()) c.insert(c.begin(), m->prefix[i].begin(), m->prefix[i].end());
        pre.push_back(c);
      }
      for (size_t i = v.items().size(); i < m->prefix.size(); ++i) pre.push_back(m->prefix[i]);
      if (m->has_prefix && m->prefix.size() != v.items().size())
        Unsupported(k, P, "prefix lists of different lengths in allOf");
      m->prefix = pre;
      m->has_prefix = true;
    } else if (k == "items" || (k == "additionalItems" && items_is_array)) {
      m->items_set = true;
      m->items.push_back(Ref{&v, kp});
      if (k == "items" && s.Find("prefixItems") == nullptr) m->items_all.push_back(Ref{&v, kp});
    } else if (k == "additionalItems") {
      continue;  // ignored without an array-form "items"
    } else if (k == "minItems") {
      m->min_items = std::max(m->min_items, NonNegInt(v, P, k));
    } else if (k == "maxItems") {
      int64_t x = NonNegInt(v, P, k);
      m->max_items = m->max_items < 0 ? x : std::min(m->max_items, x);
    } else if (k == "contains") {
      m->contains.push_back(Ref{&v, kp});
      const JsonValue* lo = s.Find("minContains");
      const JsonValue* hi = s.Find("maxContains");
      m->contains_counts.emplace_back(lo ? NonNegInt(*lo, JsonPointerChild(P, "minContains"), "minContains") : 1,
                                      hi ? NonNegInt(*hi, JsonPointerChild(P, "maxContains"), "maxContains") : -1);
    } else if (k == "uniqueItems") {
      if (v.is_bool() && v.as_bool() && !m->unique_items) {
        m->unique_items = true;
        m->unique_items_ptr = P;
      }
    } else if (k == "properties") {
      if (!v.is_object()) Invalid(kp, "properties must be an object");
      for (const auto& pm : v.members()) {
        Ref pr{&pm.second, JsonPointerChild(kp, pm.first)};
        auto it = std::find_if(m->props.begin(), m->props.end(), [&](const auto& x) { return x.first == pm.first; });
        if (it == m->props.end()) {
          m->props.push_back({pm.first, {pr}});
        } else {
          it->second.push_back(pr);
        }
      }
    } else if (k == "required") {
      if (!v.is_array()) Invalid(kp, "required must be an array");
      for (const auto& it : v.items()) {
        if (!it.is_string()) Invalid(kp, "required must list strings");
        if (!m->Requires(it.as_string())) m->required.push_back(it.as_string());
      }
    } else if (k == "additionalProperties") {
      m->additional_set = true;
      m->additional.push_back(Ref{&v, kp});
      m->additional_parent.push_back(&s);
    } else if (k == "patternProperties") {
      if (!v.is_object()) Invalid(kp, "patternProperties must be an object");
      for (const auto& pm : v.members()) {
        // The pattern text lives in the member's key; keep a pointer to a string we own.
        pattern_keys_.push_back(std::make_unique<JsonValue>(JsonValue::String(pm.first)));
        m->pattern_props.push_back(
            {Ref{pattern_keys_.back().get(), kp}, One(&pm.second, JsonPointerChild(kp, pm.first))});
      }
    } else if (k == "propertyNames") {
      m->property_names.push_back(Ref{&v, kp});
    } else if (k == "minProperties") {
      m->min_props = std::max(m->min_props, NonNegInt(v, P, k));
      m->min_props_ptr = P;
    } else if (k == "maxProperties") {
      int64_t x = NonNegInt(v, P, k);
      m->max_props = m->max_props < 0 ? x : std::min(m->max_props, x);
      m->max_props_ptr = P;
    } else if (k == "not") {
      MergeNot(m, Ref{&v, kp}, P);
    } else {
      m->constrained = m->constrained;  // unknown keywords are ignored (JSON Schema semantics)
    }
  }
}

void Converter::MergeRef(Merged* m, const Ref& t, int guard) {
  // A target already being merged on this path is a cycle: A and A is A.
  if (std::find(merging_.begin(), merging_.end(), t.v) != merging_.end()) {
    ++cycle_hits_;
    return;
  }
  merging_.push_back(t.v);
  MergeInto(m, t, guard);
  merging_.pop_back();
}

// A schema made here (kept for the converter's lifetime, once per source node so that
// recursion through it meets the same pointers and the rule cache).
const JsonValue* Converter::Synthesized(const void* source, int which, const std::function<JsonValue()>& make) {
  auto key = std::make_pair(source, which);
  auto it = synth_cache_.find(key);
  if (it != synth_cache_.end()) return it->second;
  synth_.push_back(std::make_unique<JsonValue>(make()));
  synth_cache_[key] = synth_.back().get();
  return synth_.back().get();
}

// dependentRequired / dependentSchemas / draft-7 dependencies, one anyOf per property (see
// DependencyAlternatives).
void Converter::MergeDependencies(Merged* m, const JsonValue& v, const std::string& kp, const std::string& k) {
  if (!v.is_object()) Invalid(kp, k + " must be an object");
  m->constrained = true;
  for (const auto& dm : v.members()) {
    const std::string dp = JsonPointerChild(kp, dm.first);
    const JsonValue& dep = dm.second;
    const bool names = dep.is_array();
    if (k == "dependentRequired" && !names) Invalid(dp, "'dependentRequired' values must be arrays of names");
    if (k == "dependentSchemas" && names) Invalid(dp, "'dependentSchemas' values must be schemas");
    if (!names && !dep.is_object() && !dep.is_bool()) Invalid(dp, "a dependency must be an array of names or a schema");
    if (names) {
      for (const auto& n : dep.items()) {
        if (!n.is_string()) Invalid(dp, "a dependency must list property names");
      }
    }
    if (auto presence = PresenceAlternatives(dep)) {
      m->presence_deps.push_back({dm.first, std::move(*presence), &dep, dp});
      continue;
    }
    const JsonValue* alts = Synthesized(&dep, 0, [&]() { return DependencyAlternatives(dm.first, dep); });
    m->any_of.push_back({Ref{&alts->items()[0], dp}, Ref{&alts->items()[1], dp}});
    m->any_of_at.push_back(kp);
    m->any_of_exclusive.push_back(false);
  }
}

// if/then/else as an anyOf (see ConditionAlternatives) when the condition has an exact
// negation.
void Converter::MergeCondition(Merged* m, const JsonValue& s, const std::string& P) {
  const JsonValue* cond = s.Find("if");
  const JsonValue* then_v = s.Find("then");
  const JsonValue* else_v = s.Find("else");
  if (!then_v && !else_v) return;  // a condition alone asserts nothing
  std::optional<JsonValue> negated = Negate(*cond, P + "/if", 0);
  if (!negated) {
    Unsupported("if", P, "a condition whose negation has no exact form");
    return;
  }
  m->constrained = true;
  const JsonValue* alts =
      Synthesized(&s, 1, [&]() { return ConditionAlternatives(*cond, then_v, else_v, std::move(*negated)); });
  m->any_of.push_back({Ref{&alts->items()[0], P + "/then"}, Ref{&alts->items()[1], P + "/else"}});
  m->any_of_at.push_back(P);
  m->any_of_exclusive.push_back(false);
}

void Converter::ResolveUnevaluated(Merged* m) {
  auto exact = [&](const std::vector<Ref>& u, const char* keyword) {
    if (u.size() == 1 && !m->unevaluated_off_root && m->merge_roots == 1 && !m->evaluation_unknown) return true;
    Unsupported(keyword, m->unevaluated_at,
                "beside anyOf, oneOf, if, schema dependencies or a negated member list, or in a merged "
                "subschema (their annotations decide what is evaluated)");
    return false;
  };
  if (!m->unevaluated_props.empty()) {
    std::vector<Ref> u = std::move(m->unevaluated_props);
    m->unevaluated_props.clear();
    // additionalProperties anywhere in the merge evaluates every remaining name.
    if ((m->types & kObj) && exact(u, "unevaluatedProperties") && m->additional.empty() && !m->all_props_evaluated) {
      std::vector<std::pair<std::string, JsonValue>> declared, patterns;
      for (const auto& pr : m->props) declared.emplace_back(pr.first, JsonValue::Bool(true));
      for (const auto& pp : m->pattern_props) patterns.emplace_back(pp.first.v->as_string(), JsonValue::Bool(true));
      synth_.push_back(std::make_unique<JsonValue>(
          JsonValue::Object({{"properties", JsonValue::Object(std::move(declared))},
                             {"patternProperties", JsonValue::Object(std::move(patterns))}})));
      m->additional_set = true;
      m->additional.push_back(u[0]);
      m->additional_parent.push_back(synth_.back().get());
    }
  }
  if (!m->unevaluated_items.empty()) {
    std::vector<Ref> u = std::move(m->unevaluated_items);
    m->unevaluated_items.clear();
    // items (or additionalItems after an items list) anywhere evaluates every position.
    if ((m->types & kArr) && exact(u, "unevaluatedItems") && !m->items_set && !m->all_items_evaluated) {
      if (!m->contains.empty()) {
        Unsupported("unevaluatedItems", m->unevaluated_at, "beside contains (the items it matches are evaluated)");
      } else {
        m->items_set = true;
        m->items.push_back(u[0]);
      }
    }
  }
}

}  // namespace xg2::jsonschema
