#include "frontends/structural_tag_args.h"

#include <algorithm>
#include <optional>
#include <set>

#include "automata/byte_dfa_ops.h"
#include "frontends/json_schema_converter.h"
#include "frontends/json_schema_internal.h"
#include "frontends/regex.h"
#include "frontends/structural_tag_roots.h"
#include "xg2/errors.h"

namespace xg2 {
namespace {

// Keywords that only annotate a schema.
const std::set<std::string>& Annotations() {
  static const std::set<std::string> k = {"title",    "description", "default",    "examples", "$comment",
                                          "readOnly", "writeOnly",   "$schema",    "$id",      "deprecated",
                                          "strict",   "$defs",       "definitions"};
  return k;
}

const std::set<std::string>& NumberKeywords() {
  static const std::set<std::string> k = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"};
  return k;
}

[[noreturn]] void Refuse(const std::string& path, const std::string& reason) {
  throw Error(ErrorKind::kStructuralTag, path + ": " + reason);
}

int64_t LengthBound(const JsonValue& s, const char* key, int64_t fallback, const std::string& path) {
  const JsonValue* v = s.Find(key);
  if (!v) return fallback;
  if (!v->is_number() || !v->is_integer() || v->as_number() < 0)
    Refuse(path + "/" + key, "must be a non-negative integer");
  return static_cast<int64_t>(v->as_number());
}

}  // namespace

// The raw text of a string value that a pattern (JSON Schema search semantics), an asserted
// format or minLength/maxLength constrain, as the chat templates write strings: unquoted and
// unescaped. kNoExpr when nothing constrains it (a format that only annotates). A style's end
// string is left out by the caller where a reader would cut the value there.
ExprId RawStringText(Grammar* g, const JsonValue& s, const std::string& path, const std::vector<std::string>& excludes,
                     const std::string& who) {
  const JsonValue* pattern = s.Find("pattern");
  const JsonValue* format = s.Find("format");
  const int64_t lo = LengthBound(s, "minLength", 0, path);
  const int64_t hi = LengthBound(s, "maxLength", -1, path);
  if (hi >= 0 && hi < lo) Refuse(path, "maxLength is below minLength: no string is allowed");
  ExprId text = kNoExpr;
  if (format) {
    if (!format->is_string()) Refuse(path + "/format", "must be a string");
    if (jsonschema::IsAssertedFormat(format->as_string())) {
      text = jsonschema::FormatDecodedExpr(g, format->as_string());
      if (text == kNoExpr) Refuse(path + "/format", "format '" + format->as_string() + "' is not enforced");
    }
  }
  if (pattern) {
    if (!pattern->is_string()) Refuse(path + "/pattern", "must be a string");
    if (text != kNoExpr) Refuse(path, "'pattern' with an asserted 'format' is not supported for " + who);
    RegexOptions options;
    options.search_semantics = true;
    try {
      text = RegexToExpr(g, pattern->as_string(), options);
    } catch (const Error& e) {
      Refuse(path + "/pattern", e.what());
    }
  }
  const bool bounded = lo > 0 || hi >= 0;
  if (text == kNoExpr) {
    if (!bounded) return kNoExpr;
    ExprId any = g->AddRepeat(g->AddCharClass({}, /*negated=*/true), lo, hi < 0 ? kUnbounded : hi);
    if (excludes.empty()) return any;
    try {
      return jsonschema::WithoutSubstrings(g, any, excludes);
    } catch (const Error& e) {
      Refuse(path, std::string("excluded substrings cannot be enforced on this string: ") + e.what());
    }
  }
  if (bounded) {  // kept only where the pattern's or format's own lengths already satisfy them
    int64_t min_len = 0, max_len = -1;
    if (!jsonschema::CodepointLengthRange(*g, text, &min_len, &max_len) || min_len < lo ||
        (hi >= 0 && (max_len < 0 || max_len > hi)))
      Refuse(path, "minLength/maxLength together with a pattern or format cannot be enforced for " + who);
  }
  return text;  // a pattern or format keeps its own language (excludes filter free strings, as in JSON)
}

void StyledArgumentLowering::Fail(const std::string& path, const std::string& reason) const { Refuse(path, reason); }

bool StyledArgumentLowering::Excluded(const std::string& text) const {
  for (const std::string& e : excludes_) {
    if (text.find(e) != std::string::npos) return true;
  }
  return false;
}

// The schema's "type" as a list of names (empty: no "type").
static std::vector<std::string> Types(const JsonValue& s) {
  const JsonValue* t = s.Find("type");
  if (!t) return {};
  if (t->is_string()) return {t->as_string()};
  std::vector<std::string> out;
  if (t->is_array()) {
    for (const auto& item : t->items()) out.push_back(item.is_string() ? item.as_string() : "");
  }
  return out.empty() ? std::vector<std::string>{""} : out;
}

std::string StyledArgumentLowering::ValueName::CacheKey() const {
  if (fixed) return "|" + *fixed;
  return keys != kNoExpr ? "#" + std::to_string(keys) : "";
}

void StyledArgumentLowering::CheckKeywords(const JsonValue& s, const std::vector<std::string>& types,
                                           const std::string& path, const std::set<std::string>& also) const {
  std::set<std::string> handled = also;
  handled.insert("type");
  for (const std::string& t : types) {
    if (t == "object")
      handled.insert({"properties", "required", "additionalProperties", "unevaluatedProperties", "patternProperties",
                      "propertyNames"});
    if (t == "array") handled.insert({"items", "prefixItems", "minItems", "maxItems"});
    if (t == "string") handled.insert({"minLength", "maxLength", "pattern", "format"});
    if (t == "integer" || t == "number") handled.insert(NumberKeywords().begin(), NumberKeywords().end());
  }
  for (const auto& [k, v] : s.members()) {
    if (!handled.count(k) && !Annotations().count(k))
      Fail(path + "/" + JsonPointerEscape(k), "keyword '" + k + "' is not supported by the " + style_ + " style");
  }
}

ExprId StyledArgumentLowering::Lower(const JsonValue& schema) {
  root_ = &schema;
  if (!IsArgumentUnion(schema)) return ArgumentsOf(schema, path_);
  // A union at the root: the arguments of one of the objects it allows.
  std::vector<ExprId> alts;
  for (const ArgumentAlternative& alt : ArgumentAlternatives(schema, path_, options_, "the " + style_ + " style"))
    alts.push_back(ArgumentsOf(alt.schema, alt.path));
  return alts.size() == 1 ? alts[0] : g_->AddChoice(std::move(alts));
}

ExprId StyledArgumentLowering::ArgumentsOf(const JsonValue& schema, const std::string& path) {
  const JsonValue open = JsonValue::Object({{"additionalProperties", JsonValue::Bool(true)}});
  const JsonValue* s = &schema;
  if (schema.is_bool()) {
    if (!schema.as_bool()) Fail(path, "the schema 'false' accepts no arguments");
    s = &open;
  }
  std::vector<std::string> types = Types(*s);
  if (!(types.empty() || (types.size() == 1 && types[0] == "object")))
    Fail(path + "/type", "tool arguments must be an object");
  CheckKeywords(*s, {"object"}, path);
  return MembersOf(*s, path, {}, /*root=*/true);
}

ExprId StyledArgumentLowering::Value(const JsonValue& s, const std::string& path, ValueName name) {
  if (s.is_bool()) {
    if (!s.as_bool()) Fail(path, "the schema 'false' accepts no value");
    return AnyValue(name);
  }
  if (!s.is_object()) Fail(path, "a schema must be an object or a boolean");
  if (const JsonValue* ref = s.Find("$ref")) {
    CheckKeywords(s, {}, path, {"$ref"});
    if (!ref->is_string()) Fail(path + "/$ref", "must be a string");
    return Ref(ref->as_string(), path, name);
  }
  for (const std::string key : {"const", "enum"}) {
    const JsonValue* v = s.Find(key);
    if (!v) continue;
    // Other keywords beside a value list would narrow it: refuse rather than ignore them.
    CheckKeywords(s, {}, path, {key});
    if (key == "enum" && (!v->is_array() || v->items().empty())) Fail(path + "/enum", "must be a non-empty list");
    const std::vector<JsonValue> values = key == "const" ? std::vector<JsonValue>{*v} : v->items();
    std::vector<ExprId> alts;
    for (const JsonValue& value : values) {
      if (value.is_string() && Excluded(value.as_string())) continue;
      if (ExprId literal = Literal(value, name, path + "/" + key); literal != kNoExpr) alts.push_back(literal);
    }
    if (alts.empty()) Fail(path + "/" + key, "no value can be written (each has an excluded or unwritable substring)");
    return alts.size() == 1 ? alts[0] : g_->AddChoice(std::move(alts));
  }
  if (const JsonValue* all = s.Find("allOf")) {
    CheckKeywords(s, {}, path, {"allOf"});
    return Value(Conjunction(*all, path + "/allOf"), path + "/allOf", name);
  }
  for (const std::string key : {"anyOf", "oneOf"}) {
    const JsonValue* any = s.Find(key);
    if (!any) continue;
    CheckKeywords(s, {}, path, {key});
    const std::string at = path + "/" + key;
    if (!any->is_array() || any->items().empty()) Fail(at, "must be a non-empty list");
    if (key == "oneOf") CheckExclusive(any->items(), at);
    std::vector<ExprId> alts;
    for (size_t i = 0; i < any->items().size(); ++i)
      alts.push_back(Value(any->items()[i], at + "/" + std::to_string(i), name));
    return g_->AddChoice(std::move(alts));
  }
  std::vector<std::string> types = Types(s);
  if (types.empty()) {
    if (s.Find("properties") || s.Find("patternProperties") || s.Find("propertyNames")) types = {"object"};
    if (s.Find("items") || s.Find("prefixItems")) types = {"array"};
  }
  CheckKeywords(s, types, path);
  if (types.empty()) return AnyValue(name);
  std::vector<ExprId> alts;
  for (const std::string& t : types) {
    if (t == "object")
      alts.push_back(MembersOf(s, path, name, /*root=*/false));
    else if (t == "array")
      alts.push_back(Array(Items(s, path), name));
    else if (t == "string") {
      ExprId content = RawStringText(g_, s, path, excludes_, "the " + style_ + " style");
      alts.push_back(content == kNoExpr ? String(name) : ConstrainedString(content, name, path));
    } else if (t == "integer" || t == "number" || t == "boolean" || t == "null")
      alts.push_back(Scalar(JsonScalar(s, path), name));
    else
      Fail(path + "/type", "unknown type '" + t + "'");
  }
  return alts.size() == 1 ? alts[0] : g_->AddChoice(std::move(alts));
}

// allOf as one schema: true branches drop out, and branches whose keywords are all different
// (each keyword keeps its meaning beside the others) join into one object. Keywords whose
// meaning depends on their siblings (additionalProperties, items, if/then/else, $ref, ...)
// or that two branches both set are refused: their conjunction is not built here.
JsonValue StyledArgumentLowering::Conjunction(const JsonValue& all, const std::string& path) const {
  if (!all.is_array() || all.items().empty()) Fail(path, "must be a non-empty list");
  static const std::set<std::string> kDependent = {"additionalProperties",
                                                   "unevaluatedProperties",
                                                   "unevaluatedItems",
                                                   "items",
                                                   "prefixItems",
                                                   "additionalItems",
                                                   "contains",
                                                   "minContains",
                                                   "maxContains",
                                                   "if",
                                                   "then",
                                                   "else",
                                                   "$ref",
                                                   "allOf",
                                                   "anyOf",
                                                   "oneOf",
                                                   "not"};
  std::vector<const JsonValue*> parts;
  for (const JsonValue& branch : all.items()) {
    if (!jsonschema::IsTrueSchema(branch)) parts.push_back(&branch);
  }
  if (parts.empty()) return JsonValue::Bool(true);
  if (parts.size() == 1) return *parts[0];
  std::vector<std::pair<std::string, JsonValue>> joined;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string at = path + "/" + std::to_string(i);
    if (!parts[i]->is_object()) Fail(at, "the schema 'false' accepts no value");
    for (const auto& [k, v] : parts[i]->members()) {
      if (Annotations().count(k)) continue;
      auto same = std::find_if(joined.begin(), joined.end(), [&](const auto& kv) { return kv.first == k; });
      if (same != joined.end() && same->second == v) continue;
      if (same != joined.end() || kDependent.count(k))
        Fail(at + "/" + JsonPointerEscape(k),
             "allOf branches combining '" + k + "' are not supported by the " + style_ + " style");
      joined.emplace_back(k, v);
    }
  }
  return JsonValue::Object(std::move(joined));
}

