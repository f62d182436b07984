#include "frontends/structural_tag_keys.h"

#include <algorithm>
#include <set>

#include "automata/byte_dfa_ops.h"
#include "frontends/json_schema_converter.h"
#include "frontends/json_schema_internal.h"
#include "frontends/structural_tag_args.h"
#include "xg2/errors.h"

namespace xg2 {

void ObjectKeys::Fail(const std::string& path, const std::string& reason) const {
  throw Error(ErrorKind::kStructuralTag, path + ": " + reason);
}

ObjectKeys::ObjectKeys(const JsonValue& s, const std::string& path, std::string who)
    : path_(path), who_(std::move(who)) {
  const JsonValue* props = s.Find("properties");
  if (props && !props->is_object()) Fail(path + "/properties", "must be an object");
  if (const JsonValue* pp = s.Find("patternProperties")) {
    if (!pp->is_object()) Fail(path + "/patternProperties", "must be an object");
    for (const auto& [pattern, schema] : pp->members()) {
      patterns_.push_back(pattern);
      pattern_schemas_.push_back(&schema);
    }
  }
  // Beside only object keywords (combinators and $ref are lowered before an object is),
  // unevaluatedProperties applies to exactly the keys additionalProperties would; with
  // additionalProperties present, no key is left unevaluated.
  const JsonValue* extra = s.Find("additionalProperties");
  if (!extra) extra = s.Find("unevaluatedProperties");
  if (extra && !extra->is_bool() && !extra->is_object()) Fail(path + "/additionalProperties", "must be a schema");
  // As in the JSON front end's strict mode: an object that declares properties takes no others
  // unless additionalProperties says so; one that declares none is any object.
  const bool declares = (props && !props->members().empty()) || !patterns_.empty();
  extra_allowed_ = extra ? !(extra->is_bool() && !extra->as_bool()) : !declares;
  extra_ = extra && extra->is_object() && !jsonschema::IsTrueSchema(*extra) ? extra : nullptr;
  if (const JsonValue* names = s.Find("propertyNames")) {
    names_false_ = names->is_bool() && !names->as_bool();
    names_ = NameDfas(*names, path + "/propertyNames");
  }
}

// propertyNames as automata over decoded text: a key is a string, so only the string
// keywords constrain it (enum/const values other than strings name no property).
std::vector<ByteDfaSpec> ObjectKeys::NameDfas(const JsonValue& names, const std::string& path) const {
  if (names.is_bool()) return {};
  if (!names.is_object()) Fail(path, "a schema must be an object or a boolean");
  static const std::set<std::string> kKeys = {"type", "pattern", "format", "minLength", "maxLength", "enum", "const"};
  for (const auto& [k, v] : names.members()) {
    if (!kKeys.count(k) && !jsonschema::IsAnnotation(k))
      Fail(path + "/" + JsonPointerEscape(k), "keyword '" + k + "' in propertyNames is not supported for " + who_);
  }
  if (const JsonValue* t = names.Find("type"); t && !(t->is_string() && t->as_string() == "string"))
    Fail(path + "/type", "propertyNames must describe strings (an object's keys are strings)");
  Grammar scratch;
  std::vector<ByteDfaSpec> out;
  auto add = [&](ExprId e) {
    out.push_back(TrimAndMinimize(ByteDfaOfExpr(scratch, e, jsonschema::kMaxPatternDfaStates)));
  };
  try {
    if (ExprId text = RawStringText(&scratch, names, path, {}, "propertyNames in " + who_); text != kNoExpr) add(text);
    for (const char* key : {"enum", "const"}) {
      const JsonValue* v = names.Find(key);
      if (!v) continue;
      std::vector<ExprId> alts;
      for (const JsonValue& value : std::string(key) == "const" ? std::vector<JsonValue>{*v} : v->items())
        if (value.is_string()) alts.push_back(jsonschema::Lit(&scratch, value.as_string()));
      add(scratch.AddChoice(std::move(alts)));
    }
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kStructuralTag) throw;
    Fail(path, std::string("propertyNames automaton: ") + e.what());
  }
  return out;
}

bool ObjectKeys::Admits(const std::string& name, const JsonValue& prop, const std::string& path) const {
  std::vector<size_t> matched;
  try {
    matched = jsonschema::PatternsMatchingNames(patterns_, {name}, jsonschema::kMaxPatternDfaStates)[0];
  } catch (const Error& e) {
    Fail(path_ + "/patternProperties", e.what());
  }
  for (size_t i : matched) {
    if (!jsonschema::IsTrueSchema(*pattern_schemas_[i]) && !(*pattern_schemas_[i] == prop))
      Fail(path, "the property also matches patternProperties '" + patterns_[i] + "' with another schema (" + who_ +
                     " does not combine the two)");
  }
  return !names_false_ &&
         std::all_of(names_.begin(), names_.end(), [&](const ByteDfaSpec& d) { return ByteDfaAccepts(d, name); });
}

// The keys are partitioned by the patterns they match: each region takes its pattern's
// schema, the unmatched keys additionalProperties'.
std::vector<ObjectKeys::Region> ObjectKeys::FreeRegions(const std::vector<std::string>& declared,
                                                        const ByteDfaSpec* alphabet) const {
  if (names_false_ || (patterns_.empty() && !extra_allowed_)) return {};
  std::vector<ByteDfaSpec> must = names_;
  if (alphabet) must.push_back(*alphabet);
  std::vector<jsonschema::KeyRegion> regions;
  try {
    regions =
        jsonschema::DecodedKeyRegions(patterns_, declared, extra_allowed_, must, jsonschema::kMaxPatternDfaStates);
  } catch (const Error& e) {
    Fail(path_ + (patterns_.empty() ? "/additionalProperties" : "/patternProperties"),
         std::string("key automata: ") + e.what());
  }
  std::vector<Region> out;
  for (auto& region : regions) {
    if (ByteDfaEmpty(region.keys)) continue;
    const JsonValue* schema = extra_;
    std::string at = path_ + "/additionalProperties";
    if (region.patterns != 0) {
      schema = nullptr;
      for (size_t i = 0; i < patterns_.size(); ++i) {
        if (!(region.patterns >> i & 1) || jsonschema::IsTrueSchema(*pattern_schemas_[i])) continue;
        const std::string here = path_ + "/patternProperties/" + JsonPointerEscape(patterns_[i]);
        if (schema && !(*schema == *pattern_schemas_[i]))
          Fail(here, "keys matching several patternProperties with different schemas are not supported for " + who_);
        schema = pattern_schemas_[i];
        at = here;
      }
    }
    out.push_back({std::move(region.keys), schema, at});
  }
  return out;
}

}  // namespace xg2
