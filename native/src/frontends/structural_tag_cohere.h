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
  ExprId Arguments(std::vector<Member> members, ExprId extra) override;
  ExprId Object(std::vector<Member> members, ExprId extra, const std::string* name) override;
  ExprId Array(ExprId items, const std::string* name) override;
  ExprId String(const std::string* name) override;
  ExprId Scalar(ExprId json, const std::string* name) override;
  ExprId Literal(const JsonValue& v, const std::string* name, const std::string& path) override;
  ExprId WriteMember(const std::string& key, const JsonValue& s, const std::string& path) override;
  ExprId ExtraMember(const JsonValue* s, const std::string& path) override;
  ExprId ItemSeparator() override;

 private:
  ExprId Open(const std::string* name, const char* type);
  ExprId Close();

  RuleId any_named_value_ = -1;  // ExtraMember's rule, made on first use (-1: not yet)
};

}  // namespace xg2
