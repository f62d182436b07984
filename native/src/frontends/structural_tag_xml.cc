#include "frontends/structural_tag_xml.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <set>

#include "automata/byte_dfa_ops.h"
#include "frontends/json_schema_converter.h"
#include "frontends/json_schema_internal.h"
#include "frontends/structural_tag_args.h"
#include "frontends/structural_tag_keys.h"
#include "frontends/structural_tag_roots.h"
#include "xg2/errors.h"

namespace xg2 {
namespace {

[[noreturn]] void Fail(const std::string& path, const std::string& reason) {
  throw Error(ErrorKind::kStructuralTag, path + ": " + reason);
}

// "type" and the keywords that only annotate a value's schema (they do not constrain it).
const std::set<std::string>& TypeAndAnnotations() {
  static const std::set<std::string> k = {"type",     "title",      "description", "default",  "examples",
                                          "$comment", "deprecated", "readOnly",    "writeOnly"};
  return k;
}

bool IsIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool OnlyTypeAndAnnotations(const JsonValue& s) {
  for (const auto& [k, v] : s.members()) {
    if (!TypeAndAnnotations().count(k)) return false;
  }
  return true;
}

// A string schema that nothing but annotations accompanies.
bool IsPlainString(const JsonValue& s) {
  const JsonValue* type = s.Find("type");
  return type && type->is_string() && type->as_string() == "string" && OnlyTypeAndAnnotations(s);
}

// A string schema whose raw text a pattern, a format or length bounds constrain (besides
// annotations, nothing else).
bool IsConstrainedString(const JsonValue& s) {
  static const std::set<std::string> kKeys = {"type",     "title",      "description", "default",   "examples",
                                              "$comment", "deprecated", "readOnly",    "writeOnly", "pattern",
                                              "format",   "minLength",  "maxLength"};
  const JsonValue* type = s.Find("type");
  if (!type || !type->is_string() || type->as_string() != "string") return false;
  for (const auto& [k, v] : s.members()) {
    if (!kKeys.count(k)) return false;
  }
  return s.Find("pattern") || s.Find("format") || s.Find("minLength") || s.Find("maxLength");
}

// A string schema whose values are a fixed list (enum / const of strings only).
bool StringChoices(const JsonValue& s, std::vector<std::string>* out) {
  const JsonValue* type = s.Find("type");
  if (type && !(type->is_string() && type->as_string() == "string")) return false;
  const JsonValue* e = s.Find("enum");
  const JsonValue* c = s.Find("const");
  if (c) {
    if (!c->is_string()) return false;
    out->push_back(c->as_string());
    return true;
  }
  if (!e || !e->is_array() || e->items().empty()) return false;
  for (const auto& v : e->items()) {
    if (!v.is_string()) return false;
    out->push_back(v.as_string());
  }
  return true;
}

// A string schema the XML styles write raw: plain, enumerated, or constrained by a pattern,
// format or length bounds.
bool IsStringSchema(const JsonValue& s) {
  std::vector<std::string> choices;
  return s.is_object() && (IsPlainString(s) || StringChoices(s, &choices) || IsConstrainedString(s));
}

// Where JsonValueOf puts the tool's root schema when a value refers to it.
const char kRootDef[] = "__xg2_tool_root";

// `s` with each $ref into the root document other than #/$defs/... and #/definitions/...
// ("#", "#/properties/x") pointed at the root's copy under $defs/kRootDef; *any: one was.
// Literal values (enum, const, default, examples) are left as they are.
JsonValue RerootRefs(const JsonValue& s, bool* any) {
  if (s.is_array()) {
    std::vector<JsonValue> items;
    for (const JsonValue& v : s.items()) items.push_back(RerootRefs(v, any));
    return JsonValue::Array(std::move(items));
  }
  if (!s.is_object()) return s;
  std::vector<std::pair<std::string, JsonValue>> members;
  for (const auto& [k, v] : s.members()) {
    if (k == "$ref" && v.is_string() && !v.as_string().empty() && v.as_string()[0] == '#' &&
        v.as_string().rfind("#/$defs/", 0) != 0 && v.as_string().rfind("#/definitions/", 0) != 0) {
      *any = true;
      members.emplace_back(k, JsonValue::String("#/$defs/" + std::string(kRootDef) + v.as_string().substr(1)));
    } else if (k == "enum" || k == "const" || k == "default" || k == "examples") {
      members.emplace_back(k, v);
    } else {
      members.emplace_back(k, RerootRefs(v, any));
    }
  }
  return JsonValue::Object(std::move(members));
}

// Kimi-K3 escapes attribute values: & -> &amp;, " -> &quot;.
std::string KimiK3Attribute(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out.push_back(c);
  }
  return out;
}

// The type attributes a Kimi-K3 value without one pinned type may carry, each with the schema
// of its value: every JSON type (and "integer") for an untyped value, the listed ones for a
// list of types. False when the property pins one type or constrains its value otherwise.
bool KimiK3TypeChoices(const JsonValue& prop, std::vector<std::pair<std::string, JsonValue>>* out) {
  static const std::vector<std::string> kAll = {"string", "integer", "number", "boolean", "null", "object", "array"};
  std::vector<std::string> types;
  if (prop.is_bool()) {
    if (!prop.as_bool()) return false;
    types = kAll;
  } else {
    if (!OnlyTypeAndAnnotations(prop)) return false;
    const JsonValue* type = prop.Find("type");
    if (!type) {
      types = kAll;
    } else if (type->is_array()) {
      for (const auto& t : type->items()) {
        if (t.is_string() && std::find(kAll.begin(), kAll.end(), t.as_string()) != kAll.end())
          types.push_back(t.as_string());
      }
      if (types.size() != type->items().size()) return false;
    } else {
      return false;
    }
  }
  for (const std::string& t : types) out->emplace_back(t, JsonValue::Object({{"type", JsonValue::String(t)}}));
  return !out->empty();
}

bool NamesOneType(const JsonValue& prop) {
  const JsonValue* type = prop.is_object() ? prop.Find("type") : nullptr;
  return type && type->is_string();
}

// The Kimi-K3 type attribute every value of a JSON leaf (CollectValueKinds) is written with,
// or "" where its values may have several: one "type", or literals of one JSON type.
std::string KimiK3LeafType(const JsonValue& leaf) {
  if (leaf.Find("$ref")) return leaf.Find("$ref")->is_string() && leaf.Find("$ref")->as_string() == "#" ? "object" : "";
  const JsonValue* type = leaf.Find("type");
  if (type && type->is_array() && type->items().size() == 1) type = &type->items()[0];
  std::string out;
  if (type && type->is_string()) out = type->as_string() == "integer" ? "number" : type->as_string();
  for (const char* key : {"const", "enum"}) {
    const JsonValue* v = leaf.Find(key);
    if (!v || (key[0] == 'e' && !v->is_array())) continue;
    for (const JsonValue& value : key[0] == 'c' ? std::vector<JsonValue>{*v} : v->items()) {
      const std::string t = value.is_number()  ? "number"
                            : value.is_bool()  ? "boolean"
                            : value.is_null()  ? "null"
                            : value.is_array() ? "array"
                                               : "object";
      if (!out.empty() && out != t) return "";
      out = t;
    }
  }
  return out;
}

// Kimi-K3's type attribute of a non-string value: its renderer names the JSON type of the
// value, every number "number". The property must pin one type.
std::string KimiK3Type(const JsonValue& prop, const std::string& path) {
  const JsonValue* type = prop.is_object() ? prop.Find("type") : nullptr;
  if (!type || !type->is_string())
    Fail(path, "the kimi_k3_xml style needs one 'type' per property (its type attribute names it)");
  const std::string& t = type->as_string();
  if (t == "integer" || t == "number") return "number";
  if (t == "boolean" || t == "null" || t == "object" || t == "array" || t == "string") return t;
  Fail(path + "/type", "unknown type '" + t + "'");
}

}  // namespace

