// The schema walk shared by the recursive tool-argument styles of structural-tag json_schema
// formats (gemma, cohere_xml, minimax_m3_xml): $ref / const / enum / anyOf / type dispatch, object members
// with required and optional properties, keys the schema does not fix (additionalProperties,
// patternProperties, propertyNames: key automata over decoded text, each style writing a key
// its own way), arrays with item bounds, and scalars spelled as in JSON (built by the JSON
// front end). A style says how each kind of value is written.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontends/json_schema.h"
#include "frontends/structural_tag_keys.h"
#include "support/json.h"
#include "xg2/grammar.h"

namespace xg2 {

// The raw text (unquoted, unescaped: as the chat templates write strings) that a string
// schema's pattern (JSON Schema search semantics), asserted format or minLength/maxLength
// allow, over decoded text; kNoExpr when nothing constrains it (a format that only
// annotates). Length-only text leaves out `excludes`; a pattern or format keeps its own
// language. Refused (StructuralTagError naming `who`, e.g. "XML argument styles") where
// that cannot be exact: lengths beside a pattern or format they would cut, a pattern beside
// an asserted format.
ExprId RawStringText(Grammar* g, const JsonValue& s, const std::string& path, const std::vector<std::string>& excludes,
                     const std::string& who);

// The schema a "#/$defs/NAME" or "#/definitions/NAME" reference names in root; nullptr for
// another reference or a missing definition.
const JsonValue* DefinitionTarget(const JsonValue& root, const std::string& ref);

class StyledArgumentLowering {
 public:
  StyledArgumentLowering(Grammar* g, std::string style, JsonSchemaOptions options, std::string path,
                         std::vector<std::string>* warnings)
      : g_(g), style_(std::move(style)), options_(std::move(options)), path_(std::move(path)), warnings_(warnings) {}
  virtual ~StyledArgumentLowering() = default;

  // The whole argument object of a tool (its schema must describe an object, or be a union at
  // the root of object schemas: $ref, anyOf, oneOf, const, enum).
  ExprId Lower(const JsonValue& schema);
  // Substrings no string value or property name may contain (JSONSchemaFormat.excludes).
  void set_excludes(std::vector<std::string> excludes) { excludes_ = std::move(excludes); }

 protected:
  struct Member {
    std::string name;
    ExprId value;  // the member as written (name included)
    bool required;
  };
  // The name a value is written with: a property's fixed name, the written keys of a member
  // whose name the schema does not fix, or neither (list items, the root).
  struct ValueName {
    const std::string* fixed = nullptr;
    ExprId keys = kNoExpr;
    bool named() const { return fixed || keys != kNoExpr; }
    std::string CacheKey() const;
  };

  ExprId Value(const JsonValue& s, const std::string& path, ValueName name);

  // How a style writes each kind of value.
  virtual ExprId Arguments(std::vector<Member> members, ExprId extra) = 0;  // the root object
  virtual ExprId Object(std::vector<Member> members, ExprId extra, ValueName name) = 0;
  virtual ExprId Array(ExprId items, ValueName name) = 0;  // items: the list's inside
  virtual ExprId String(ValueName name) = 0;
  // A string whose raw text matches `content` (a pattern, format or length bounds, over
  // decoded text); refused unless the style overrides it.
  virtual ExprId ConstrainedString(ExprId content, ValueName name, const std::string& path);
  virtual ExprId Scalar(ExprId json, ValueName name) = 0;  // json: number/bool/null text
  // A const/enum value as written; kNoExpr for one the style cannot write.
  virtual ExprId Literal(const JsonValue& v, ValueName name, const std::string& path) = 0;
  virtual ExprId WriteMember(const std::string& key, const JsonValue& s, const std::string& path) = 0;
  // A member whose name is one of `keys` (written, from KeyText) and whose value has schema
  // `s` (nullptr: any value).
  virtual ExprId FreeMember(ExprId keys, const JsonValue* s, const std::string& path) = 0;
  // The decoded texts a free key may have in this style (built in `scratch`; kNoExpr: any).
  virtual ExprId KeyAlphabet(Grammar* scratch) = 0;
  // Free keys (decoded text, within KeyAlphabet) as the style writes them, or kNoExpr when
  // the style cannot write names the schema does not fix.
  virtual ExprId KeyText(ByteDfaSpec keys, const std::string& path) = 0;
  virtual ExprId ItemSeparator() = 0;          // between list items (kNoExpr: nothing)
  virtual ValueName ItemName() { return {}; }  // the name list items are written with
  // Whether the style writes only the names `properties` fixes, so that a schema constraining
  // other names (propertyNames) is refused, as xgrammar refuses it for MiniMax-M3.
  virtual bool WritesOnlyFixedKeys() const { return false; }
  // Properties in the order the style writes them.
  virtual std::vector<std::pair<std::string, const JsonValue*>> Ordered(const JsonValue& props);

  // Members (each may be left out unless required) in order, joined by `separator`, then any
  // number of `extra` members (kNoExpr: none); with options_.any_order, in any order.
  ExprId JoinMembers(const std::vector<Member>& members, ExprId extra, ExprId separator);
  ExprId AnyOrderMembers(const std::vector<Member>& members, ExprId extra, ExprId separator);
  ExprId JsonScalar(const JsonValue& s, const std::string& path);
  ExprId AnyValue(ValueName name);
  ExprId AnyScalar();     // the JSON text of an untyped scalar (number, boolean, null)
  ExprId AnyListItems();  // the inside of a list of untyped values
  ExprId AnyMember();     // a member of an untyped object: any free key, any value
  ExprId RawTextUntil(const std::string& end);
  // `content` without the strings that contain `end` (a value's text cannot spell its end).
  ExprId TextBefore(ExprId content, const std::string& end, const std::string& path);
  [[noreturn]] void Fail(const std::string& path, const std::string& reason) const;
  bool Excluded(const std::string& text) const;  // contains an excluded substring

  Grammar* g_;
  std::string style_;
  JsonSchemaOptions options_;
  std::string path_;
  std::vector<std::string>* warnings_;
  std::vector<std::string> excludes_;

 private:
  ExprId ArgumentsOf(const JsonValue& schema, const std::string& path);  // one object schema's members
  std::vector<Member> Members(const JsonValue& s, const std::string& path, const ObjectKeys& keys);
  ExprId FreeMembers(const JsonValue& s, const ObjectKeys& keys);
  ExprId MembersOf(const JsonValue& s, const std::string& path, ValueName name, bool root);
  ExprId Items(const JsonValue& s, const std::string& path);
  JsonValue Conjunction(const JsonValue& all, const std::string& path) const;
  void CheckExclusive(const std::vector<JsonValue>& alts, const std::string& path) const;
  ExprId Ref(const std::string& ref, const std::string& path, ValueName name);
  void CheckKeywords(const JsonValue& s, const std::vector<std::string>& types, const std::string& path,
                     const std::set<std::string>& also = {}) const;

  const JsonValue* root_ = nullptr;
  std::map<std::string, RuleId> refs_;  // "$ref|name" -> rule
  std::map<std::string, RuleId> any_values_;
  std::map<std::string, RuleId> raw_texts_;
  RuleId any_member_ = -1;
  int imports_ = 0;
};

}  // namespace xg2
