#include "frontends/structural_tag_cohere.h"

#include "automata/byte_dfa_ops.h"

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

ExprId CohereArgumentLowering::Open(ValueName name, const char* type) {
  const std::string type_attr = std::string(" type=\"") + type + "\">";
  if (name.keys != kNoExpr)
    return g_->AddSequence({g_->AddBytes("<cofl:value name=\""), name.keys, g_->AddBytes("\"" + type_attr)});
  std::string tag = "<cofl:value";
  if (name.fixed) tag += " name=\"" + XmlAttribute(*name.fixed) + "\"";
  return g_->AddBytes(tag + type_attr);
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

ExprId CohereArgumentLowering::Object(std::vector<Member> members, ExprId extra, ValueName name) {
  return g_->AddSequence({Open(name, "dict"), Arguments(std::move(members), extra), Close()});
}

ExprId CohereArgumentLowering::Array(ExprId items, ValueName name) {
  return g_->AddSequence({Open(name, "list"), ItemSeparator(), items, ItemSeparator(), Close()});
}

ExprId CohereArgumentLowering::String(ValueName name) {
  return g_->AddSequence({Open(name, "raw"), RawTextUntil(kValueEnd)});
}

// The text is followed by the end tag: it must not spell that tag itself (a reader would cut
// the value there).
ExprId CohereArgumentLowering::ConstrainedString(ExprId content, ValueName name, const std::string& path) {
  return g_->AddSequence({Open(name, "raw"), TextBefore(content, kValueEnd, path), Close()});
}

ExprId CohereArgumentLowering::Scalar(ExprId json, ValueName name) {
  return g_->AddSequence({Open(name, "json"), json, Close()});
}

// A string holding the end tag cannot be written (a reader would end the value there).
ExprId CohereArgumentLowering::Literal(const JsonValue& v, ValueName name, const std::string& path) {
  if (v.is_string() && v.as_string().find(kValueEnd) != std::string::npos) return kNoExpr;
  if (v.is_string()) return g_->AddSequence({Open(name, "raw"), g_->AddBytes(v.as_string()), Close()});
  if (v.is_array() || v.is_object()) Fail(path, "list and dict values in const/enum are not supported by cohere_xml");
  const std::string text = v.is_bool() ? (v.as_bool() ? "true" : "false") : v.is_null() ? "null" : v.number_literal();
  return g_->AddSequence({Open(name, "json"), g_->AddBytes(text), Close()});
}

ExprId CohereArgumentLowering::WriteMember(const std::string& key, const JsonValue& s, const std::string& path) {
  return Value(s, path, {&key});
}

ExprId CohereArgumentLowering::FreeMember(ExprId keys, const JsonValue* s, const std::string& path) {
  ValueName name{nullptr, keys};
  return s ? Value(*s, path, name) : AnyValue(name);
}

// A name attribute: non-empty, no NUL (XML has no way to write it).
ExprId CohereArgumentLowering::KeyAlphabet(Grammar* scratch) {
  return scratch->AddRepeat(scratch->AddCharClass({{0, 0}}, /*negated=*/true), 1, kUnbounded);
}

// Free keys XML-escaped as the template writes attribute values (&amp; &lt; &gt; &quot;, one
// spelling each). The style takes no excludes (the structural tag refuses them).
ExprId CohereArgumentLowering::KeyText(ByteDfaSpec keys, const std::string&) {
  return g_->AddByteDfa(SpellBytes(keys, {{'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"}}));
}

}  // namespace xg2
