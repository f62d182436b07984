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
  ExprId Object(std::vector<Member> members, ExprId extra, ValueName name) override;
  ExprId Array(ExprId items, ValueName name) override;
  ExprId String(ValueName name) override;
  ExprId Scalar(ExprId json, ValueName name) override;
  ExprId Literal(const JsonValue& v, ValueName name, const std::string& path) override;
  ExprId WriteMember(const std::string& key, const JsonValue& s, const std::string& path) override;
  ExprId FreeMember(ExprId keys, const JsonValue* s, const std::string& path) override;
  ExprId KeyAlphabet(Grammar* scratch) override;
  ExprId KeyText(ByteDfaSpec keys, const std::string& path) override;
  ExprId ItemSeparator() override;
  ValueName ItemName() override;
  bool WritesOnlyFixedKeys() const override { return true; }

 private:
  std::string Close(const std::string& name) const;
  const std::string& TagName(ValueName name) const;
  ExprId Wrapped(ValueName name, ExprId inside);

  RuleId string_text_ = -1;  // a string's text: any without the namespace marker
};

}  // namespace xg2