bool ParseXmlStyle(const std::string& name, XmlStyle* style) {
  if (name == "qwen_xml")
    *style = XmlStyle::kQwen;
  else if (name == "minimax_xml")
    *style = XmlStyle::kMiniMax;
  else if (name == "deepseek_xml")
    *style = XmlStyle::kDeepSeek;
  else if (name == "deepseek_v4_1_xml")
    *style = XmlStyle::kDeepSeekV41;
  else if (name == "glm_xml")
    *style = XmlStyle::kGlm;
  else if (name == "kimi_k3_xml")
    *style = XmlStyle::kKimiK3;
  else
    return false;
  return true;
}

ExprId XmlParameterLowering::Whitespace() {
  return g_->AddRepeat(g_->AddCharClass({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}}, false), 0,
                       options_.max_whitespace_cnt < 0 ? kUnbounded : options_.max_whitespace_cnt);
}

bool XmlParameterLowering::Excluded(const std::string& text) const {
  for (const std::string& e : excludes_) {
    if (text.find(e) != std::string::npos) return true;
  }
  return false;
}

ExprId XmlParameterLowering::Lower(const JsonValue& schema) {
  root_ = &schema;
  if (!IsArgumentUnion(schema)) return ParameterList(schema, path_);
  // A union at the root: one parameter list per object schema it allows (that can be written).
  std::vector<std::function<ExprId()>> alts;
  for (const ArgumentAlternative& alt : ArgumentAlternatives(schema, path_, options_, "XML argument styles"))
    alts.push_back([this, alt] { return ParameterList(alt.schema, alt.path); });
  return WritableChoice(alts);
}

