// The "gemma" argument style of structural-tag json_schema formats: tool-call arguments as
// Gemma 4's chat template writes them (its format_argument macro with escape_keys=False):
//   {key:<|"|>text<|"|>,n:3,flag:true,xs:[1,<|"|>a<|"|>],obj:{k:null}}
// Keys are bare and unescaped, strings are raw text between <|"|> delimiters, numbers,
// booleans and null keep their JSON spelling, and there is no whitespace. Properties come in
// any order: the template sorts every mapping with Jinja's dictsort (case-insensitive),
// xgrammar writes the declaration order, and a reader takes each key by name whatever its
// place. A const object is written in either of the first two orders.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "frontends/structural_tag_args.h"

namespace xg2 {

class GemmaArgumentLowering : public StyledArgumentLowering {
 public:
  // delimiter: the bytes of <|"|> (the special token's virtual string when the tokenizer has
  // it as a special token, else the text). path: the structural-tag path of the schema.
  GemmaArgumentLowering(Grammar* g, std::string delimiter, JsonSchemaOptions options, std::string path,
                        std::vector<std::string>* warnings)
      : StyledArgumentLowering(g, "gemma", std::move(options), std::move(path), warnings),
        delimiter_(std::move(delimiter)) {}

 protected:
  ExprId Arguments(std::vector<Member> members, ExprId extra) override;
  ExprId Object(std::vector<Member> members, ExprId extra, ValueName name) override;
  ExprId Array(ExprId items, ValueName name) override;
  ExprId String(ValueName name) override;
  ExprId ConstrainedString(ExprId content, ValueName name, const std::string& path) override;
  ExprId Scalar(ExprId json, ValueName name) override;
  ExprId Literal(const JsonValue& v, ValueName name, const std::string& path) override;
  ExprId WriteMember(const std::string& key, const JsonValue& s, const std::string& path) override;
  ExprId FreeMember(ExprId keys, const JsonValue* s, const std::string& path) override;
  ExprId KeyAlphabet(Grammar* scratch) override;
  ExprId KeyText(ByteDfaSpec keys, const std::string& path) override;
  ExprId ItemSeparator() override;
  std::vector<std::pair<std::string, const JsonValue*>> Ordered(const JsonValue& props) override;

 private:
  // v as the template writes it; with declared, objects keep their declaration order.
  std::string Serialize(const JsonValue& v, const std::string& path, bool declared);
  bool SpellsDelimiter(const JsonValue& v) const;  // some string of v holds the delimiter

  std::string delimiter_;
};

}  // namespace xg2
