// The schema walk shared by the recursive tool-argument styles of structural-tag json_schema
// formats (gemma, cohere_xml, minimax_m3_xml): $ref / const / enum / anyOf / type dispatch, object members
// with required and optional properties, arrays with item bounds, and scalars spelled as in
// JSON (built by the JSON front end). A style says how each kind of value is written.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontends/json_schema.h"
#include "support/json.h"
#include "xg2/grammar.h"

namespace xg2 {

class StyledArgumentLowering {
 public:
  StyledArgumentLowering(Grammar* g, std::string style, JsonSchemaOptions options, std::string path,
                         std::vector<std::string>* warnings)
      : g_(g), style_(std::move(style)), options_(std::move(options)), path_(std::move(path)), warnings_(warnings) {}
  virtual ~StyledArgumentLowering() = default;

  // The whole argument object of a tool (its schema must describe an object).
  ExprId Lower(const JsonValue& schema);
  // Substrings no string value or property name may contain (JSONSchemaFormat.excludes).
  void set_excludes(std::vector<std::string> excludes) { excludes_ = std::move(excludes); }

 protected:
  struct Member {
    std::string name;
    ExprId value;  // the member as written (name included)
    bool required;
  };

  // name: the property this value belongs to (nullptr for array items and the root).
  ExprId Value(const JsonValue& s, const std::string& path, const std::string* name);

  // How a style writes each kind of value.
  virtual ExprId Arguments(std::vector<Member> members, ExprId extra) = 0;  // the root object
  virtual ExprId Object(std::vector<Member> members, ExprId extra, const std::string* name) = 0;
  virtual ExprId Array(ExprId items, const std::string* name) = 0;  // items: the list's inside
  virtual ExprId String(const std::string* name) = 0;
  // A string whose raw text matches `content` (a pattern or format); styles whose string end
  // a pattern could also match refuse it.
  virtual ExprId ConstrainedString(ExprId content, const std::string* name, const std::string& path);
  virtual ExprId Scalar(ExprId json, const std::string* name) = 0;  // json: number/bool/null text
  virtual ExprId Literal(const JsonValue& v, const std::string* name, const std::string& path) = 0;
  virtual ExprId WriteMember(const std::string& key, const JsonValue& s, const std::string& path) = 0;
  // A member with a key the schema does not name (additionalProperties), or kNoExpr.
  virtual ExprId ExtraMember(const JsonValue* s, const std::string& path) = 0;
  virtual ExprId ItemSeparator() = 0;                        // between list items (kNoExpr: nothing)
  virtual const std::string* ItemName() { return nullptr; }  // the name list items are written with
  // Properties in the order the style writes them.
  virtual std::vector<std::pair<std::string, const JsonValue*>> Ordered(const JsonValue& props);

  // Members (each may be left out unless required) in order, joined by `separator`, then any
  // number of `extra` members (kNoExpr: none); with options_.any_order, in any order.
  ExprId JoinMembers(const std::vector<Member>& members, ExprId extra, ExprId separator);
  ExprId AnyOrderMembers(const std::vector<Member>& members, ExprId extra, ExprId separator);
  ExprId JsonScalar(const JsonValue& s, const std::string& path);
  ExprId AnyValue(const std::string* name);
  ExprId AnyScalar();     // the JSON text of an untyped scalar (number, boolean, null)
  ExprId AnyListItems();  // the inside of a list of untyped values
  ExprId RawTextUntil(const std::string& end);
  [[noreturn]] void Fail(const std::string& path, const std::string& reason) const;
  bool Excluded(const std::string& text) const;  // contains an excluded substring

  Grammar* g_;
  std::string style_;
  JsonSchemaOptions options_;
  std::string path_;
  std::vector<std::string>* warnings_;
  std::vector<std::string> excludes_;

 private:
  std::vector<Member> Members(const JsonValue& s, const std::string& path);
  ExprId MembersOf(const JsonValue& s, const std::string& path, const std::string* name, bool root);
  ExprId Items(const JsonValue& s, const std::string& path);
  ExprId Ref(const std::string& ref, const std::string& path, const std::string* name);
  ExprId StringContent(const JsonValue& s, const std::string& path);
  void CheckKeywords(const JsonValue& s, const std::vector<std::string>& types, const std::string& path,
                     const std::set<std::string>& also = {}) const;

  const JsonValue* root_ = nullptr;
  std::map<std::string, RuleId> refs_;  // "$ref|name" -> rule
  std::map<std::string, RuleId> any_values_;
  std::map<std::string, RuleId> raw_texts_;
  int imports_ = 0;
};

}  // namespace xg2
