// Parameter values that may be strings or other JSON values, as the XML styles' templates
// write them: a str raw, anything else as JSON (Qwen3-Coder's, MiniMax-M2's and GLM's
// templates test `is string`; DeepSeek's encoders below). RawOrJsonValue writes them for the
// styles without a type attribute.
//
// DeepSeek DSML parameter values (deepseek_xml, deepseek_v4_1_xml). DeepSeek's reference
// encoders (encoding_dsv32.py / encoding_dsv4.py, encode_arguments_to_dsml) decide the string
// attribute per value, not per schema: a str is written raw with string="true", anything else
// as JSON with string="false". So a property whose schema allows strings and other values
// (anyOf, a type list, a mixed enum, no type at all) takes both forms, each holding only its
// own kind of value: a quoted JSON string under string="false" is never written by the encoder
// and is rejected, as is a number under string="true" unless the schema allows that text as a
// string.
//
// The schema is split into the alternatives of its union (anyOf, oneOf, $ref, single-branch
// allOf, type lists, enum values) until each leaf is of one kind; the string leaves become raw
// text, the others one JSON value. A union through a $ref cycle (V = anyOf[string, V]) is its
// least fixed point: each definition is visited once, which also keeps shared definitions
// linear. oneOf keeps exclusive what it needs to (see CollectValueKinds).
#include <set>

#include "frontends/json_schema_converter.h"
#include "frontends/json_schema_internal.h"
#include "frontends/structural_tag_args.h"
#include "frontends/structural_tag_xml.h"
#include "xg2/errors.h"

