// Excluded substrings (JsonSchemaOptions::excludes, xgrammar's JSONSchemaFormat.excludes): no
// string value or property name may contain one in its emitted text. A string that must not
// contain any of a set of substrings is a regular language, so each filtered string is the
// product of its content automaton with the complement of "contains an excluded substring"
// (ProductWithParts, then the states no excluded substring has reached): exact, never wider.
#include "frontends/json_schema_converter.h"

namespace xg2::jsonschema {
namespace {

constexpr int64_t kMaxExcludeDfaStates = kMaxPatternDfaStates;

// Byte strings holding one of `excludes`: (any character)* (e1 | e2 | ...) (any character)*.
// Over characters rather than bytes: string content is valid UTF-8, and so is each excluded
// substring, so an occurrence starts on a character boundary either way.
ByteDfaSpec ExcludedTextDfa(const std::vector<std::string>& excludes) {
  Grammar scratch;
  ExprId any = scratch.AddRepeat(scratch.AddCharClass({{0, 0x10FFFF}}, false), 0, kUnbounded);
  std::vector<ExprId> alts;
  for (const std::string& e : excludes) alts.push_back(scratch.AddBytes(e));
  return ByteDfaOfExpr(scratch, scratch.AddSequence({any, scratch.AddChoice(alts), any}), kMaxExcludeDfaStates);
}

// The strings of `universe` that hold no excluded substring and are no spelling of a
// `declared` name.
ByteDfaSpec Filter(const ByteDfaSpec& universe, const ByteDfaSpec& excluded, const std::vector<std::string>& declared) {
  std::vector<ByteDfaSpec> parts{excluded};
  uint64_t care = 1;
  if (!declared.empty()) {
    parts.push_back(JsonStringSpellingsDfa(declared, kMaxExcludeDfaStates));
    care |= 2;
  }
  return TrimAndMinimize(SelectByParts(ProductWithParts(universe, parts, kMaxExcludeDfaStates), care, 0));
}

// content without the strings `excluded` holds: the empty choice when nothing is left.
ExprId Without(Grammar* g, ExprId content, const ByteDfaSpec& excluded) {
  ByteDfaSpec dfa = Filter(ByteDfaOfExpr(*g, content, kMaxExcludeDfaStates), excluded, {});
  return ByteDfaEmpty(dfa) ? g->AddChoice({}) : g->AddByteDfa(std::move(dfa));
}

}  // namespace

ExprId WithoutSubstrings(Grammar* g, ExprId content, const std::vector<std::string>& excludes) {
  return Without(g, content, ExcludedTextDfa(excludes));
}

const ByteDfaSpec& Converter::ExcludedText() {
  if (!excluded_text_) excluded_text_ = std::make_unique<ByteDfaSpec>(ExcludedTextDfa(o_.excludes));
  return *excluded_text_;
}

ExprId Converter::FilteredString(int64_t min_len, int64_t max_len, const std::vector<std::string>& declared) {
  auto key = std::make_pair(std::make_pair(min_len, max_len), declared);
  auto it = filtered_strings_.find(key);
  if (it == filtered_strings_.end()) {
    Grammar scratch;
    ByteDfaSpec universe =
        ByteDfaOfExpr(scratch, scratch.AddRepeat(JsonCharExpr(&scratch), 0, kUnbounded), kMaxExcludeDfaStates);
    // Length counts decoded characters (an escape is one), as minLength / maxLength do.
    if (min_len > 0 || max_len >= 0) universe = IntersectJsonLength(universe, min_len, max_len, kMaxExcludeDfaStates);
    ByteDfaSpec dfa = Filter(universe, ExcludedText(), declared);
    RuleId rule = NewRule("json_string_filtered");
    g_.SetRuleBody(rule, ByteDfaEmpty(dfa) ? Never() : g_.AddByteDfa(std::move(dfa)));
    it = filtered_strings_.emplace(std::move(key), rule).first;
  }
  return g_.AddSequence({Lit(&g_, "\""), g_.AddRuleRef(it->second), Lit(&g_, "\"")});
}

ExprId Converter::WithoutExcluded(ExprId content) { return Without(&g_, content, ExcludedText()); }

bool Converter::LiteralExcluded(const std::string& text) {
  return Excluding() &&
         ByteDfaEmpty(
             Filter(ByteDfaOfExpr(g_, JsonStringContentLiteral(&g_, text), kMaxExcludeDfaStates), ExcludedText(), {}));
}

}  // namespace xg2::jsonschema