// oneOf is written as a choice: exact only when no value satisfies two alternatives.
void StyledArgumentLowering::CheckExclusive(const std::vector<JsonValue>& alts, const std::string& path) const {
  jsonschema::Converter judge(*root_, options_);
  const std::string ptr = path.substr(std::min(path.size(), path_.size()));
  for (size_t i = 0; i < alts.size(); ++i) {
    for (size_t j = i + 1; j < alts.size(); ++j) {
      if (!judge.ProvablyDisjointSchemas(alts[i], ptr + "/" + std::to_string(i), alts[j],
                                         ptr + "/" + std::to_string(j)))
        Fail(path, "alternatives " + std::to_string(i) + " and " + std::to_string(j) +
                       " are not provably exclusive (the " + style_ + " style writes oneOf as a choice)");
    }
  }
}

ExprId StyledArgumentLowering::ConstrainedString(ExprId, ValueName, const std::string& path) {
  Fail(path, "String pattern, recognized format, and length constraints are not supported by the " + style_ +
                 " style ('pattern', an asserted 'format', 'minLength' / 'maxLength')");
}

ExprId StyledArgumentLowering::TextBefore(ExprId content, const std::string& end, const std::string& path) {
  try {
    return jsonschema::WithoutSubstrings(g_, content, {end});
  } catch (const Error& e) {
    Fail(path, "the string's text cannot be kept from spelling its end '" + end + "': " + e.what());
  }
}

