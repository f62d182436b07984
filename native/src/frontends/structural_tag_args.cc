#include "frontends/structural_tag_args.h"

#include <set>

#include "frontends/json_schema_internal.h"
#include "frontends/regex.h"
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

}  // namespace

void StyledArgumentLowering::Fail(const std::string& path, const std::string& reason) const {
  throw Error(ErrorKind::kStructuralTag, path + ": " + reason);
}

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

void StyledArgumentLowering::CheckKeywords(const JsonValue& s, const std::vector<std::string>& types,
                                           const std::string& path, const std::set<std::string>& also) const {
  std::set<std::string> handled = also;
  handled.insert("type");
  for (const std::string& t : types) {
    if (t == "object") handled.insert({"properties", "required", "additionalProperties"});
    if (t == "array") handled.insert({"items", "minItems", "maxItems"});
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
  const JsonValue open = JsonValue::Object({{"additionalProperties", JsonValue::Bool(true)}});
  const JsonValue* s = &schema;
  if (schema.is_bool()) {
    if (!schema.as_bool()) Fail(path_, "the schema 'false' accepts no arguments");
    s = &open;
  }
  std::vector<std::string> types = Types(*s);
  if (!(types.empty() || (types.size() == 1 && types[0] == "object")))
    Fail(path_ + "/type", "tool arguments must be an object");
  CheckKeywords(*s, {"object"}, path_);
  return MembersOf(*s, path_, nullptr, /*root=*/true);
}

ExprId StyledArgumentLowering::Value(const JsonValue& s, const std::string& path, const std::string* name) {
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
      if (!(value.is_string() && Excluded(value.as_string()))) alts.push_back(Literal(value, name, path + "/" + key));
    }
    if (alts.empty()) Fail(path + "/" + key, "every value contains an excluded substring");
    return alts.size() == 1 ? alts[0] : g_->AddChoice(std::move(alts));
  }
  if (const JsonValue* any = s.Find("anyOf")) {
    CheckKeywords(s, {}, path, {"anyOf"});
    if (!any->is_array() || any->items().empty()) Fail(path + "/anyOf", "must be a non-empty list");
    std::vector<ExprId> alts;
    for (size_t i = 0; i < any->items().size(); ++i)
      alts.push_back(Value(any->items()[i], path + "/anyOf/" + std::to_string(i), name));
    return g_->AddChoice(std::move(alts));
  }
  std::vector<std::string> types = Types(s);
  if (types.empty()) {
    if (s.Find("properties")) types = {"object"};
    if (s.Find("items")) types = {"array"};
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
      if (s.Find("minLength") || s.Find("maxLength"))
        warnings_->push_back(path + ": minLength/maxLength are not enforced in the " + style_ + " style");
      ExprId content = StringContent(s, path);
      alts.push_back(content == kNoExpr ? String(name) : ConstrainedString(content, name, path));
    } else if (t == "integer" || t == "number" || t == "boolean" || t == "null")
      alts.push_back(Scalar(JsonScalar(s, path), name));
    else
      Fail(path + "/type", "unknown type '" + t + "'");
  }
  return alts.size() == 1 ? alts[0] : g_->AddChoice(std::move(alts));
}

// The raw text a `pattern` (JSON Schema search semantics) or `format` allows, or kNoExpr.
ExprId StyledArgumentLowering::StringContent(const JsonValue& s, const std::string& path) {
  const JsonValue* pattern = s.Find("pattern");
  const JsonValue* format = s.Find("format");
  if (pattern && format) Fail(path, "'pattern' with 'format' is not supported by the " + style_ + " style");
  if (pattern) {
    if (!pattern->is_string()) Fail(path + "/pattern", "must be a string");
    RegexOptions options;
    options.search_semantics = true;
    try {
      return RegexToExpr(g_, pattern->as_string(), options);
    } catch (const Error& e) {
      Fail(path + "/pattern", e.what());
    }
  }
  if (format) {
    if (!format->is_string()) Fail(path + "/format", "must be a string");
    try {
      return jsonschema::FormatContentExpr(g_, format->as_string());
    } catch (const jsonschema::UnsupportedKeyword&) {
      Fail(path + "/format", "format '" + format->as_string() + "' is not supported");
    }
  }
  return kNoExpr;
}

ExprId StyledArgumentLowering::ConstrainedString(ExprId, const std::string*, const std::string& path) {
  Fail(path, "'pattern' and 'format' strings are not supported by the " + style_ +
                 " style (a pattern could also match the end of the value)");
}

