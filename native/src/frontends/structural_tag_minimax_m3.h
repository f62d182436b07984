// The "minimax_m3_xml" argument style of structural-tag json_schema formats: tool-call
// arguments as MiniMax-M3's chat template (its to_xml macro) writes them, every tag prefixed
// by the namespace marker ]<]minimax[>[ :
//   ]<]minimax[>[<city>Boston]<]minimax[>[</city>
//   ]<]minimax[>[<filters>]<]minimax[>[<tags>]<]minimax[>[<item>a]<]minimax[>[</item>
//   ]<]minimax[>[</tags>]<]minimax[>[</filters>
// Strings are raw text, numbers bare, booleans and null as JSON, objects nested tags, arrays
// repeated <item> tags.
#pragma once

#include <string>
#include <vector>

#include "frontends/structural_tag_args.h"

namespace xg2 {

class MiniMaxM3ArgumentLowering : public StyledArgumentLowering {
 public:
  MiniMaxM3ArgumentLowering(Grammar* g, JsonSchemaOptions options, std::string path, std::vector<std::string>* warnings)
      : StyledArgumentLowering(g, "minimax_m3_xml", std::move(options), std::move(path), warnings) {}

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
  const std::string* ItemName() override;

 private:
  std::string Close(const std::string* name) const;
  ExprId Wrapped(const std::string* name, ExprId inside);
};

}  // namespace xg2