namespace xg2 {
namespace {

[[noreturn]] void Fail(const std::string& path, const std::string& reason) {
  throw Error(ErrorKind::kStructuralTag, path + ": " + reason);
}

using jsonschema::IsAnnotation;

// Keywords that only constrain strings, and those that never constrain strings.
const std::set<std::string>& StringKeywords() {
  static const std::set<std::string> k = {"pattern", "format", "minLength", "maxLength"};
  return k;
}
const std::set<std::string>& NonStringKeywords() {
  static const std::set<std::string> k = {
      "minimum",       "maximum",       "exclusiveMinimum",      "exclusiveMaximum",  "multipleOf",
      "items",         "prefixItems",   "additionalItems",       "minItems",          "maxItems",
      "uniqueItems",   "contains",      "minContains",           "maxContains",       "unevaluatedItems",
      "properties",    "required",      "additionalProperties",  "patternProperties", "propertyNames",
      "minProperties", "maxProperties", "unevaluatedProperties", "dependentRequired", "dependentSchemas"};
  return k;
}

const char* const kNonStringTypes[] = {"number", "integer", "boolean", "null", "array", "object"};

// The JSON types a "type" keyword names (all seven when absent); false when malformed.
bool TypesOf(const JsonValue& s, std::set<std::string>* out) {
  const JsonValue* type = s.Find("type");
  if (!type) {
    out->insert("string");
    for (const char* t : kNonStringTypes) out->insert(t);
    return true;
  }
  if (type->is_string()) {
    out->insert(type->as_string());
    return true;
  }
  if (!type->is_array()) return false;
  for (const JsonValue& t : type->items()) {
    if (!t.is_string()) return false;
    out->insert(t.as_string());
  }
  return true;
}

JsonValue TypeList(const std::set<std::string>& types) {
  std::vector<JsonValue> items;
  for (const std::string& t : types) items.push_back(JsonValue::String(t));
  return items.size() == 1 ? items[0] : JsonValue::Array(std::move(items));
}

// `s` with its "type" replaced (and, for a string leaf, only the string keywords kept).
JsonValue WithTypes(const JsonValue& s, const std::set<std::string>& types, bool string_leaf) {
  std::vector<std::pair<std::string, JsonValue>> members;
  for (const auto& [k, v] : s.members()) {
    if (k == "type" || k == "$defs" || k == "definitions") continue;
    if (string_leaf && !StringKeywords().count(k) && !IsAnnotation(k)) continue;
    members.emplace_back(k, v);
  }
  members.emplace_back("type", TypeList(types));
  return JsonValue::Object(std::move(members));
}

}  // namespace

void XmlParameterLowering::CollectValueKinds(const JsonValue& s, const JsonValue& root, const std::string& path,
                                             ValueKinds* out) {
  if (s.is_bool()) {
    if (s.as_bool()) CollectValueKinds(JsonValue::Object({}), root, path, out);
    return;
  }
  if (!s.is_object()) Fail(path, "a schema must be an object or a boolean");
  std::set<std::string> types;
  if (!TypesOf(s, &types)) Fail(path + "/type", "must be a type name or a list of them");
  // The keywords besides annotations and "type".
  std::vector<std::string> keys;
  for (const auto& [k, v] : s.members()) {
    if (k != "type" && !IsAnnotation(k)) keys.push_back(k);
  }
  auto only = [&](const std::set<std::string>& allowed) {
    for (const std::string& k : keys) {
      if (!allowed.count(k)) return false;
    }
    return true;
  };
  // A schema that cannot hold a string is one JSON leaf whatever its keywords (the JSON front
  // end lowers them).
  if (!types.count("string")) {
    out->json.push_back(s);
    return;
  }
  if (const JsonValue* ref = s.Find("$ref")) {
    if (!only({"$ref"}) || s.Find("type"))
      Fail(path, "values written raw or as JSON: '$ref' beside other keywords is not supported");
    if (!ref->is_string()) Fail(path + "/$ref", "must be a string");
    const std::string& uri = ref->as_string();
    if (!out->refs.insert(uri).second) {  // already part of the union (or a cycle back to it)
      out->revisited = true;
      return;
    }
    const JsonValue* target = uri == "#" ? &root : DefinitionTarget(root, uri);
    if (!target)
      Fail(path + "/$ref", "'" + uri + "' does not name the root or a schema under #/$defs or #/definitions");
    // The root is an object schema: a JSON leaf, which must keep referring to the root.
    if (target == &root) {
      out->json.push_back(JsonValue::Object({{"$ref", JsonValue::String("#")}}));
      return;
    }
    CollectValueKinds(*target, root, path + "/$ref", out);
    return;
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    const JsonValue* options = s.Find(key);
    if (!options) continue;
    if (!only({key}) || s.Find("type"))
      Fail(path, std::string("values written raw or as JSON: '") + key + "' beside other keywords is not supported");
    if (!options->is_array() || options->items().empty()) Fail(path + "/" + key, "must be a non-empty list");
    if (key[0] == 'a') {
      for (size_t i = 0; i < options->items().size(); ++i)
        CollectValueKinds(options->items()[i], root, path + "/anyOf/" + std::to_string(i), out);
      return;
    }
    // oneOf: a value must match exactly one option. A string and a non-string never match the
    // same leaf, so the kinds are apart: the strings must come from one option (their union
    // could not exclude the others), and the non-string parts stay a oneOf for the JSON front
    // end, which keeps (or refuses) its exclusivity. Each option is collected on its own: a
    // definition shared with another option, or a cycle, would hide a match and is refused.
    std::vector<JsonValue> json_parts;
    bool strings_seen = false;
    for (size_t i = 0; i < options->items().size(); ++i) {
      const std::string at = path + "/oneOf/" + std::to_string(i);
      ValueKinds option;
      option.refs = out->refs;
      CollectValueKinds(options->items()[i], root, at, &option);
      if (option.revisited)
        Fail(at,
             "values written raw or as JSON: a oneOf option that refers back to a schema already in use is not "
             "supported");
      if (!option.strings.empty()) {
        if (strings_seen)
          Fail(at, "values written raw or as JSON: oneOf with more than one option holding strings is not supported");
        strings_seen = true;
        for (auto& leaf : option.strings) out->strings.push_back(std::move(leaf));
      }
      if (!option.json.empty())
        json_parts.push_back(option.json.size() == 1 ? option.json[0]
                                                     : JsonValue::Object({{"anyOf", JsonValue::Array(option.json)}}));
    }
    if (json_parts.size() == 1) out->json.push_back(json_parts[0]);
    if (json_parts.size() > 1) out->json.push_back(JsonValue::Object({{"oneOf", JsonValue::Array(json_parts)}}));
    return;
  }
  if (const JsonValue* all = s.Find("allOf")) {
    if (!all->is_array() || all->items().empty()) Fail(path + "/allOf", "must be a non-empty list");
    if (all->items().size() == 1 && only({"allOf"}) && !s.Find("type")) {
      CollectValueKinds(all->items()[0], root, path + "/allOf/0", out);
      return;
    }
    // A branch that excludes strings makes the whole a JSON value.
    for (const JsonValue& branch : all->items()) {
      std::set<std::string> t;
      if (branch.is_object() && !branch.Find("$ref") && TypesOf(branch, &t) && !t.count("string")) {
        out->json.push_back(s);
        return;
      }
    }
    // Branches of plain keywords (no references or unions) that do not overlap are one schema.
    std::vector<std::pair<std::string, JsonValue>> merged;
    for (const auto& [k, v] : s.members()) {
      if (k != "allOf") merged.emplace_back(k, v);
    }
    for (const JsonValue& branch : all->items()) {
      if (branch.is_bool() && branch.as_bool()) continue;
      if (!branch.is_object())
        Fail(path + "/allOf",
             "values written raw or as JSON: allOf of several schemas that may hold strings is not supported");
      for (const auto& [k, v] : branch.members()) {
        if (IsAnnotation(k)) continue;  // annotations (and a branch's $defs) constrain nothing
        static const std::set<std::string> kNested = {"$ref", "anyOf", "oneOf", "allOf", "not", "if", "then", "else"};
        bool clash = kNested.count(k) > 0;
        for (const auto& [mk, mv] : merged) clash = clash || mk == k;
        if (clash)
          Fail(path + "/allOf", "values written raw or as JSON: allOf branches that nest schemas or repeat keyword '" +
                                    k + "' are not supported where strings may occur");
        merged.emplace_back(k, v);
      }
    }
    CollectValueKinds(JsonValue::Object(std::move(merged)), root, path + "/allOf", out);
    return;
  }
  for (const char* key : {"const", "enum"}) {
    const JsonValue* v = s.Find(key);
    if (!v) continue;
    if (!only({key}))
      Fail(path, std::string("values written raw or as JSON: '") + key + "' beside other keywords is not supported");
    if (key[0] == 'e' && (!v->is_array() || v->items().empty())) Fail(path + "/enum", "must be a non-empty list");
    const std::vector<JsonValue> values = key[0] == 'c' ? std::vector<JsonValue>{*v} : v->items();
    std::vector<JsonValue> strings, others;
    for (const JsonValue& value : values) (value.is_string() ? strings : others).push_back(value);
    if (!strings.empty())
      out->strings.push_back({JsonValue::Object({{"enum", JsonValue::Array(std::move(strings))}}), path});
    if (!others.empty()) {
      std::set<std::string> rest = types;
      rest.erase("string");
      out->json.push_back(JsonValue::Object({{"type", TypeList(rest)}, {"enum", JsonValue::Array(std::move(others))}}));
    }
    return;
  }
  std::set<std::string> known = StringKeywords();
  known.insert(NonStringKeywords().begin(), NonStringKeywords().end());
  for (const std::string& k : keys) {
    if (!known.count(k))
      Fail(path + "/" + k,
           "values written raw or as JSON: keyword '" + k + "' is not supported where strings may occur");
  }
  out->strings.push_back({WithTypes(s, {"string"}, true), path});
  std::set<std::string> rest = types;
  rest.erase("string");
  if (!rest.empty()) out->json.push_back(WithTypes(s, rest, false));
}

ExprId XmlParameterLowering::DsmlValue(const JsonValue& prop, const JsonValue& root, const std::string& path,
                                       const std::string& end) {
  ValueKinds leaves;
  CollectValueKinds(prop, root, path, &leaves);
  std::vector<std::function<ExprId()>> alts;
  for (const auto& [leaf, leaf_path] : leaves.strings) {
    // string="true": the text between the tags is the value, whitespace included.
    alts.push_back([&, leaf = leaf, leaf_path = leaf_path] {
      return g_->AddSequence({g_->AddBytes("\" string=\"true\">"), StringValue(leaf, leaf_path, end, false)});
    });
  }
  if (!leaves.json.empty()) {
    JsonValue value =
        leaves.json.size() == 1 ? leaves.json[0] : JsonValue::Object({{"anyOf", JsonValue::Array(leaves.json)}});
    // string="false": a JSON value, which may be padded with whitespace.
    alts.push_back([&, value] {
      return g_->AddSequence({g_->AddBytes("\" string=\"false\">"), Whitespace(), JsonValueOf(value, root, path),
                              Whitespace(), g_->AddBytes(end)});
    });
  }
  if (alts.empty()) Fail(path, "no value satisfies the schema");
  return WritableChoice(alts);
}

ExprId XmlParameterLowering::RawOrJsonValue(const JsonValue& prop, const JsonValue& root, const std::string& path,
                                            const std::string& end) {
  ValueKinds leaves;
  CollectValueKinds(prop, root, path, &leaves);
  std::vector<std::function<ExprId()>> alts;
  for (const auto& [leaf, leaf_path] : leaves.strings) {
    alts.push_back([&, leaf = leaf, leaf_path = leaf_path] { return StringValue(leaf, leaf_path, end, true); });
  }
  if (!leaves.json.empty()) {
    // With no string leaf the schema is lowered whole (no split was needed).
    JsonValue value = leaves.strings.empty()    ? prop
                      : leaves.json.size() == 1 ? leaves.json[0]
                                                : JsonValue::Object({{"anyOf", JsonValue::Array(leaves.json)}});
    alts.push_back([&, value] {
      return g_->AddSequence({Whitespace(), JsonValueOf(value, root, path), Whitespace(), g_->AddBytes(end)});
    });
  }
  if (alts.empty()) Fail(path, "no value satisfies the schema");
  return WritableChoice(alts);
}

}  // namespace xg2