ExprId XmlParameterLowering::WritableChoice(const std::vector<std::function<ExprId()>>& alternatives) {
  std::vector<ExprId> alts;
  std::string first_failure;
  for (const auto& build : alternatives) {
    try {
      alts.push_back(build());
    } catch (const UnwritableValue& e) {
      if (first_failure.empty()) first_failure = e.what();
    }
  }
  if (alts.empty()) throw UnwritableValue(first_failure);
  return alts.size() == 1 ? alts[0] : g_->AddChoice(std::move(alts));
}

ExprId XmlParameterLowering::ParameterList(const JsonValue& schema, const std::string& path) {
  if (schema.is_bool()) {
    if (!schema.as_bool()) Fail(path, "the schema 'false' accepts no arguments");
    // Unconstrained arguments (xgrammar's tools without parameters): any parameters.
    return ParameterList(
        JsonValue::Object({{"type", JsonValue::String("object")}, {"additionalProperties", JsonValue::Bool(true)}}),
        path);
  }
  const JsonValue* type = schema.Find("type");
  const JsonValue* props = schema.Find("properties");
  if ((type && !(type->is_string() && type->as_string() == "object")) || (props && !props->is_object())) {
    Fail(path, "XML argument styles need an object schema with 'properties'");
  }
  static const std::set<std::string> kHandled = {"type",
                                                 "properties",
                                                 "required",
                                                 "additionalProperties",
                                                 "unevaluatedProperties",
                                                 "patternProperties",
                                                 "propertyNames",
                                                 "minProperties",
                                                 "maxProperties",
                                                 "title",
                                                 "description",
                                                 "$defs",
                                                 "definitions",
                                                 "$schema",
                                                 "$id",
                                                 "$comment",
                                                 "strict"};
  for (const auto& [k, v] : schema.members()) {
    if (!kHandled.count(k)) Fail(path + "/" + k, "keyword '" + k + "' is not supported for XML argument styles");
  }
  std::set<std::string> must;  // required names, each declared
  if (const JsonValue* req = schema.Find("required"); req && req->is_array()) {
    for (const auto& r : req->items()) {
      if (!r.is_string()) continue;
      if (!props || !props->Find(r.as_string())) {
        Fail(path + "/required", "required property '" + r.as_string() + "' is not declared in 'properties'");
      }
      must.insert(r.as_string());
    }
  }
  for (const std::string& e : excludes_) {
    if (std::isspace(static_cast<unsigned char>(e.front())) || std::isspace(static_cast<unsigned char>(e.back())))
      Fail(path, "XML argument styles cannot exclude '" + e +
                     "': an excluded substring must not start or end with formatting whitespace");
  }
  const ObjectKeys keys(schema, path, "XML argument styles");
  // Parameters in declaration order (optional ones may be left out) or, with any_order, in any
  // order (one AnyOrder node); required ones exactly once either way.
  std::vector<std::pair<ExprId, bool>> params;  // (parameter, required)
  if (props) {
    for (const auto& [name, prop] : props->members()) {
      const std::string p = path + "/properties/" + JsonPointerEscape(name);
      const bool allowed = keys.Admits(name, prop, p);
      // A name that cannot be written (its text as the style writes it holds an excluded
      // substring), or whose every value is excluded: only an optional parameter may go.
      if (!allowed && must.count(name)) Fail(p, "the required parameter name does not satisfy propertyNames");
      if (Excluded(EmittedName(name)) && must.count(name))
        throw UnwritableValue(p + ": the required parameter name contains an excluded substring");
      if (!allowed || Excluded(EmittedName(name))) continue;
      try {
        params.emplace_back(Parameter(name, prop, path), must.count(name) > 0);
      } catch (const UnwritableValue&) {
        if (must.count(name)) throw;
      }
    }
  }
  const ExprId extra = ExtraParameters(schema, keys);
  const ParameterCount count = ParameterCountOf(schema, path);
  if (options_.any_order && (params.size() > 1 || (extra != kNoExpr && !params.empty()))) {
    AnyOrderSpec spec;
    spec.min_count = count.min;
    spec.max_count = count.max;
    std::vector<ExprId> children{Whitespace()};
    for (bool required : {true, false}) {
      for (const auto& [p, req] : params) {
        if (req != required) continue;
        children.push_back(p);
        ++(required ? spec.num_required : spec.num_optional);
      }
    }
    if (extra != kNoExpr) {
      children.push_back(extra);
      spec.num_repeated = 1;
    }
    return g_->AddSequence({Whitespace(), g_->AddAnyOrder(spec, std::move(children)), Whitespace()});
  }
  if (count.min > 0 || count.max >= 0) return CountedParameters(params, extra, count, path);
  std::vector<ExprId> parts{Whitespace()};
  for (const auto& [p, required] : params) {
    ExprId item = g_->AddSequence({p, Whitespace()});
    parts.push_back(required ? item : g_->AddRepeat(item, 0, 1));
  }
  // Parameters the schema does not name come after the declared ones (as xgrammar orders
  // them; any_order mixes them in).
  if (extra != kNoExpr) parts.push_back(g_->AddRepeat(g_->AddSequence({extra, Whitespace()}), 0, kUnbounded));
  return g_->AddSequence(std::move(parts));
}