std::vector<std::pair<std::string, const JsonValue*>> StyledArgumentLowering::Ordered(const JsonValue& props) {
  std::vector<std::pair<std::string, const JsonValue*>> out;
  for (const auto& [k, v] : props.members()) out.emplace_back(k, &v);
  return out;
}

std::vector<StyledArgumentLowering::Member> StyledArgumentLowering::Members(const JsonValue& s, const std::string& path,
                                                                            const ObjectKeys& keys) {
  const JsonValue* props = s.Find("properties");
  std::set<std::string> required;
  if (const JsonValue* req = s.Find("required"); req && req->is_array()) {
    for (const auto& r : req->items()) {
      if (!r.is_string()) continue;
      if (!props || !props->Find(r.as_string()))
        Fail(path + "/required", "required property '" + r.as_string() + "' is not declared in 'properties'");
      required.insert(r.as_string());
    }
  }
  std::vector<Member> out;
  if (!props) return out;
  for (const auto& [key, prop] : Ordered(*props)) {
    std::string p = path + "/properties/" + JsonPointerEscape(key);
    const bool allowed = keys.Admits(key, *prop, p);
    if (Excluded(key) || !allowed) {  // a name that cannot be written: only an optional property may go
      if (required.count(key))
        Fail(p, !allowed ? "the required property name does not satisfy propertyNames"
                         : "the required property name contains an excluded substring");
      continue;
    }
    out.push_back({key, WriteMember(key, *prop, p), required.count(key) > 0});
  }
  return out;
}

