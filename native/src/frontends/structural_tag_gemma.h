// The "gemma" argument style of structural-tag json_schema formats: tool-call arguments as
// Gemma 4's chat template writes them (its format_argument macro with escape_keys=False):
//   {key:<|"|>text<|"|>,n:3,flag:true,xs:[1,<|"|>a<|"|>],obj:{k:null}}
// Keys are bare and unescaped, strings are raw text between <|"|> delimiters, numbers,
// booleans and null keep their JSON spelling, and there is no whitespace. The template sorts
// every mapping with Jinja's dictsort (case-insensitive), so properties come in that order.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontends/json_schema.h"
#include "support/json.h"
#include "xg2/grammar.h"

namespace xg2 {

class GemmaArgumentLowering {
 public:
  // delimiter: the bytes of <|"|> (the special token's virtual string when the tokenizer has
  // it as a special token, else the text). path: the structural-tag path of the schema.
  GemmaArgumentLowering(Grammar* g, std::string delimiter, JsonSchemaOptions options, std::string path,
                        std::vector<std::string>* warnings)
      : g_(g),
        delimiter_(std::move(delimiter)),
        options_(std::move(options)),
        path_(std::move(path)),
        warnings_(warnings) {}

  // The whole argument object of a tool (its schema must describe an object).
  ExprId Lower(const JsonValue& schema);

 private:
  ExprId Value(const JsonValue& s, const std::string& path);
  ExprId Object(const JsonValue& s, const std::string& path);
  ExprId Array(const JsonValue& s, const std::string& path);
  ExprId String(const JsonValue& s, const std::string& path);
  ExprId Scalar(const JsonValue& s, const std::string& path);
  ExprId Ref(const std::string& ref, const std::string& path);
  ExprId Literal(const JsonValue& v, const std::string& path);
  ExprId AnyValue();
  ExprId RawText();
  ExprId Identifier();
  std::string Serialize(const JsonValue& v, const std::string& path);

  Grammar* g_;
  std::string delimiter_;
  JsonSchemaOptions options_;
  std::string path_;
  std::vector<std::string>* warnings_;
  const JsonValue* root_ = nullptr;
  std::map<std::string, RuleId> refs_;
  RuleId any_value_ = -1;
  RuleId raw_text_ = -1;
  int imports_ = 0;
};

}  // namespace xg2
