#include "frontends/structural_tag_xml.h"

#include <cctype>
#include <set>

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
      Fail(path_, "XML argument styles cannot exclude '" + e +
                      "': an excluded substring must not start or end with formatting whitespace");
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
    JsonSchemaOptions o = options_;
    o.excludes = excludes_;  // every string and key of the JSON value (exact, see json_schema_excludes.cc)
    r = JsonSchemaToGrammar(JsonValue::Object(std::move(members)), o);
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
  const bool is_string = plain || fixed;
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
  if (plain) {  // raw text up to the first end string
    TagDispatchSpec text;
    text.ends = {end};
    text.excludes = excludes_;
    text.plain_end = false;
    // A rule of its own: identical ones (every string parameter) merge into one, whose masks
    // are then built once.
    RuleId r = g_->DeclareRule("raw_text_value");
    g_->SetRuleBody(r, g_->AddTagDispatch(std::move(text), {}));
    seq.push_back(g_->AddRuleRef(r));
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
    seq.push_back(Whitespace());
    seq.push_back(JsonValueOf(prop, root, path));
    seq.push_back(Whitespace());
  }
  seq.push_back(g_->AddBytes(end));
  return g_->AddSequence(std::move(seq));
}

}  // namespace xg2
