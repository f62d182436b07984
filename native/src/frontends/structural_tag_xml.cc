#include "frontends/structural_tag_xml.h"

#include <cctype>
#include <set>

#include "frontends/json_schema_internal.h"
#include "frontends/regex.h"
#include "xg2/errors.h"

namespace xg2 {
namespace {

[[noreturn]] void Fail(const std::string& path, const std::string& reason) {
  throw Error(ErrorKind::kStructuralTag, path + ": " + reason);
}

// Keywords that only annotate a string schema (they do not constrain the value).
bool IsPlainString(const JsonValue& s) {
  static const std::set<std::string> kAnnotations = {"type",     "title",      "description", "default",  "examples",
                                                     "$comment", "deprecated", "readOnly",    "writeOnly"};
  const JsonValue* type = s.Find("type");
  if (!type || !type->is_string() || type->as_string() != "string") return false;
  for (const auto& [k, v] : s.members()) {
    if (!kAnnotations.count(k)) return false;
  }
  return true;
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

int64_t LengthBound(const JsonValue& s, const char* key, int64_t fallback, const std::string& path) {
  const JsonValue* v = s.Find(key);
  if (!v) return fallback;
  if (!v->is_number() || !v->is_integer() || v->as_number() < 0)
    Fail(path + "/" + key, "must be a non-negative integer");
  return static_cast<int64_t>(v->as_number());
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

// A schema whose values are numbers, booleans or null only (no string can occur in them).
bool ScalarOnly(const JsonValue& s) {
  const JsonValue* type = s.is_object() ? s.Find("type") : nullptr;
  if (!type || s.Find("$ref") || s.Find("anyOf") || s.Find("oneOf") || s.Find("allOf") || s.Find("enum") ||
      s.Find("const"))
    return false;
  std::vector<JsonValue> types = type->is_array() ? type->items() : std::vector<JsonValue>{*type};
  for (const JsonValue& t : types) {
    if (!t.is_string()) return false;
    const std::string& name = t.as_string();
    if (name != "integer" && name != "number" && name != "boolean" && name != "null") return false;
  }
  return true;
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
  if (schema.is_bool()) {
    if (!schema.as_bool()) Fail(path_, "the schema 'false' accepts no arguments");
    return g_->AddEmpty();
  }
  const JsonValue* type = schema.Find("type");
  const JsonValue* props = schema.Find("properties");
  if ((type && !(type->is_string() && type->as_string() == "object")) || (props && !props->is_object())) {
    Fail(path_, "XML argument styles need an object schema with 'properties'");
  }
  static const std::set<std::string> kHandled = {"type",    "properties",  "required", "additionalProperties",
                                                 "title",   "description", "$defs",    "definitions",
                                                 "$schema", "$id",         "$comment", "strict"};
  for (const auto& [k, v] : schema.members()) {
    if (!kHandled.count(k)) Fail(path_ + "/" + k, "keyword '" + k + "' is not supported for XML argument styles");
  }
  std::set<std::string> must;  // required names, each declared
  if (const JsonValue* req = schema.Find("required"); req && req->is_array()) {
    for (const auto& r : req->items()) {
      if (!r.is_string()) continue;
      if (!props || !props->Find(r.as_string())) {
        Fail(path_ + "/required", "required property '" + r.as_string() + "' is not declared in 'properties'");
      }
      must.insert(r.as_string());
    }
  }
  for (const std::string& e : excludes_) {
    if (std::isspace(static_cast<unsigned char>(e.front())) || std::isspace(static_cast<unsigned char>(e.back())))
      Fail(path_, "XML argument styles cannot exclude '" + e + "': it starts or ends with whitespace");
  }
  // Parameters in declaration order (optional ones may be left out) or, with any_order, in any
  // order (one AnyOrder node); required ones exactly once either way.
  std::vector<std::pair<ExprId, bool>> params;  // (parameter, required)
  if (props) {
    for (const auto& [name, prop] : props->members()) {
      if (Excluded(name)) {  // a name that cannot be written: only an optional parameter may go
        if (must.count(name))
          Fail(path_ + "/properties/" + JsonPointerEscape(name),
               "the required parameter name contains an excluded substring");
        continue;
      }
      params.emplace_back(Parameter(name, prop, schema), must.count(name) > 0);
    }
  }
  if (options_.any_order && params.size() > 1) {
    AnyOrderSpec spec;
    std::vector<ExprId> children{Whitespace()};
    for (bool required : {true, false}) {
      for (const auto& [p, req] : params) {
        if (req != required) continue;
        children.push_back(p);
        ++(required ? spec.num_required : spec.num_optional);
      }
    }
    return g_->AddSequence({Whitespace(), g_->AddAnyOrder(spec, std::move(children)), Whitespace()});
  }
  std::vector<ExprId> parts{Whitespace()};
  for (const auto& [p, required] : params) {
    ExprId item = g_->AddSequence({p, Whitespace()});
    parts.push_back(required ? item : g_->AddRepeat(item, 0, 1));
  }
  return g_->AddSequence(std::move(parts));
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

// The raw text of a string value that a pattern (JSON Schema search semantics), an asserted
// format or minLength/maxLength constrain, as the chat templates write strings: unquoted and
// unescaped. kNoExpr when nothing constrains it (a format that only annotates). The value then
// ends at the first end string that follows a complete match, so a pattern may spell the end.
ExprId XmlParameterLowering::ConstrainedText(const JsonValue& s, const std::string& path) {
  const JsonValue* pattern = s.Find("pattern");
  const JsonValue* format = s.Find("format");
  const int64_t lo = LengthBound(s, "minLength", 0, path);
  const int64_t hi = LengthBound(s, "maxLength", -1, path);
  if (hi >= 0 && hi < lo) Fail(path, "maxLength is below minLength: no string is allowed");
  ExprId text = kNoExpr;
  if (format) {
    if (!format->is_string()) Fail(path + "/format", "must be a string");
    if (jsonschema::IsAssertedFormat(format->as_string())) {
      text = jsonschema::FormatDecodedExpr(g_, format->as_string());
      if (text == kNoExpr) Fail(path + "/format", "format '" + format->as_string() + "' is not enforced");
    }
  }
  if (pattern) {
    if (!pattern->is_string()) Fail(path + "/pattern", "must be a string");
    if (text != kNoExpr) Fail(path, "'pattern' with an asserted 'format' is not supported for XML argument styles");
    RegexOptions options;
    options.search_semantics = true;
    try {
      text = RegexToExpr(g_, pattern->as_string(), options);
    } catch (const Error& e) {
      Fail(path + "/pattern", e.what());
    }
  }
  const bool bounded = lo > 0 || hi >= 0;
  if (text != kNoExpr || bounded) {
    if (!excludes_.empty())
      Fail(path, "excluded substrings cannot be enforced on a string with a pattern, format or length bound");
  }
  if (text == kNoExpr) {
    if (!bounded) return kNoExpr;
    return g_->AddRepeat(g_->AddCharClass({}, /*negated=*/true), lo, hi < 0 ? kUnbounded : hi);
  }
  if (bounded) {  // kept only where the pattern's or format's own lengths already satisfy them
    int64_t min_len = 0, max_len = -1;
    if (!jsonschema::CodepointLengthRange(*g_, text, &min_len, &max_len) || min_len < lo ||
        (hi >= 0 && (max_len < 0 || max_len > hi)))
      Fail(path, "minLength/maxLength together with a pattern or format cannot be enforced for XML argument styles");
  }
  return text;
}

ExprId XmlParameterLowering::JsonValueOf(const JsonValue& prop, const JsonValue& root, const std::string& path) {
  // The property's schema with the root's definitions, so its $refs still resolve.
  std::vector<std::pair<std::string, JsonValue>> members;
  if (prop.is_object())
    members = prop.members();
  else if (prop.is_bool() && !prop.as_bool())
    members.emplace_back("not", JsonValue::Object({}));
  for (const char* defs : {"$defs", "definitions"}) {
    if (const JsonValue* d = root.Find(defs); d && (!prop.is_object() || !prop.Find(defs)))
      members.emplace_back(defs, *d);
  }
  JsonSchemaResult r;
  try {
    r = JsonSchemaToGrammar(JsonValue::Object(std::move(members)), options_);
  } catch (const Error& e) {
    Fail(path, e.what());
  }
  for (auto& w : r.warnings) warnings_->push_back(path + ": " + w);
  return g_->AddRuleRef(ImportGrammar(g_, r.grammar, "arg" + std::to_string(++imports_) + "_"));
}

ExprId XmlParameterLowering::Parameter(const std::string& name, const JsonValue& prop, const JsonValue& root) {
  const std::string path = path_ + "/properties/" + JsonPointerEscape(name);
  std::vector<std::string> choices;
  const bool plain = prop.is_object() && IsPlainString(prop);
  const bool fixed = prop.is_object() && StringChoices(prop, &choices);
  const bool constrained = prop.is_object() && !plain && IsConstrainedString(prop);
  const bool is_string = plain || fixed || constrained;
  std::string begin, end;
  switch (style_) {
    case XmlStyle::kQwen:
      begin = "<parameter=" + name + ">";
      end = "</parameter>";
      break;
    case XmlStyle::kMiniMax:
      begin = "<parameter name=\"" + name + "\">";
      end = "</parameter>";
      break;
    case XmlStyle::kDeepSeek:
      begin =
          "<\xEF\xBD\x9C"
          "DSML\xEF\xBD\x9C"
          "parameter name=\"" +
          name + "\" string=\"" + (is_string ? "true" : "false") + "\">";
      end =
          "</\xEF\xBD\x9C"
          "DSML\xEF\xBD\x9C"
          "parameter>";
      break;
    case XmlStyle::kDeepSeekV41:  // DeepSeek-V4.1: a space after the DSML marker
      begin =
          "<\xEF\xBD\x9C"
          "DSML\xEF\xBD\x9C"
          " parameter name=\"" +
          name + "\" string=\"" + (is_string ? "true" : "false") + "\">";
      end =
          "</\xEF\xBD\x9C"
          "DSML\xEF\xBD\x9C"
          " parameter>";
      break;
    case XmlStyle::kGlm:
      begin = "<arg_key>" + name + "</arg_key>";
      end = "</arg_value>";
      break;
    case XmlStyle::kKimiK3:
      begin = "<|open|>argument key=\"" + KimiK3Attribute(name) + "\" type=\"" +
              (is_string ? std::string("string") : KimiK3Type(prop, path)) + "\"<|sep|>";
      end = "<|close|>argument<|sep|>";
      break;
  }
  std::vector<ExprId> seq{g_->AddBytes(begin)};
  if (style_ == XmlStyle::kGlm) {
    seq.push_back(Whitespace());
    seq.push_back(g_->AddBytes("<arg_value>"));
  }
  if (plain) {
    seq.push_back(RawTextUntil(end));
    return g_->AddSequence(std::move(seq));
  }
  if (constrained) {
    ExprId text = ConstrainedText(prop, path);
    // As with enum strings, a newline may come on each side (Qwen's template writes them; the
    // output parser strips one); DSML's string="true" values are the text between the tags.
    const bool padded = style_ != XmlStyle::kDeepSeek && style_ != XmlStyle::kDeepSeekV41;
    ExprId pad = padded ? g_->AddRepeat(g_->AddBytes("\n"), 0, 1) : g_->AddEmpty();
    seq.push_back(text == kNoExpr ? RawTextUntil(end) : g_->AddSequence({pad, text, pad, g_->AddBytes(end)}));
    return g_->AddSequence(std::move(seq));
  }
  if (fixed) {
    std::vector<ExprId> alts;
    for (const auto& c : choices) {
      if (!Excluded(c)) alts.push_back(c.empty() ? g_->AddEmpty() : g_->AddBytes(c));
    }
    if (alts.empty()) Fail(path, "every value contains an excluded substring");
    // Qwen's template puts the value on its own line.
    ExprId nl = g_->AddRepeat(g_->AddBytes("\n"), 0, 1);
    seq.push_back(nl);
    seq.push_back(g_->AddChoice(std::move(alts)));
    seq.push_back(g_->AddRepeat(g_->AddBytes("\n"), 0, 1));
  } else {
    if (!excludes_.empty() && !ScalarOnly(prop))
      Fail(path, "excluded substrings cannot reach a JSON-valued argument that may hold strings");
    seq.push_back(Whitespace());
    seq.push_back(JsonValueOf(prop, root, path));
    seq.push_back(Whitespace());
  }
  seq.push_back(g_->AddBytes(end));
  return g_->AddSequence(std::move(seq));
}

}  // namespace xg2
