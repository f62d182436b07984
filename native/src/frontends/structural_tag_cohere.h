// The "cohere_xml" argument style of structural-tag json_schema formats: tool-call arguments
// as Cohere's cmd5 nested-XML template writes them, one recursive value node per argument:
//   <cofl:value name="query" type="raw">text</cofl:value>
//   <cofl:value name="limit" type="json">3</cofl:value>
//   <cofl:value name="filters" type="dict"><cofl:value name="tags" type="list">
//     <cofl:value type="raw">music</cofl:value></cofl:value></cofl:value>
// Strings are raw text (type "raw"), numbers, booleans and null JSON (type "json"), objects
// "dict" nodes of named values, arrays "list" nodes of unnamed values. Names are XML-escaped.
#pragma once

#include <string>
#include <vector>

#include "frontends/structural_tag_args.h"

namespace xg2 {

class CohereArgumentLowering : public StyledArgumentLowering {
 public:
  CohereArgumentLowering(Grammar* g, JsonSchemaOptions options, std::string path, std::vector<std::string>* warnings)
      : StyledArgumentLowering(g, "cohere_xml", std::move(options), std::move(path), warnings) {}

 protected:
  // Members: a value node whose name attribute is the key.
  ExprId WriteMember(const std::string& key, const JsonValue& s, const std::string& path) override;
  ExprId FreeMember(ExprId keys, const JsonValue* s, const std::string& path) override;
  ExprId KeyAlphabet(Grammar* scratch) override;
  ExprId KeyText(ByteDfaSpec keys, const std::string& path) override;
  // Value nodes by type attribute: dict, list, raw, json.
  ExprId Arguments(std::vector<Member> members, ExprId extra) override;
  ExprId Object(std::vector<Member> members, ExprId extra, ValueName name) override;
  ExprId Array(ExprId items, ValueName name) override;
  ExprId ItemSeparator() override;
  ExprId String(ValueName name) override;
  ExprId ConstrainedString(ExprId content, ValueName name, const std::string& path) override;
  ExprId Scalar(ExprId json, ValueName name) override;
  ExprId Literal(const JsonValue& v, ValueName name, const std::string& path) override;

 private:
  ExprId Open(ValueName name, const char* type);
  ExprId Close();
};

}  // namespace xg2