XmlParameterLowering::ParameterCount XmlParameterLowering::ParameterCountOf(const JsonValue& schema,
                                                                            const std::string& path) const {
  ParameterCount count;
  for (const char* key : {"minProperties", "maxProperties"}) {
    const JsonValue* v = schema.Find(key);
    if (!v) continue;
    if (!v->is_number() || !v->is_integer() || v->as_number() < 0)
      Fail(path + "/" + key, std::string("'") + key + "' must be a non-negative integer");
    const int64_t n = v->as_number() > 4e18 ? int64_t(4e18) : static_cast<int64_t>(v->as_number());
    (key[1] == 'i' ? count.min : count.max) = n;
  }
  return count;
}

// The declared parameters in order with min/maxProperties: after parameter i with c written,
// Tail(i, c) = p_i Tail(i + 1, c + 1) | Tail(i + 1, c) (the second for an optional p_i), and
// the undeclared parameters last, as many as the bounds leave. Counts at or above the minimum
// are one state when there is no maximum, so at most n * (min + 1) tails.
ExprId XmlParameterLowering::CountedParameters(const std::vector<std::pair<ExprId, bool>>& params, ExprId extra,
                                               const ParameterCount& count, const std::string& path) {
  const int64_t n = static_cast<int64_t>(params.size());
  const int64_t cap = count.max >= 0 ? count.max + 1 : count.min;  // counts above cap are one state
  auto never = [&] { return g_->AddChoice({}); };
  auto tail_of_extras = [&](int64_t c) {
    const int64_t lo = std::max<int64_t>(0, count.min - c);
    if (extra == kNoExpr) return lo == 0 ? g_->AddEmpty() : never();
    return g_->AddRepeat(g_->AddSequence({extra, Whitespace()}), lo, count.max >= 0 ? count.max - c : kUnbounded);
  };
  std::map<std::pair<int64_t, int64_t>, ExprId> memo;
  std::function<ExprId(int64_t, int64_t)> tail = [&](int64_t i, int64_t c) -> ExprId {
    c = std::min(c, cap);
    if (count.max >= 0 && c > count.max) return never();
    auto it = memo.find({i, c});
    if (it != memo.end()) return it->second;
    ExprId out;
    if (i == n) {
      out = tail_of_extras(c);
    } else {
      const auto& [p, required] = params[static_cast<size_t>(i)];
      std::vector<ExprId> alts{g_->AddSequence({p, Whitespace(), tail(i + 1, c + 1)})};
      if (!required) alts.push_back(tail(i + 1, c));
      // A rule per tail: tails are shared, and an expression shared this way would be copied
      // once per path into the rule's automaton.
      RuleId r = g_->DeclareRule("parameters_tail");
      g_->SetRuleBody(r, alts.size() == 1 ? alts[0] : g_->AddChoice(std::move(alts)));
      out = g_->AddRuleRef(r);
    }
    return memo[{i, c}] = out;
  };
  int64_t nreq = 0;
  for (const auto& pr : params) nreq += pr.second;
  if ((extra == kNoExpr && count.min > n) || (count.max >= 0 && (count.max < nreq || count.max < count.min)))
    Fail(path, "no parameters satisfy minProperties/maxProperties with the declared required parameters");
  return g_->AddSequence({Whitespace(), tail(0, 0)});
}