std::vector<std::pair<std::string, const JsonValue*>> StyledArgumentLowering::Ordered(const JsonValue& props) {
  std::vector<std::pair<std::string, const JsonValue*>> out;
  for (const auto& [k, v] : props.members()) out.emplace_back(k, &v);
  return out;
}

std::vector<StyledArgumentLowering::Member> StyledArgumentLowering::Members(const JsonValue& s,
                                                                            const std::string& path) {
  const JsonValue* props = s.Find("properties");
  if (props && !props->is_object()) Fail(path + "/properties", "must be an object");
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
    if (Excluded(key)) {  // a name that cannot be written: only an optional property may go
      if (required.count(key)) Fail(p, "the required property name contains an excluded substring");
      continue;
    }
    out.push_back({key, WriteMember(key, *prop, p), required.count(key) > 0});
  }
  return out;
}

ExprId StyledArgumentLowering::MembersOf(const JsonValue& s, const std::string& path, const std::string* name,
                                         bool root) {
  std::vector<Member> members = Members(s, path);
  const JsonValue* extra = s.Find("additionalProperties");
  ExprId more = kNoExpr;
  if (extra && !(extra->is_bool() && !extra->as_bool())) {
    more = ExtraMember(extra->is_object() ? extra : nullptr, path + "/additionalProperties");
    if (more == kNoExpr) Fail(path + "/additionalProperties", "the " + style_ + " style cannot name extra keys");
  }
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
  ExprId item = items ? Value(*items, path + "/items", ItemName()) : AnyValue(ItemName());
  auto count = [&](const char* key, int64_t fallback) {
    const JsonValue* v = s.Find(key);
    if (!v) return fallback;
    if (!v->is_number() || !v->is_integer() || v->as_number() < 0)
      Fail(path + "/" + key, "must be a non-negative integer");
    return static_cast<int64_t>(v->as_number());
  };
  const int64_t lo = count("minItems", 0), hi = count("maxItems", kUnbounded);
  if (hi != kUnbounded && hi < lo) Fail(path + "/maxItems", "is below minItems");
  if (hi == 0) return g_->AddEmpty();
  ExprId sep = ItemSeparator();
  ExprId next = sep == kNoExpr ? item : g_->AddSequence({sep, item});
  ExprId list =
      g_->AddSequence({item, g_->AddRepeat(next, lo > 0 ? lo - 1 : 0, hi == kUnbounded ? kUnbounded : hi - 1)});
  return lo == 0 ? g_->AddRepeat(list, 0, 1) : list;
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

ExprId StyledArgumentLowering::Ref(const std::string& ref, const std::string& path, const std::string* name) {
  const JsonValue* target = nullptr;
  for (const std::string prefix : {"#/$defs/", "#/definitions/"}) {
    if (ref.compare(0, prefix.size(), prefix) != 0) continue;
    const JsonValue* defs = root_->is_object() ? root_->Find(prefix.substr(2, prefix.size() - 3)) : nullptr;
    if (defs && defs->is_object()) target = defs->Find(ref.substr(prefix.size()));
  }
  if (!target) Fail(path + "/$ref", "'" + ref + "' does not name a schema under #/$defs or #/definitions");
  const std::string key = ref + (name ? "|" + *name : "");
  if (auto it = refs_.find(key); it != refs_.end()) return g_->AddRuleRef(it->second);
  RuleId rule = g_->DeclareRule(style_ + "_ref_" + std::to_string(refs_.size()));
  refs_[key] = rule;  // before lowering the target, so a recursive schema refers back to it
  g_->SetRuleBody(rule, Value(*target, path + "/$ref", name));
  return g_->AddRuleRef(rule);
}

// Any value (schema true / {}): strings, JSON scalars, lists and objects of any values.
ExprId StyledArgumentLowering::AnyValue(const std::string* name) {
  const std::string key = name ? "|" + *name : "";
  if (auto it = any_values_.find(key); it != any_values_.end()) return g_->AddRuleRef(it->second);
  RuleId rule = g_->DeclareRule(style_ + "_any_value");
  any_values_[key] = rule;
  g_->SetRuleBody(rule, g_->AddChoice({String(name), Scalar(AnyScalar(), name), Array(AnyListItems(), name),
                                       Object({}, ExtraMember(nullptr, path_), name)}));
  return g_->AddRuleRef(rule);
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