// Members whose names the schema does not fix, within propertyNames and the style's key
// alphabet, by the schema their values take.
ExprId StyledArgumentLowering::FreeMembers(const JsonValue& s, const ObjectKeys& keys) {
  std::vector<std::string> declared;
  if (const JsonValue* props = s.Find("properties")) {
    for (const auto& [key, prop] : props->members()) declared.push_back(key);
  }
  Grammar scratch;
  std::optional<ByteDfaSpec> alphabet;
  if (ExprId e = KeyAlphabet(&scratch); e != kNoExpr)
    alphabet = ByteDfaOfExpr(scratch, e, jsonschema::kMaxPatternDfaStates);
  std::vector<ExprId> alts;
  for (auto& region : keys.FreeRegions(declared, alphabet ? &*alphabet : nullptr)) {
    ExprId written = KeyText(std::move(region.keys), region.path);
    if (written == kNoExpr)
      Fail(region.path,
           "the " + style_ + " style writes only fixed object property names (not keys the schema leaves open)");
    alts.push_back(FreeMember(written, region.schema, region.path));
  }
  if (alts.empty()) return kNoExpr;
  RuleId rule = g_->DeclareRule(style_ + "_free_member");
  g_->SetRuleBody(rule, alts.size() == 1 ? alts[0] : g_->AddChoice(std::move(alts)));
  return g_->AddRuleRef(rule);
}