// Parameters the schema does not declare (additionalProperties, patternProperties): an
// identifier name other than the declared ones, within propertyNames, and a value of the
// schema its region takes; kNoExpr when the schema allows none (additionalProperties absent
// beside declared properties, or false: the strict default).
ExprId XmlParameterLowering::ExtraParameters(const JsonValue& schema, const ObjectKeys& keys) {
  std::vector<std::string> declared;
  if (const JsonValue* props = schema.Find("properties")) {
    for (const auto& [name, prop] : props->members()) declared.push_back(name);
  }
  Grammar scratch;
  const ByteDfaSpec identifier = ByteDfaOfExpr(
      scratch,
      scratch.AddSequence(
          {scratch.AddCharClass({{'A', 'Z'}, {'_', '_'}, {'a', 'z'}}, false),
           scratch.AddRepeat(scratch.AddCharClass({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}, false), 0,
                             kUnbounded)}),
      jsonschema::kMaxPatternDfaStates);
  std::vector<ExprId> alts;
  for (auto& region : keys.FreeRegions(declared, &identifier)) {
    // A name is an identifier: only an excluded string of identifier characters can occur in one.
    for (const std::string& e : excludes_) {
      if (std::all_of(e.begin(), e.end(), IsIdentifierChar))
        Fail(region.path, "excluded substring '" + e + "' cannot be enforced on parameter names a schema does not fix");
    }
    const JsonValue value = region.schema ? *region.schema : JsonValue::Object({});
    alts.push_back(NamedParameter(g_->AddByteDfa(std::move(region.keys)), region.path, value, *root_));
  }
  if (alts.empty()) return kNoExpr;
  return alts.size() == 1 ? alts[0] : g_->AddChoice(std::move(alts));
}

// Raw text up to (and with) the first `end` string.
ExprId XmlParameterLowering::RawTextUntil(const std::string& end) {
  TagDispatchSpec text;
  text.ends = {end};
  text.excludes = excludes_;
  text.plain_end = false;
  // A rule of its own: identical ones (every string parameter) merge into one, whose masks
  // are then built once.
  RuleId r = g_->DeclareRule("raw_text_value");
  g_->SetRuleBody(r, g_->AddTagDispatch(std::move(text), {}));
  return g_->AddRuleRef(r);
}

