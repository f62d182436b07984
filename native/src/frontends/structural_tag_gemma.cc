#include "frontends/structural_tag_gemma.h"

#include <algorithm>
#include <cctype>

#include "xg2/tokenizer.h"

namespace xg2 {
namespace {

std::string Lowered(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool IsIdentifier(const std::string& key) {
  if (key.empty() || std::isdigit(static_cast<unsigned char>(key[0]))) return false;
  return std::all_of(key.begin(), key.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

// Jinja's dictsort (case-insensitive by default): the order Gemma's template writes keys in.
std::vector<std::pair<std::string, const JsonValue*>> GemmaArgumentLowering::Ordered(const JsonValue& props) {
  std::vector<std::pair<std::string, const JsonValue*>> out = StyledArgumentLowering::Ordered(props);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return Lowered(a.first) < Lowered(b.first); });
  return out;
}

ExprId GemmaArgumentLowering::Arguments(std::vector<Member> members, ExprId extra) {
  return Object(std::move(members), extra, {});
}

ExprId GemmaArgumentLowering::Object(std::vector<Member> members, ExprId extra, ValueName) {
  const bool several = members.size() > 1 || (extra != kNoExpr && !members.empty());
  const ExprId body =
      several ? AnyOrderMembers(members, extra, ItemSeparator()) : JoinMembers(members, extra, ItemSeparator());
  return g_->AddSequence({g_->AddBytes("{"), body, g_->AddBytes("}")});
}

ExprId GemmaArgumentLowering::Array(ExprId items, ValueName) {
  return g_->AddSequence({g_->AddBytes("["), items, g_->AddBytes("]")});
}

ExprId GemmaArgumentLowering::String(ValueName) {
  return g_->AddSequence({g_->AddBytes(delimiter_), RawTextUntil(delimiter_)});
}

// The text between the delimiters must not spell the delimiter (a reader would end the string
// there); with <|"|> as its special token, text never holds it.
ExprId GemmaArgumentLowering::ConstrainedString(ExprId content, ValueName name, const std::string& path) {
  if (delimiter_.empty()) return StyledArgumentLowering::ConstrainedString(content, name, path);
  const bool token = static_cast<uint8_t>(delimiter_[0]) == kVirtualTokenLead;
  return g_->AddSequence(
      {g_->AddBytes(delimiter_), token ? content : TextBefore(content, delimiter_, path), g_->AddBytes(delimiter_)});
}

ExprId GemmaArgumentLowering::Scalar(ExprId json, ValueName) { return json; }

// A string holding the delimiter as text cannot be written (a reader would end it there).
ExprId GemmaArgumentLowering::Literal(const JsonValue& v, ValueName, const std::string& path) {
  if (SpellsDelimiter(v)) return kNoExpr;
  const std::string sorted = Serialize(v, path, false), declared = Serialize(v, path, true);
  if (sorted == declared) return g_->AddBytes(sorted);
  return g_->AddChoice({g_->AddBytes(sorted), g_->AddBytes(declared)});
}

bool GemmaArgumentLowering::SpellsDelimiter(const JsonValue& v) const {
  if (delimiter_.empty()) return false;
  if (v.is_string()) return v.as_string().find(delimiter_) != std::string::npos;
  if (v.is_array())
    return std::any_of(v.items().begin(), v.items().end(), [&](const JsonValue& i) { return SpellsDelimiter(i); });
  if (v.is_object()) {
    for (const auto& [k, item] : v.members()) {
      if (SpellsDelimiter(item)) return true;
    }
  }
  return false;
}

ExprId GemmaArgumentLowering::WriteMember(const std::string& key, const JsonValue& s, const std::string& path) {
  if (!IsIdentifier(key)) Fail(path, "property name '" + key + "' is not a bare identifier");
  return g_->AddSequence({g_->AddBytes(key + ":"), Value(s, path, {&key})});
}

ExprId GemmaArgumentLowering::FreeMember(ExprId keys, const JsonValue* s, const std::string& path) {
  return g_->AddSequence({keys, g_->AddBytes(":"), s ? Value(*s, path, {}) : AnyValue({})});
}

// A bare key: [a-zA-Z_][a-zA-Z0-9_]*.
ExprId GemmaArgumentLowering::KeyAlphabet(Grammar* scratch) {
  return scratch->AddSequence(
      {scratch->AddCharClass({{'a', 'z'}, {'A', 'Z'}, {'_', '_'}}, false),
       scratch->AddRepeat(scratch->AddCharClass({{'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {'_', '_'}}, false), 0,
                          kUnbounded)});
}

ExprId GemmaArgumentLowering::KeyText(ByteDfaSpec keys, const std::string& path) {
  // Excluded substrings made of identifier characters only could occur in a free key.
  for (const std::string& e : excludes_) {
    if (IsIdentifier(e) || std::all_of(e.begin(), e.end(), [](char c) { return std::isdigit(c); }))
      Fail(path, "excluded substring '" + e + "' could occur in a free (additionalProperties) key");
  }
  return g_->AddByteDfa(std::move(keys));
}

ExprId GemmaArgumentLowering::ItemSeparator() { return g_->AddBytes(","); }

// A const/enum value as the template writes it (or, with declared, in declaration order).
std::string GemmaArgumentLowering::Serialize(const JsonValue& v, const std::string& path, bool declared) {
  if (v.is_string()) return delimiter_ + v.as_string() + delimiter_;
  if (v.is_bool()) return v.as_bool() ? "true" : "false";
  if (v.is_null()) return "null";
  if (v.is_number()) return v.number_literal();
  std::string out;
  if (v.is_array()) {
    for (size_t i = 0; i < v.items().size(); ++i) out += (i ? "," : "") + Serialize(v.items()[i], path, declared);
    return "[" + out + "]";
  }
  for (const auto& [k, item] : declared ? StyledArgumentLowering::Ordered(v) : Ordered(v)) {
    if (!IsIdentifier(k)) Fail(path, "key '" + k + "' is not a bare identifier");
    out += (out.empty() ? "" : ",") + k + ":" + Serialize(*item, path, declared);
  }
  return "{" + out + "}";
}

}  // namespace xg2
