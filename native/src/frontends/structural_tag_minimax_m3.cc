#include "frontends/structural_tag_minimax_m3.h"

#include <algorithm>

#include "frontends/json_schema_internal.h"

namespace xg2 {
namespace {

constexpr const char* kNamespace = "]<]minimax[>[";

// A tag name the template can write: no markup or whitespace characters.
bool IsTagName(const std::string& key) {
  return !key.empty() && std::none_of(key.begin(), key.end(), [](char c) {
    return c == '<' || c == '>' || c == '/' || c == '"' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
  });
}

}  // namespace

StyledArgumentLowering::ValueName MiniMaxM3ArgumentLowering::ItemName() {
  static const std::string kItem = "item";
  return {&kItem};
}

std::string MiniMaxM3ArgumentLowering::Close(const std::string& name) const {
  return std::string(kNamespace) + "</" + name + ">";
}

// The tag name of a value: a fixed name (the closing tag repeats it).
const std::string& MiniMaxM3ArgumentLowering::TagName(ValueName name) const {
  if (!name.fixed) Fail(path_, "minimax_m3_xml writes every value inside a tag of a fixed name");
  return *name.fixed;
}

ExprId MiniMaxM3ArgumentLowering::Wrapped(ValueName name, ExprId inside) {
  const std::string& tag = TagName(name);
  return g_->AddSequence({g_->AddBytes(std::string(kNamespace) + "<" + tag + ">"), inside, g_->AddBytes(Close(tag))});
}

// Between tags: optional whitespace (the template separates invokes with newlines).
ExprId MiniMaxM3ArgumentLowering::ItemSeparator() {
  return g_->AddRepeat(g_->AddCharClass({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}}, false), 0,
                       options_.max_whitespace_cnt < 0 ? kUnbounded : options_.max_whitespace_cnt);
}

ExprId MiniMaxM3ArgumentLowering::Arguments(std::vector<Member> members, ExprId extra) {
  return g_->AddSequence({ItemSeparator(), JoinMembers(members, extra, ItemSeparator()), ItemSeparator()});
}

ExprId MiniMaxM3ArgumentLowering::Object(std::vector<Member> members, ExprId extra, ValueName name) {
  return Wrapped(name, Arguments(std::move(members), extra));
}

ExprId MiniMaxM3ArgumentLowering::Array(ExprId items, ValueName name) {
  return Wrapped(name, g_->AddSequence({ItemSeparator(), items, ItemSeparator()}));
}

// A string's text never holds the namespace marker: a reader takes what follows it as markup
// (a nested element, so the value would read as an object), and the first marker must begin
// the closing tag.
ExprId MiniMaxM3ArgumentLowering::String(ValueName name) {
  TagName(name);           // refuses a value without a fixed tag name
  if (string_text_ < 0) {  // one rule, shared by every string
    std::vector<std::string> excludes = excludes_;
    excludes.push_back(kNamespace);
    string_text_ = g_->DeclareRule("minimax_m3_xml_string_text");
    g_->SetRuleBody(string_text_,
                    jsonschema::WithoutSubstrings(
                        g_, g_->AddRepeat(g_->AddCharClass({}, /*negated=*/true), 0, kUnbounded), excludes));
  }
  return Wrapped(name, g_->AddRuleRef(string_text_));
}

ExprId MiniMaxM3ArgumentLowering::Scalar(ExprId json, ValueName name) { return Wrapped(name, json); }

ExprId MiniMaxM3ArgumentLowering::Literal(const JsonValue& v, ValueName name, const std::string& path) {
  // A list or object is written as its elements: each member under its key, each item under
  // "item" (as the template writes such a value).
  if (v.is_array() || v.is_object()) {
    static const std::string kItem = "item";
    std::vector<ExprId> parts{ItemSeparator()};
    if (v.is_object()) {
      for (const auto& [k, member] : v.members()) {
        if (!IsTagName(k))
          Fail(path,
               "property name '" + k + "' is not a valid element name: the template cannot write it as a tag name");
        parts.push_back(Literal(member, {&k}, path));
        parts.push_back(ItemSeparator());
      }
    } else {
      for (const JsonValue& item : v.items()) {
        parts.push_back(Literal(item, {&kItem}, path));
        parts.push_back(ItemSeparator());
      }
    }
    for (ExprId p : parts) {
      if (p == kNoExpr) return kNoExpr;  // a string inside cannot be written
    }
    return Wrapped(name, g_->AddSequence(std::move(parts)));
  }
  const std::string text = v.is_string() ? v.as_string()
                           : v.is_bool() ? (v.as_bool() ? "true" : "false")
                           : v.is_null() ? "null"
                                         : v.number_literal();
  // A string holding the namespace marker cannot be written (a reader takes it as markup).
  if (text.find(kNamespace) != std::string::npos) return kNoExpr;
  return Wrapped(name, g_->AddBytes(text));
}

ExprId MiniMaxM3ArgumentLowering::WriteMember(const std::string& key, const JsonValue& s, const std::string& path) {
  if (!IsTagName(key))
    Fail(path, "property name '" + key + "' is not a valid element name: the template cannot write it as a tag name");
  return Value(s, path, {&key});
}

// An extra key is a tag name the schema does not give, closed by the same name: refused
// (KeyText writes none, so FreeMember is never reached).
ExprId MiniMaxM3ArgumentLowering::FreeMember(ExprId, const JsonValue*, const std::string& path) {
  Fail(path, "minimax_m3_xml cannot name keys the schema does not fix");
}

ExprId MiniMaxM3ArgumentLowering::KeyAlphabet(Grammar*) { return kNoExpr; }

ExprId MiniMaxM3ArgumentLowering::KeyText(ByteDfaSpec, const std::string&) { return kNoExpr; }

}  // namespace xg2