ExprId XmlParameterLowering::JsonValueOf(const JsonValue& prop, const JsonValue& root, const std::string& path) {
  // The property's schema with the root's definitions, so its $refs still resolve. A $ref to
  // the root itself ("#", "#/properties/...") would name the property's own schema there: it
  // is pointed at a copy of the root under $defs instead.
  const JsonValue value =
      prop.is_bool() && !prop.as_bool() ? JsonValue::Object({{"not", JsonValue::Object({})}}) : prop;
  bool to_root = false;
  const JsonValue lifted = RerootRefs(value, &to_root);
  std::vector<std::pair<std::string, JsonValue>> members;
  if (lifted.is_object()) members = lifted.members();
  bool has_defs = false;
  for (const char* defs : {"$defs", "definitions"}) {
    const JsonValue* d = root.Find(defs);
    if (!d || (lifted.is_object() && lifted.Find(defs))) continue;
    std::vector<std::pair<std::string, JsonValue>> entries;
    if (d->is_object()) entries = d->members();
    if (defs[0] == '$' && to_root) {
      bool unused = false;
      entries.emplace_back(kRootDef, RerootRefs(root, &unused));
      has_defs = true;
    }
    members.emplace_back(defs, d->is_object() ? JsonValue::Object(std::move(entries)) : *d);
  }
  if (to_root && !has_defs) {
    if (lifted.is_object() && lifted.Find("$defs"))
      Fail(path, "a $ref to the root schema beside the value's own $defs is not supported");
    bool unused = false;
    members.emplace_back("$defs", JsonValue::Object({{kRootDef, RerootRefs(root, &unused)}}));
  }
  JsonSchemaResult r;
  try {
    JsonSchemaOptions o = options_;
    o.excludes = excludes_;           // every string and key of the JSON value (exact, see json_schema_excludes.cc)
    o.refuse_empty_language = false;  // one argument value: an optional one may be left out
    r = JsonSchemaToGrammar(JsonValue::Object(std::move(members)), o);
  } catch (const Error& e) {
    Fail(path, e.what());
  }
  for (auto& w : r.warnings) warnings_->push_back(path + ": " + w);
  return g_->AddRuleRef(ImportGrammar(g_, r.grammar, "arg" + std::to_string(++imports_) + "_"));
}

std::string XmlParameterLowering::EmittedName(const std::string& name) const {
  return style_ == XmlStyle::kKimiK3 ? KimiK3Attribute(name) : name;
}

ExprId XmlParameterLowering::Parameter(const std::string& name, const JsonValue& prop, const std::string& path) {
  const std::string key = EmittedName(name);
  return NamedParameter(key.empty() ? g_->AddEmpty() : g_->AddBytes(key),
                        path + "/properties/" + JsonPointerEscape(name), prop, *root_);
}

