#include "frontends/structural_tag_gemma.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "xg2/errors.h"

namespace xg2 {
namespace {

[[noreturn]] void Fail(const std::string& path, const std::string& reason) {
  throw Error(ErrorKind::kStructuralTag, path + ": " + reason);
}

// Keywords that only annotate a schema.
const std::set<std::string>& Annotations() {
  static const std::set<std::string> k = {"title",    "description", "default",    "examples", "$comment",
                                          "readOnly", "writeOnly",   "$schema",    "$id",      "deprecated",
                                          "strict",   "$defs",       "definitions"};
  return k;
}

void CheckKeywords(const JsonValue& s, const std::set<std::string>& handled, const std::string& path) {
  for (const auto& [k, v] : s.members()) {
    if (!handled.count(k) && !Annotations().count(k))
      Fail(path + "/" + JsonPointerEscape(k), "keyword '" + k + "' is not supported by the gemma argument style");
  }
}

std::string Lower(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Jinja's dictsort (case-insensitive by default): the order Gemma's template writes keys in.
std::vector<std::pair<std::string, const JsonValue*>> DictSorted(const JsonValue& props) {
  std::vector<std::pair<std::string, const JsonValue*>> out;
  for (const auto& [k, v] : props.members()) out.emplace_back(k, &v);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return Lower(a.first) < Lower(b.first); });
  return out;
}

bool IsIdentifier(const std::string& key) {
  if (key.empty() || std::isdigit(static_cast<unsigned char>(key[0]))) return false;
  return std::all_of(key.begin(), key.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// The schema's "type" as a list of names (empty: no "type").
std::vector<std::string> Types(const JsonValue& s, const std::string& path) {
  std::vector<std::string> out;
  const JsonValue* t = s.Find("type");
  if (!t) return out;
  if (t->is_string()) return {t->as_string()};
  if (!t->is_array()) Fail(path + "/type", "must be a string or a list of strings");
  for (const auto& item : t->items()) {
    if (!item.is_string()) Fail(path + "/type", "must be a string or a list of strings");
    out.push_back(item.as_string());
  }
  return out;
}

}  // namespace

ExprId GemmaArgumentLowering::Lower(const JsonValue& schema) {
  root_ = &schema;
  const JsonValue open = JsonValue::Object({{"additionalProperties", JsonValue::Bool(true)}});
  const JsonValue* s = &schema;
  if (schema.is_bool()) {
    if (!schema.as_bool()) Fail(path_, "the schema 'false' accepts no arguments");
    s = &open;
  }
  std::vector<std::string> types = Types(*s, path_);
  if (!(types.empty() || (types.size() == 1 && types[0] == "object")))
    Fail(path_ + "/type", "tool arguments must be an object");
  CheckKeywords(*s, {"type", "properties", "required", "additionalProperties"}, path_);
  return g_->AddSequence({g_->AddBytes("{"), Object(*s, path_), g_->AddBytes("}")});
}

ExprId GemmaArgumentLowering::Value(const JsonValue& s, const std::string& path) {
  if (s.is_bool()) {
    if (!s.as_bool()) Fail(path, "the schema 'false' accepts no value");
    return AnyValue();
  }
  if (!s.is_object()) Fail(path, "a schema must be an object or a boolean");
  if (const JsonValue* ref = s.Find("$ref")) {
    CheckKeywords(s, {"$ref"}, path);
    if (!ref->is_string()) Fail(path + "/$ref", "must be a string");
    return Ref(ref->as_string(), path);
  }
  if (const JsonValue* c = s.Find("const")) {
    CheckKeywords(s, {"const", "type"}, path);
    return Literal(*c, path + "/const");
  }
  if (const JsonValue* e = s.Find("enum")) {
    CheckKeywords(s, {"enum", "type"}, path);
    if (!e->is_array() || e->items().empty()) Fail(path + "/enum", "must be a non-empty list");
    std::vector<ExprId> alts;
    for (size_t i = 0; i < e->items().size(); ++i)
      alts.push_back(Literal(e->items()[i], path + "/enum/" + std::to_string(i)));
    return g_->AddChoice(std::move(alts));
  }
  if (const JsonValue* any = s.Find("anyOf")) {
    CheckKeywords(s, {"anyOf"}, path);
    if (!any->is_array() || any->items().empty()) Fail(path + "/anyOf", "must be a non-empty list");
    std::vector<ExprId> alts;
    for (size_t i = 0; i < any->items().size(); ++i)
      alts.push_back(Value(any->items()[i], path + "/anyOf/" + std::to_string(i)));
    return g_->AddChoice(std::move(alts));
  }
  std::vector<std::string> types = Types(s, path);
  if (types.empty()) {
    if (s.Find("properties"))
      types = {"object"};
    else if (s.Find("items"))
      types = {"array"};
    else {
      CheckKeywords(s, {}, path);
      return AnyValue();
    }
  }
  std::set<std::string> handled = {"type"};
  for (const std::string& t : types) {
    if (t == "object") handled.insert({"properties", "required", "additionalProperties"});
    if (t == "array") handled.insert({"items", "minItems", "maxItems"});
    if (t == "string") handled.insert({"minLength", "maxLength"});
    if (t == "integer" || t == "number")
      handled.insert({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"});
  }
  CheckKeywords(s, handled, path);
  std::vector<ExprId> alts;
  for (const std::string& t : types) {
    if (t == "object")
      alts.push_back(g_->AddSequence({g_->AddBytes("{"), Object(s, path), g_->AddBytes("}")}));
    else if (t == "array")
      alts.push_back(Array(s, path));
    else if (t == "string")
      alts.push_back(String(s, path));
    else if (t == "integer" || t == "number" || t == "boolean" || t == "null")
      alts.push_back(Scalar(s, path));
    else
      Fail(path + "/type", "unknown type '" + t + "'");
  }
  return alts.size() == 1 ? alts[0] : g_->AddChoice(std::move(alts));
}

// The members of an object, without its braces: declared properties in dictsort order
// (optional ones may be left out), then, where additionalProperties allows them, more
// identifier keys.
ExprId GemmaArgumentLowering::Object(const JsonValue& s, const std::string& path) {
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
  const JsonValue* extra = s.Find("additionalProperties");
  const bool open = extra && !(extra->is_bool() && !extra->as_bool());
  // Members as a chain: after each prefix of the sorted properties, a comma is needed only
  // once something was written. Built back to front: rest[i][w] = the members from property
  // i on, where w says whether a member was written before.
  std::vector<std::pair<std::string, const JsonValue*>> sorted;
  if (props) sorted = DictSorted(*props);
  for (const auto& [name, prop] : sorted) {
    if (!IsIdentifier(name)) Fail(path + "/properties", "property name '" + name + "' is not a bare identifier");
  }
  ExprId tail_written = g_->AddEmpty(), tail_fresh = g_->AddEmpty();
  if (open) {
    ExprId member = g_->AddSequence({Identifier(), g_->AddBytes(":"),
                                     extra->is_object() ? Value(*extra, path + "/additionalProperties") : AnyValue()});
    ExprId more = g_->AddRepeat(g_->AddSequence({g_->AddBytes(","), member}), 0, kUnbounded);
    tail_written = more;
    tail_fresh = g_->AddRepeat(g_->AddSequence({member, more}), 0, 1);
  }
  for (size_t i = sorted.size(); i-- > 0;) {
    const auto& [name, prop] = sorted[i];
    ExprId value = Value(*prop, path + "/properties/" + JsonPointerEscape(name));
    ExprId member = g_->AddSequence({g_->AddBytes(name + ":"), value});
    ExprId with_written = g_->AddSequence({g_->AddBytes(","), member, tail_written});
    ExprId with_fresh = g_->AddSequence({member, tail_written});
    if (required.count(name)) {
      tail_written = with_written;
      tail_fresh = with_fresh;
    } else {
      tail_written = g_->AddChoice({with_written, tail_written});
      tail_fresh = g_->AddChoice({with_fresh, tail_fresh});
    }
  }
  return tail_fresh;
}

ExprId GemmaArgumentLowering::Array(const JsonValue& s, const std::string& path) {
  const JsonValue* items = s.Find("items");
  ExprId item = items ? Value(*items, path + "/items") : AnyValue();
  auto count = [&](const char* key, int64_t fallback) {
    const JsonValue* v = s.Find(key);
    if (!v) return fallback;
    if (!v->is_number() || !v->is_integer() || v->as_number() < 0)
      Fail(path + "/" + key, "must be a non-negative integer");
    return static_cast<int64_t>(v->as_number());
  };
  const int64_t lo = count("minItems", 0), hi = count("maxItems", kUnbounded);
  if (hi != kUnbounded && hi < lo) Fail(path + "/maxItems", "is below minItems");
  if (hi == 0) return g_->AddBytes("[]");
  ExprId more = g_->AddRepeat(g_->AddSequence({g_->AddBytes(","), item}), std::max<int64_t>(lo - 1, 0),
                              hi == kUnbounded ? kUnbounded : hi - 1);
  ExprId list = g_->AddSequence({item, more});
  if (lo == 0) list = g_->AddRepeat(list, 0, 1);
  return g_->AddSequence({g_->AddBytes("["), list, g_->AddBytes("]")});
}

ExprId GemmaArgumentLowering::String(const JsonValue& s, const std::string& path) {
  // Lengths count codepoints of raw text here; they are not enforced (a widening), so say so.
  if (s.Find("minLength") || s.Find("maxLength"))
    warnings_->push_back(path + ": minLength/maxLength are not enforced in the gemma argument style");
  return g_->AddSequence({g_->AddBytes(delimiter_), RawText()});
}

ExprId GemmaArgumentLowering::Scalar(const JsonValue& s, const std::string& path) {
  // Numbers, booleans and null are spelled as in JSON: the JSON front end builds them (with
  // their bounds), from this schema narrowed to its scalar types.
  static const std::set<std::string> kNumeric = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                                 "multipleOf"};
  std::vector<std::pair<std::string, JsonValue>> members;
  for (const auto& [k, v] : s.members()) {
    if (kNumeric.count(k)) members.emplace_back(k, v);
  }
  std::vector<JsonValue> scalar_types;
  for (const std::string& t : Types(s, path)) {
    if (t == "integer" || t == "number" || t == "boolean" || t == "null") scalar_types.push_back(JsonValue::String(t));
  }
  members.emplace_back("type", JsonValue::Array(std::move(scalar_types)));
  JsonSchemaResult r;
  try {
    r = JsonSchemaToGrammar(JsonValue::Object(std::move(members)), options_);
  } catch (const Error& e) {
    Fail(path, e.what());
  }
  for (auto& w : r.warnings) warnings_->push_back(path + ": " + w);
  return g_->AddRuleRef(ImportGrammar(g_, r.grammar, "gemma_scalar" + std::to_string(++imports_) + "_"));
}

ExprId GemmaArgumentLowering::Ref(const std::string& ref, const std::string& path) {
  std::string name;
  const JsonValue* target = nullptr;
  for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
    const std::string p = prefix;
    if (ref.compare(0, p.size(), p) != 0) continue;
    name = ref.substr(p.size());
    const JsonValue* defs = root_->is_object() ? root_->Find(p.substr(2, p.size() - 3)) : nullptr;
    if (defs && defs->is_object()) target = defs->Find(name);
  }
  if (!target) Fail(path + "/$ref", "'" + ref + "' does not name a schema under #/$defs or #/definitions");
  if (auto it = refs_.find(ref); it != refs_.end()) return g_->AddRuleRef(it->second);
  RuleId rule = g_->DeclareRule("gemma_ref_" + std::to_string(refs_.size()));
  refs_[ref] = rule;  // before lowering the target, so a recursive schema refers back to it
  g_->SetRuleBody(rule, Value(*target, path + "/$ref"));
  return g_->AddRuleRef(rule);
}

ExprId GemmaArgumentLowering::Literal(const JsonValue& v, const std::string& path) {
  return g_->AddBytes(Serialize(v, path));
}

// A const/enum value as the template writes it.
std::string GemmaArgumentLowering::Serialize(const JsonValue& v, const std::string& path) {
  if (v.is_string()) return delimiter_ + v.as_string() + delimiter_;
  if (v.is_bool()) return v.as_bool() ? "true" : "false";
  if (v.is_null()) return "null";
  if (v.is_number()) return v.number_literal();
  std::string out;
  if (v.is_array()) {
    out = "[";
    for (size_t i = 0; i < v.items().size(); ++i) out += (i ? "," : "") + Serialize(v.items()[i], path);
    return out + "]";
  }
  out = "{";
  bool first = true;
  for (const auto& [k, item] : DictSorted(v)) {
    if (!IsIdentifier(k)) Fail(path, "key '" + k + "' is not a bare identifier");
    out += (first ? "" : ",") + k + ":" + Serialize(*item, path);
    first = false;
  }
  return out + "}";
}

// Text up to and including the closing delimiter (a rule of its own, shared by every string).
ExprId GemmaArgumentLowering::RawText() {
  if (raw_text_ < 0) {
    TagDispatchSpec text;
    text.ends = {delimiter_};
    text.plain_end = false;
    raw_text_ = g_->DeclareRule("gemma_string_text");
    g_->SetRuleBody(raw_text_, g_->AddTagDispatch(std::move(text), {}));
  }
  return g_->AddRuleRef(raw_text_);
}

ExprId GemmaArgumentLowering::Identifier() {
  return g_->AddSequence(
      {g_->AddCharClass({{'a', 'z'}, {'A', 'Z'}, {'_', '_'}}, false),
       g_->AddRepeat(g_->AddCharClass({{'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {'_', '_'}}, false), 0, kUnbounded)});
}

// Any value (schema true / {}): strings, JSON numbers, literals, arrays and objects with
// identifier keys, recursively.
ExprId GemmaArgumentLowering::AnyValue() {
  if (any_value_ >= 0) return g_->AddRuleRef(any_value_);
  any_value_ = g_->DeclareRule("gemma_any_value");
  ExprId self = g_->AddRuleRef(any_value_);
  ExprId number = Scalar(JsonValue::Object({{"type", JsonValue::String("number")}}), path_);
  ExprId items = g_->AddRepeat(
      g_->AddSequence({self, g_->AddRepeat(g_->AddSequence({g_->AddBytes(","), self}), 0, kUnbounded)}), 0, 1);
  ExprId member = g_->AddSequence({Identifier(), g_->AddBytes(":"), self});
  ExprId members = g_->AddRepeat(
      g_->AddSequence({member, g_->AddRepeat(g_->AddSequence({g_->AddBytes(","), member}), 0, kUnbounded)}), 0, 1);
  g_->SetRuleBody(any_value_, g_->AddChoice({g_->AddSequence({g_->AddBytes(delimiter_), RawText()}), number,
                                             g_->AddBytes("true"), g_->AddBytes("false"), g_->AddBytes("null"),
                                             g_->AddSequence({g_->AddBytes("["), items, g_->AddBytes("]")}),
                                             g_->AddSequence({g_->AddBytes("{"), members, g_->AddBytes("}")})}));
  return self;
}

}  // namespace xg2