ExprId StyledArgumentLowering::MembersOf(const JsonValue& s, const std::string& path, ValueName name, bool root) {
  if (WritesOnlyFixedKeys() && s.Find("propertyNames") != nullptr) {
    Fail(path + "/propertyNames", "the " + style_ +
                                      " style writes only fixed object property names (propertyNames constrains the "
                                      "names the schema leaves open)");
  }
  const ObjectKeys keys(s, path, "the " + style_ + " style");
  std::vector<Member> members = Members(s, path, keys);
  ExprId more = FreeMembers(s, keys);
  return root ? Arguments(std::move(members), more) : Object(std::move(members), more, name);
}

ExprId StyledArgumentLowering::JoinMembers(const std::vector<Member>& members, ExprId extra, ExprId separator) {
  if (options_.any_order && (members.size() > 1 || (extra != kNoExpr && !members.empty())))
    return AnyOrderMembers(members, extra, separator);
  // Built back to front: `written` is the text from member i on after a member was written (a
  // separator is due), `fresh` the same before any member.
  auto sep = [&](ExprId e) { return separator == kNoExpr ? e : g_->AddSequence({separator, e}); };
  ExprId written = g_->AddEmpty(), fresh = g_->AddEmpty();
  if (extra != kNoExpr) {
    written = g_->AddRepeat(sep(extra), 0, kUnbounded);
    fresh = g_->AddRepeat(g_->AddSequence({extra, written}), 0, 1);
  }
  for (size_t i = members.size(); i-- > 0;) {
    ExprId with_written = g_->AddSequence({sep(members[i].value), written});
    ExprId with_fresh = g_->AddSequence({members[i].value, written});
    written = members[i].required ? with_written : g_->AddChoice({with_written, written});
    fresh = members[i].required ? with_fresh : g_->AddChoice({with_fresh, fresh});
  }
  return fresh;
}

// any_order: one AnyOrder node (required members exactly once, optional ones at most once,
// extra ones any number of times, in any order); the parser keeps the set written so far.
ExprId StyledArgumentLowering::AnyOrderMembers(const std::vector<Member>& members, ExprId extra, ExprId separator) {
  std::vector<ExprId> children{separator == kNoExpr ? g_->AddEmpty() : separator};
  AnyOrderSpec spec;
  for (bool required : {true, false}) {
    for (const Member& m : members) {
      if (m.required != required) continue;
      children.push_back(m.value);
      ++(required ? spec.num_required : spec.num_optional);
    }
  }
  if (extra != kNoExpr) {
    children.push_back(extra);
    spec.num_repeated = 1;
  }
  return g_->AddAnyOrder(spec, std::move(children));
}