// One parameter: `name` (the name's expression as written) and its value, in the style's
// wrapper.
ExprId XmlParameterLowering::NamedParameter(ExprId name, const std::string& path, const JsonValue& prop,
                                            const JsonValue& root, const std::string& kimi_type) {
  std::vector<std::pair<std::string, JsonValue>> typed;
  if (style_ == XmlStyle::kKimiK3 && kimi_type.empty() && KimiK3TypeChoices(prop, &typed)) {
    // One alternative per type attribute, the value of that type.
    std::vector<ExprId> alts;
    for (const auto& [attr, schema] : typed) alts.push_back(NamedParameter(name, path, schema, root, attr));
    return alts.size() == 1 ? alts[0] : g_->AddChoice(std::move(alts));
  }
  std::string before, after, end;  // begin = before name after
  switch (style_) {
    case XmlStyle::kQwen:
      before = "<parameter=";
      after = ">";
      end = "</parameter>";
      break;
    case XmlStyle::kMiniMax:
      before = "<parameter name=\"";
      after = "\">";
      end = "</parameter>";
      break;
    case XmlStyle::kDeepSeek:
    case XmlStyle::kDeepSeekV41: {
      // DeepSeek-V4.1 writes a space after the DSML marker.
      const std::string dsml = std::string(
                                   "\xEF\xBD\x9C"
                                   "DSML\xEF\xBD\x9C") +
                               (style_ == XmlStyle::kDeepSeekV41 ? " " : "");
      end = "</" + dsml + "parameter>";
      return g_->AddSequence({g_->AddBytes("<" + dsml + "parameter name=\""), name, DsmlValue(prop, root, path, end)});
    }
    case XmlStyle::kGlm:
      before = "<arg_key>";
      after = "</arg_key>";
      end = "</arg_value>";
      break;
    case XmlStyle::kKimiK3:
      if (kimi_type.empty() && !IsStringSchema(prop) && !NamesOneType(prop)) {
        const ExprId split = KimiK3SplitValue(name, path, prop, root);
        if (split != kNoExpr) return split;
      }
      before = "<|open|>argument key=\"";
      after = "\" type=\"" +
              (!kimi_type.empty()     ? kimi_type
               : IsStringSchema(prop) ? std::string("string")
                                      : KimiK3Type(prop, path)) +
              "\"<|sep|>";
      end = "<|close|>argument<|sep|>";
      break;
  }
  std::vector<ExprId> seq{g_->AddBytes(before), name, g_->AddBytes(after)};
  if (style_ == XmlStyle::kGlm) {
    seq.push_back(Whitespace());
    seq.push_back(g_->AddBytes("<arg_value>"));
  }
  if (IsStringSchema(prop)) {
    seq.push_back(StringValue(prop, path, end, true));
    return g_->AddSequence(std::move(seq));
  }
  if (style_ != XmlStyle::kKimiK3) {  // Kimi-K3's type attribute names one type per value
    seq.push_back(RawOrJsonValue(prop, root, path, end));
    return g_->AddSequence(std::move(seq));
  }
  seq.push_back(Whitespace());
  seq.push_back(JsonValueOf(prop, root, path));
  seq.push_back(Whitespace());
  seq.push_back(g_->AddBytes(end));
  return g_->AddSequence(std::move(seq));
}

// The leaves of the value's union (anyOf, $ref, enums, ...; see CollectValueKinds): a string
// leaf is written raw under type="string", a JSON leaf under the one type its values have.
ExprId XmlParameterLowering::KimiK3SplitValue(ExprId name, const std::string& path, const JsonValue& prop,
                                              const JsonValue& root) {
  ValueKinds leaves;
  CollectValueKinds(prop, root, path, &leaves);
  std::vector<std::function<ExprId()>> alts;
  for (const auto& [leaf, leaf_path] : leaves.strings) {
    alts.push_back(
        [&, leaf = leaf, leaf_path = leaf_path] { return NamedParameter(name, leaf_path, leaf, root, "string"); });
  }
  for (const JsonValue& leaf : leaves.json) {
    const std::string type = KimiK3LeafType(leaf);
    if (type.empty()) return kNoExpr;
    alts.push_back([&, type] { return NamedParameter(name, path, leaf, root, type); });
  }
  if (alts.empty()) return kNoExpr;
  return WritableChoice(alts);
}

ExprId XmlParameterLowering::StringValue(const JsonValue& s, const std::string& path, const std::string& end,
                                         bool padded) {
  std::vector<std::string> choices;
  if (IsPlainString(s)) return RawTextUntil(end);
  if (!StringChoices(s, &choices)) {
    ExprId text = RawStringText(g_, s, path, excludes_, "XML argument styles");
    if (text == kNoExpr) return RawTextUntil(end);
    ExprId pad = padded ? g_->AddRepeat(g_->AddBytes("\n"), 0, 1) : g_->AddEmpty();
    return g_->AddSequence({pad, text, pad, g_->AddBytes(end)});
  }
  std::vector<ExprId> alts;
  for (const auto& c : choices) {
    if (!Excluded(c)) alts.push_back(c.empty() ? g_->AddEmpty() : g_->AddBytes(c));
  }
  if (alts.empty()) throw UnwritableValue(path + ": every value contains an excluded substring");
  ExprId pad = padded ? g_->AddRepeat(g_->AddBytes("\n"), 0, 1) : g_->AddEmpty();
  return g_->AddSequence({pad, g_->AddChoice(std::move(alts)), pad, g_->AddBytes(end)});
}

}  // namespace xg2
