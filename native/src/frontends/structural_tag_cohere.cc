#include "frontends/structural_tag_cohere.h"

namespace xg2 {
namespace {

constexpr const char* kValueEnd = "</cofl:value>";

std::string XmlAttribute(const std::string& value) {
  std::string out;
  for (char c : value) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

}  // namespace

ExprId CohereArgumentLowering::Open(const std::string* name, const char* type) {
  std::string tag = "<cofl:value";
  if (name) tag += " name=\"" + XmlAttribute(*name) + "\"";
  return g_->AddBytes(tag + " type=\"" + type + "\">");
}

ExprId CohereArgumentLowering::Close() { return g_->AddBytes(kValueEnd); }

// Between nodes: optional whitespace (the template writes none; pretty-printed output has
// newlines and indentation).
ExprId CohereArgumentLowering::ItemSeparator() {
  return g_->AddRepeat(g_->AddCharClass({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}}, false), 0,
                       options_.max_whitespace_cnt < 0 ? kUnbounded : options_.max_whitespace_cnt);
}

ExprId CohereArgumentLowering::Arguments(std::vector<Member> members, ExprId extra) {
  return g_->AddSequence({ItemSeparator(), JoinMembers(members, extra, ItemSeparator()), ItemSeparator()});
}

ExprId CohereArgumentLowering::Object(std::vector<Member> members, ExprId extra, const std::string* name) {
  return g_->AddSequence({Open(name, "dict"), Arguments(std::move(members), extra), Close()});
}

ExprId CohereArgumentLowering::Array(ExprId items, const std::string* name) {
  return g_->AddSequence({Open(name, "list"), ItemSeparator(), items, ItemSeparator(), Close()});
}

ExprId CohereArgumentLowering::String(const std::string* name) {
  return g_->AddSequence({Open(name, "raw"), RawTextUntil(kValueEnd)});
}

ExprId CohereArgumentLowering::Scalar(ExprId json, const std::string* name) {
  return g_->AddSequence({Open(name, "json"), json, Close()});
}

ExprId CohereArgumentLowering::Literal(const JsonValue& v, const std::string* name, const std::string& path) {
  if (v.is_string()) return g_->AddSequence({Open(name, "raw"), g_->AddBytes(v.as_string()), Close()});
  if (v.is_array() || v.is_object()) Fail(path, "list and dict values in const/enum are not supported by cohere_xml");
  const std::string text = v.is_bool() ? (v.as_bool() ? "true" : "false") : v.is_null() ? "null" : v.number_literal();
  return g_->AddSequence({Open(name, "json"), g_->AddBytes(text), Close()});
}

ExprId CohereArgumentLowering::WriteMember(const std::string& key, const JsonValue& s, const std::string& path) {
  return Value(s, path, &key);
}

// A member the schema does not name (additionalProperties true, or the schema true): a value
// node with any name, of any value. Refused (kNoExpr) when the extra members have a schema of
// their own or names could spell an excluded substring.
ExprId CohereArgumentLowering::ExtraMember(const JsonValue* s, const std::string&) {
  if (s || !excludes_.empty()) return kNoExpr;
  if (any_named_value_ >= 0) return g_->AddRuleRef(any_named_value_);
  any_named_value_ = g_->DeclareRule("cohere_xml_any_named_value");
  // An XML attribute value: no raw quote, '<' or '&' (each written as an entity).
  ExprId name = g_->AddRepeat(
      g_->AddChoice({g_->AddCharClass({{'"', '"'}, {'&', '&'}, {'<', '<'}}, /*negated=*/true), g_->AddBytes("&amp;"),
                     g_->AddBytes("&lt;"), g_->AddBytes("&gt;"), g_->AddBytes("&quot;")}),
      1, kUnbounded);
  auto open = [&](const char* type) {
    return g_->AddSequence(
        {g_->AddBytes("<cofl:value name=\""), name, g_->AddBytes(std::string("\" type=\"") + type + "\">")});
  };
  ExprId members = Arguments({}, g_->AddRuleRef(any_named_value_));
  g_->SetRuleBody(
      any_named_value_,
      g_->AddChoice({g_->AddSequence({open("raw"), RawTextUntil(kValueEnd)}),
                     g_->AddSequence({open("json"), AnyScalar(), Close()}),
                     g_->AddSequence({open("list"), ItemSeparator(), AnyListItems(), ItemSeparator(), Close()}),
                     g_->AddSequence({open("dict"), members, Close()})}));
  return g_->AddRuleRef(any_named_value_);
}

}  // namespace xg2