ExprId StyledArgumentLowering::Items(const JsonValue& s, const std::string& path) {
  const JsonValue* items = s.Find("items");
  const JsonValue* prefix = s.Find("prefixItems");
  auto count = [&](const char* key, int64_t fallback) {
    const JsonValue* v = s.Find(key);
    if (!v) return fallback;
    if (!v->is_number() || !v->is_integer() || v->as_number() < 0)
      Fail(path + "/" + key, "must be a non-negative integer");
    return static_cast<int64_t>(v->as_number());
  };
  const int64_t lo = count("minItems", 0), hi = count("maxItems", kUnbounded);
  if (hi != kUnbounded && hi < lo) Fail(path + "/maxItems", "is below minItems");
  if (prefix && !prefix->is_array()) Fail(path + "/prefixItems", "must be a list of schemas");
  // Positions a list may fill: up to a `false` prefix item, to the end of the prefix when
  // items past it are `false` (2020-12: `items` applies past the prefix), else unbounded.
  const int64_t n = prefix ? static_cast<int64_t>(prefix->items().size()) : 0;
  int64_t shown = n;  // prefix positions that may be filled
  for (int64_t i = 0; i < n; ++i) {
    const JsonValue& p = prefix->items()[i];
    if (p.is_bool() && !p.as_bool()) {
      shown = i;
      break;
    }
  }
  const bool rest = shown == n && !(items && items->is_bool() && !items->as_bool());
  if (!rest && lo > shown) Fail(path + "/minItems", "is above the number of items the list may hold");
  if (hi == 0 || (!rest && shown == 0)) return g_->AddEmpty();  // the list is empty whatever its items' schemas
  ExprId sep = ItemSeparator();
  auto after = [&](ExprId e) { return sep == kNoExpr ? e : g_->AddSequence({sep, e}); };
  if (n == 0) {
    ExprId item = items ? Value(*items, path + "/items", ItemName()) : AnyValue(ItemName());
    ExprId list = g_->AddSequence(
        {item, g_->AddRepeat(after(item), lo > 0 ? lo - 1 : 0, hi == kUnbounded ? kUnbounded : hi - 1)});
    return lo == 0 ? g_->AddRepeat(list, 0, 1) : list;
  }
  // prefixItems, built back to front: `tail` is the list from position i on, after item i-1
  // (a separator is due before each item); positions below minItems are required, and a
  // position is filled only after the one before it.
  if (hi != kUnbounded) shown = std::min(shown, hi);
  ExprId tail = g_->AddEmpty();
  if (rest && (hi == kUnbounded || hi > n)) {
    ExprId item = items ? Value(*items, path + "/items", ItemName()) : AnyValue(ItemName());
    tail = g_->AddRepeat(after(item), std::max<int64_t>(lo - n, 0), hi == kUnbounded ? kUnbounded : hi - n);
  }
  for (int64_t i = shown; i-- > 0;) {
    ExprId item = Value(prefix->items()[i], path + "/prefixItems/" + std::to_string(i), ItemName());
    ExprId with = g_->AddSequence({i == 0 ? item : after(item), tail});
    tail = i < lo ? with : g_->AddChoice({with, g_->AddEmpty()});
  }
  return tail;
}

// Numbers, booleans and null are spelled as in JSON: the JSON front end builds them (with
// their bounds) from this schema narrowed to its scalar types.
ExprId StyledArgumentLowering::JsonScalar(const JsonValue& s, const std::string& path) {
  std::vector<std::pair<std::string, JsonValue>> members;
  for (const auto& [k, v] : s.members()) {
    if (NumberKeywords().count(k)) members.emplace_back(k, v);
  }
  std::vector<JsonValue> types;
  for (const std::string& t : Types(s)) {
    if (t == "integer" || t == "number" || t == "boolean" || t == "null") types.push_back(JsonValue::String(t));
  }
  members.emplace_back("type", JsonValue::Array(std::move(types)));
  JsonSchemaResult r;
  JsonSchemaOptions part = options_;
  part.refuse_empty_language = false;  // one argument value: an optional one may be left out
  try {
    r = JsonSchemaToGrammar(JsonValue::Object(std::move(members)), part);
  } catch (const Error& e) {
    Fail(path, e.what());
  }
  for (auto& w : r.warnings) warnings_->push_back(path + ": " + w);
  return g_->AddRuleRef(ImportGrammar(g_, r.grammar, style_ + "_scalar" + std::to_string(++imports_) + "_"));
}

