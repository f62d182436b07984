// Keyword-level pieces of the JSON Schema front end: keyword classes, bounds and types, and
// schemas rewritten into equivalent ones (`not`, dependencies, if/then/else).

#include <algorithm>
#include <cmath>
#include <set>

#include "frontends/json_schema_internal.h"

namespace xg2::jsonschema {
namespace {

JsonValue IntValue(int64_t x) { return JsonValue::Number(static_cast<double>(x), std::to_string(x)); }

JsonValue TypeIs(const char* t, std::vector<std::pair<std::string, JsonValue>> rest) {
  rest.insert(rest.begin(), std::make_pair(std::string("type"), JsonValue::String(t)));
  return JsonValue::Object(std::move(rest));
}

// not (properties P, patternProperties Q, additionalProperties A): some member breaks its
// schema. A declared name present with a value outside its P schema; a key matching a pattern
// of Q with a value outside that pattern's schema (declared names match patterns too); a key
// neither declared nor matching Q with a value outside A. The last two are leaves MergeNot
// handles as "some property" (Merged::some_props).
std::optional<JsonValue> NegateMembers(const JsonValue* props, const JsonValue* patterns, const JsonValue* add) {
  if ((props && !props->is_object()) || (patterns && !patterns->is_object())) return std::nullopt;
  std::vector<JsonValue> alts;
  if (props) {
    for (const auto& pm : props->members()) {
      if (IsTrueSchema(pm.second)) continue;
      alts.push_back(TypeIs("object", {{"required", JsonValue::Array({JsonValue::String(pm.first)})},
                                       {"properties", JsonValue::Object({{pm.first, NotOf(pm.second)}})}}));
    }
  }
  if (patterns) {
    for (const auto& pm : patterns->members()) {
      if (!IsTrueSchema(pm.second))
        alts.push_back(NotOf(JsonValue::Object({{"patternProperties", JsonValue::Object({pm})}})));
    }
  }
  if (add && !IsTrueSchema(*add)) {
    // The leaf keeps the names and patterns, with true schemas: they only say which keys A governs.
    std::vector<std::pair<std::string, JsonValue>> leaf;
    auto names_of = [](const JsonValue* v) {
      std::vector<std::pair<std::string, JsonValue>> out;
      for (const auto& pm : v->members()) out.push_back({pm.first, JsonValue::Bool(true)});
      return JsonValue::Object(std::move(out));
    };
    if (props && !props->members().empty()) leaf.push_back({"properties", names_of(props)});
    if (patterns && !patterns->members().empty()) leaf.push_back({"patternProperties", names_of(patterns)});
    leaf.push_back({"additionalProperties", *add});
    alts.push_back(NotOf(JsonValue::Object(std::move(leaf))));
  }
  if (alts.empty()) return JsonValue::Bool(false);
  if (alts.size() == 1) return alts[0];
  return JsonValue::Object({{"anyOf", JsonValue::Array(std::move(alts))}});
}

}  // namespace

JsonValue NotOf(JsonValue v) { return JsonValue::Object({{"not", std::move(v)}}); }

bool IsTrueSchema(const JsonValue& v) { return v.is_bool() ? v.as_bool() : v.is_object() && v.members().empty(); }

bool RefStandsAlone(const JsonValue& s) {
  return s.is_object() && s.Find("$ref") != nullptr &&
         std::all_of(s.members().begin(), s.members().end(),
                     [](const auto& kv) { return kv.first == "$ref" || IsAnnotation(kv.first); });
}

bool IsAnnotation(const std::string& k) {
  static const std::set<std::string> kAnn = {"title",
                                             "description",
                                             "examples",
                                             "example",
                                             "default",
                                             "$comment",
                                             "$schema",
                                             "$id",
                                             "id",
                                             "deprecated",
                                             "readOnly",
                                             "writeOnly",
                                             "$defs",
                                             "definitions",
                                             "$anchor",
                                             "$dynamicAnchor",
                                             "$vocabulary",
                                             "contentEncoding",
                                             "contentMediaType",
                                             "discriminator",
                                             "nullable_annotation",
                                             "markdownDescription",
                                             "errorMessage"};
  return kAnn.count(k) > 0;
}

bool IsKnownUnsupported(const std::string& k) {
  static const std::set<std::string> kUn = {"if",
                                            "then",
                                            "else",
                                            "dependentRequired",
                                            "dependentSchemas",
                                            "dependencies",
                                            "unevaluatedProperties",
                                            "unevaluatedItems",
                                            "$dynamicRef",
                                            "$recursiveRef",
                                            "contentSchema",
                                            "minContains",
                                            "maxContains"};
  return kUn.count(k) > 0;
}

NumBound Bound(const JsonValue& v, bool exclusive) {
  NumBound b;
  b.present = true;
  b.exclusive = exclusive;
  b.literal = v.number_literal();
  b.value = v.as_number();
  return b;
}
void Tighten(NumBound* cur, const NumBound& nb, bool lower) {
  if (!cur->present) {
    *cur = nb;
    return;
  }
  bool better = lower ? nb.value > cur->value : nb.value < cur->value;
  if (better || (nb.value == cur->value && nb.exclusive)) *cur = nb;
}
uint8_t TypeFromName(const std::string& t) {
  if (t == "null") return kNull;
  if (t == "boolean") return kBool;
  if (t == "integer") return kInt;
  if (t == "number") return kNum | kInt;
  if (t == "string") return kStr;
  if (t == "array") return kArr;
  if (t == "object") return kObj;
  return 0;
}
// The enum values the merged types allow.
std::vector<const JsonValue*> EnumValues(const Merged& m) {
  std::vector<const JsonValue*> out;
  for (const auto& v : m.enum_values) {
    uint8_t t = v.is_null()     ? kNull
                : v.is_bool()   ? kBool
                : v.is_number() ? (v.is_integer() ? kInt : kNum)
                : v.is_string() ? kStr
                : v.is_array()  ? kArr
                                : kObj;
    if (t == kInt ? !(m.types & (kInt | kNum)) || m.not_integer : !(m.types & t)) continue;
    out.push_back(&v);
  }
  return out;
}

JsonValue DependencyAlternatives(const std::string& name, const JsonValue& dep) {
  std::vector<JsonValue> required{JsonValue::String(name)};
  if (dep.is_array()) required.insert(required.end(), dep.items().begin(), dep.items().end());
  std::vector<std::pair<std::string, JsonValue>> present{{"required", JsonValue::Array(std::move(required))}};
  if (!dep.is_array()) present.push_back({"allOf", JsonValue::Array({dep})});
  return JsonValue::Array({JsonValue::Object({{"properties", JsonValue::Object({{name, JsonValue::Bool(false)}})}}),
                           JsonValue::Object(std::move(present))});
}

namespace {

// The value of `key` when s is an object with that keyword and annotations only; else nullptr.
const JsonValue* SoleKeyword(const JsonValue& s, const std::string& key) {
  if (!s.is_object()) return nullptr;
  const JsonValue* found = nullptr;
  for (const auto& kv : s.members()) {
    if (kv.first == key)
      found = &kv.second;
    else if (!IsAnnotation(kv.first))
      return nullptr;
  }
  return found;
}

std::optional<std::vector<std::string>> NameList(const JsonValue* list) {
  if (list == nullptr || !list->is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& n : list->items()) {
    if (!n.is_string()) return std::nullopt;
    out.push_back(n.as_string());
  }
  return out;
}

}  // namespace

std::optional<std::vector<std::vector<std::string>>> PresenceAlternatives(const JsonValue& dep) {
  auto names = NameList(dep.is_array() ? &dep : SoleKeyword(dep, "required"));
  if (names) return std::vector<std::vector<std::string>>{std::move(*names)};
  const JsonValue* any_of = SoleKeyword(dep, "anyOf");
  if (any_of == nullptr || !any_of->is_array() || any_of->items().empty()) return std::nullopt;
  std::vector<std::vector<std::string>> alts;
  for (const auto& a : any_of->items()) {
    auto n = NameList(SoleKeyword(a, "required"));
    if (!n) return std::nullopt;
    alts.push_back(std::move(*n));
  }
  return alts;
}

JsonValue ConditionAlternatives(const JsonValue& cond, const JsonValue* then_v, const JsonValue* else_v,
                                JsonValue negated) {
  JsonValue yes = then_v ? *then_v : JsonValue::Bool(true);
  JsonValue no = else_v ? *else_v : JsonValue::Bool(true);
  return JsonValue::Array({JsonValue::Object({{"allOf", JsonValue::Array({cond, std::move(yes)})}}),
                           JsonValue::Object({{"allOf", JsonValue::Array({std::move(negated), std::move(no)})}})});
}

std::optional<JsonValue> NegateSchema(const JsonValue& s, const std::string& ptr, bool ref_overrides_siblings,
                                      const RefResolver& resolve, int guard) {
  if (guard > 16) return std::nullopt;
  if (s.is_bool()) return JsonValue::Bool(!s.as_bool());
  if (!s.is_object()) return std::nullopt;
  bool ref_only = ref_overrides_siblings && s.Find("$ref") != nullptr;
  // Keywords that only mean something together form one group; groups are independent.
  auto group_of = [&](const std::string& k) -> std::string {
    if (k == "properties" || k == "patternProperties" || k == "additionalProperties") return "properties";
    if (k == "items" || k == "additionalItems" || k == "prefixItems") return "items";
    if (k == "contains" || k == "minContains" || k == "maxContains") return "contains";
    if (k == "if" || k == "then" || k == "else") return "if";
    const JsonValue* em = s.Find("exclusiveMinimum");
    if ((k == "minimum" || k == "exclusiveMinimum") && em && em->is_bool()) return "minimum";
    const JsonValue* eM = s.Find("exclusiveMaximum");
    if ((k == "maximum" || k == "exclusiveMaximum") && eM && eM->is_bool()) return "maximum";
    return k;
  };
  static const std::set<std::string> kKnown = {"$ref",
                                               "not",
                                               "allOf",
                                               "anyOf",
                                               "oneOf",
                                               "type",
                                               "enum",
                                               "const",
                                               "minLength",
                                               "maxLength",
                                               "pattern",
                                               "format",
                                               "minimum",
                                               "maximum",
                                               "exclusiveMinimum",
                                               "exclusiveMaximum",
                                               "multipleOf",
                                               "prefixItems",
                                               "items",
                                               "additionalItems",
                                               "minItems",
                                               "maxItems",
                                               "contains",
                                               "uniqueItems",
                                               "properties",
                                               "required",
                                               "additionalProperties",
                                               "patternProperties",
                                               "propertyNames",
                                               "minProperties",
                                               "maxProperties"};
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, JsonValue>>>> groups;
  for (const auto& kv : s.members()) {
    const std::string& k = kv.first;
    if (IsAnnotation(k)) continue;
    if (ref_only && k != "$ref") continue;
    if ((k == "unevaluatedProperties" || k == "unevaluatedItems") && kv.second.is_bool() && kv.second.as_bool())
      continue;
    if (IsKnownUnsupported(k)) return std::nullopt;
    if (!kKnown.count(k)) continue;  // ignored keywords: always satisfied
    if (k == "uniqueItems" && kv.second.is_bool() && !kv.second.as_bool()) continue;
    std::string g = group_of(k);
    auto gi = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == g; });
    if (gi == groups.end()) {
      groups.push_back({g, {}});
      gi = groups.end() - 1;
    }
    gi->second.push_back({k, kv.second});
  }
  if (groups.empty()) return JsonValue::Bool(false);
  if (groups.size() > 1) {
    // not (A and B) = (not A) or (not B); each part is checked when it is merged.
    std::vector<JsonValue> alts;
    for (auto& g : groups) {
      if (!NegateSchema(JsonValue::Object(g.second), ptr, ref_overrides_siblings, resolve, guard + 1))
        return std::nullopt;
      alts.push_back(NotOf(JsonValue::Object(std::move(g.second))));
    }
    return JsonValue::Object({{"anyOf", JsonValue::Array(std::move(alts))}});
  }
  auto& members = groups[0].second;
  const std::string& k = members[0].first;
  const JsonValue& v = members[0].second;
  auto find = [&](const char* name) -> const JsonValue* {
    for (const auto& x : members) {
      if (x.first == name) return &x.second;
    }
    return nullptr;
  };
  auto count_bound = [&](const char* type, const char* other, bool is_min) -> std::optional<JsonValue> {
    if (!v.is_number() || v.as_number() < 0 || v.as_number() != std::floor(v.as_number())) return std::nullopt;
    auto n = static_cast<int64_t>(v.as_number());
    if (is_min && n == 0) return JsonValue::Bool(false);
    return TypeIs(type, {{other, IntValue(is_min ? n - 1 : n + 1)}});
  };
  if (groups[0].first == "minimum" || groups[0].first == "maximum") {
    bool is_min = groups[0].first == "minimum";
    const JsonValue* b = find(is_min ? "minimum" : "maximum");
    const JsonValue* ex = find(is_min ? "exclusiveMinimum" : "exclusiveMaximum");
    if (b == nullptr) return JsonValue::Bool(false);  // a boolean exclusive bound alone asserts nothing
    if (!b->is_number()) return std::nullopt;
    bool exclusive = ex && ex->as_bool();
    const char* kw =
        is_min ? (exclusive ? "maximum" : "exclusiveMaximum") : (exclusive ? "minimum" : "exclusiveMinimum");
    return TypeIs("number", {{kw, *b}});
  }
  if (k == "$ref") {
    if (!v.is_string()) return std::nullopt;
    auto [target, target_ptr] = resolve(v.as_string(), ptr);
    if (target == nullptr) return std::nullopt;
    return NegateSchema(*target, target_ptr, ref_overrides_siblings, resolve, guard + 1);
  }
  if (k == "not") return v;
  if (k == "allOf" || k == "anyOf" || k == "oneOf") {
    if (!v.is_array() || v.items().empty()) return std::nullopt;
    const auto& xs = v.items();
    std::vector<JsonValue> negs;
    for (const auto& x : xs) negs.push_back(NotOf(x));
    if (k == "allOf") return JsonValue::Object({{"anyOf", JsonValue::Array(std::move(negs))}});
    if (k == "anyOf") return JsonValue::Object({{"allOf", JsonValue::Array(std::move(negs))}});
    if (xs.size() == 1) return negs[0];
    if (xs.size() > 6) return std::nullopt;
    // Not exactly one: none, or some two at once.
    std::vector<JsonValue> alts{JsonValue::Object({{"allOf", JsonValue::Array(std::move(negs))}})};
    for (size_t i = 0; i < xs.size(); ++i) {
      for (size_t j = i + 1; j < xs.size(); ++j)
        alts.push_back(JsonValue::Object({{"allOf", JsonValue::Array({xs[i], xs[j]})}}));
    }
    return JsonValue::Object({{"anyOf", JsonValue::Array(std::move(alts))}});
  }
  if (k == "type" || k == "enum" || k == "const" || k == "pattern" || k == "multipleOf")
    return NotOf(JsonValue::Object({{k, v}}));
  if (k == "format") {
    if (members.size() != 1) return std::nullopt;
    // An unknown format asserts nothing: its negation is false.
    if (!v.is_string() || !IsAssertedFormat(v.as_string())) return JsonValue::Bool(false);
    return NotOf(JsonValue::Object({{k, v}}));
  }
  if (k == "required") {
    if (!v.is_array()) return std::nullopt;
    if (v.items().empty()) return JsonValue::Bool(false);
    std::vector<JsonValue> alts;
    for (const auto& x : v.items()) {
      if (!x.is_string()) return std::nullopt;
      alts.push_back(NotOf(JsonValue::Object({{"required", JsonValue::Array({x})}})));
    }
    if (alts.size() == 1) return alts[0];
    return JsonValue::Object({{"anyOf", JsonValue::Array(std::move(alts))}});
  }
  if (k == "minLength") return count_bound("string", "maxLength", true);
  if (k == "maxLength") return count_bound("string", "minLength", false);
  if (k == "minItems") return count_bound("array", "maxItems", true);
  if (k == "maxItems") return count_bound("array", "minItems", false);
  if (k == "minProperties") return count_bound("object", "maxProperties", true);
  if (k == "maxProperties") return count_bound("object", "minProperties", false);
  if (k == "minimum" || k == "exclusiveMinimum" || k == "maximum" || k == "exclusiveMaximum") {
    if (!v.is_number()) return std::nullopt;
    const char* kw = k == "minimum"            ? "exclusiveMaximum"
                     : k == "exclusiveMinimum" ? "maximum"
                     : k == "maximum"          ? "exclusiveMinimum"
                                               : "minimum";
    return TypeIs("number", {{kw, v}});
  }
  if (groups[0].first == "items") {
    if (members.size() != 1 || k != "items" || v.is_array()) return std::nullopt;
    if (v.is_bool() && v.as_bool()) return JsonValue::Bool(false);
    return TypeIs("array", {{"contains", NotOf(v)}});
  }
  if (groups[0].first == "contains") {
    if (members.size() != 1) return std::nullopt;
    return TypeIs("array", {{"items", NotOf(v)}});
  }
  if (groups[0].first == "properties")
    return NegateMembers(find("properties"), find("patternProperties"), find("additionalProperties"));
  if (k == "propertyNames") {
    // Some key outside the names' schema (MergeNot handles the leaf); true admits every key.
    if (IsTrueSchema(v)) return JsonValue::Bool(false);
    return NotOf(JsonValue::Object({{k, v}}));
  }
  return std::nullopt;
}

}  // namespace xg2::jsonschema