const JsonValue* DefinitionTarget(const JsonValue& root, const std::string& ref) {
  for (const std::string prefix : {"#/$defs/", "#/definitions/"}) {
    if (ref.compare(0, prefix.size(), prefix) != 0) continue;
    const JsonValue* defs = root.is_object() ? root.Find(prefix.substr(2, prefix.size() - 3)) : nullptr;
    if (defs && defs->is_object()) return defs->Find(ref.substr(prefix.size()));
  }
  return nullptr;
}

ExprId StyledArgumentLowering::Ref(const std::string& ref, const std::string& path, ValueName name) {
  // "#" is the tool's own schema, here a value (a dict member, a list item) of that shape.
  const JsonValue* target = ref == "#" ? root_ : DefinitionTarget(*root_, ref);
  if (!target) Fail(path + "/$ref", "'" + ref + "' does not name the root or a schema under #/$defs or #/definitions");
  const std::string key = ref + name.CacheKey();
  if (auto it = refs_.find(key); it != refs_.end()) return g_->AddRuleRef(it->second);
  RuleId rule = g_->DeclareRule(style_ + "_ref_" + std::to_string(refs_.size()));
  refs_[key] = rule;  // before lowering the target, so a recursive schema refers back to it
  g_->SetRuleBody(rule, Value(*target, path + "/$ref", name));
  return g_->AddRuleRef(rule);
}

// Any value (schema true / {}): strings, JSON scalars, lists and objects of any values.
ExprId StyledArgumentLowering::AnyValue(ValueName name) {
  const std::string key = name.CacheKey();
  if (auto it = any_values_.find(key); it != any_values_.end()) return g_->AddRuleRef(it->second);
  RuleId rule = g_->DeclareRule(style_ + "_any_value");
  any_values_[key] = rule;
  g_->SetRuleBody(rule, g_->AddChoice({String(name), Scalar(AnyScalar(), name), Array(AnyListItems(), name),
                                       Object({}, AnyMember(), name)}));
  return g_->AddRuleRef(rule);
}

// A member of an untyped object (one rule, shared): any key the style can write, any value.
ExprId StyledArgumentLowering::AnyMember() {
  if (any_member_ >= 0) return g_->AddRuleRef(any_member_);
  any_member_ = g_->DeclareRule(style_ + "_any_member");
  const JsonValue open = JsonValue::Object({});
  ExprId member = FreeMembers(open, ObjectKeys(open, path_, "the " + style_ + " style"));
  g_->SetRuleBody(any_member_, member == kNoExpr ? g_->AddChoice({}) : member);
  return g_->AddRuleRef(any_member_);
}

// A number, boolean or null as JSON text (the scalars of an untyped value).
ExprId StyledArgumentLowering::AnyScalar() {
  const JsonValue scalars = JsonValue::Object(
      {{"type",
        JsonValue::Array({JsonValue::String("number"), JsonValue::String("boolean"), JsonValue::String("null")})}});
  return JsonScalar(scalars, path_);
}

// The inside of a list of any values: none, or items joined by ItemSeparator.
ExprId StyledArgumentLowering::AnyListItems() {
  ExprId item = AnyValue(ItemName());
  ExprId sep = ItemSeparator();
  return g_->AddRepeat(
      g_->AddSequence({item, g_->AddRepeat(sep == kNoExpr ? item : g_->AddSequence({sep, item}), 0, kUnbounded)}), 0,
      1);
}

// Text up to and including `end` (a rule of its own per end string, shared by every value).
ExprId StyledArgumentLowering::RawTextUntil(const std::string& end) {
  if (auto it = raw_texts_.find(end); it != raw_texts_.end()) return g_->AddRuleRef(it->second);
  TagDispatchSpec text;
  text.ends = {end};
  text.excludes = excludes_;
  text.plain_end = false;
  RuleId rule = g_->DeclareRule(style_ + "_raw_text");
  g_->SetRuleBody(rule, g_->AddTagDispatch(std::move(text), {}));
  raw_texts_[end] = rule;
  return g_->AddRuleRef(rule);
}

}  // namespace xg2
