// Rule attributes of xgrammar's EBNF (`name[lazy] ::= ...`, `name[max_chars=N] ::= ...`) and
// of Lark rules, as language transforms of a rule body.
//
// Both need a regular body: rule references are expanded in place (a recursive one is an
// error), and the result is one ByteDfa node, so the printed grammar shows the automaton.
#pragma once

#include <cstdint>
#include <string>

#include "xg2/grammar.h"

namespace xg2 {

struct RuleAttributes {
  bool lazy = false;       // the shortest match commits: strings of the body with no proper prefix in it
  int64_t max_chars = -1;  // at most this many code points (-1: no bound)
  // Not a transform (the language is unchanged): stored on the rule (Rule::temperature).
  float temperature = Rule::kNoTemperature;
  // Not a transform either: enforced by the matcher (Rule::max_tokens).
  int64_t max_tokens = Rule::kNoTokenBudget;
  // Nor this one (Rule::json_min_chars / json_max_chars).
  int64_t json_min_chars = 0;
  int64_t json_max_chars = Rule::kNoCharBudget;
  std::string capture;  // Rule::capture (`capture` alone names it after the rule)
  // stop=(body, marker) / suffix=(body, marker): Rule::marker_split (kNoExpr: none).
  ExprId split_body = kNoExpr;
  ExprId split_marker = kNoExpr;
  bool hides_marker = false;
  bool whole_capture = false;  // lazy=(body, marker)
  bool end_only = false;       // Rule::end_only
  MarkerBefore marker_before;  // Rule::marker_before
  std::string stop_capture;
  // Whether the body is transformed.
  bool any() const { return lazy || max_chars >= 0; }
};

// Replaces the body of `rule` by its language under `attrs`. Throws Error(kGrammarSemantic)
// naming the rule when the body is not regular, and Error(kLimitExceeded) when the automaton
// has more than max_states states.
void ApplyRuleAttributes(Grammar* g, RuleId rule, const RuleAttributes& attrs, int64_t max_states = 200000);

// The byte automaton of `expr` (rule references expanded) as an expression of g: expr itself
// when it is one. Throws as ApplyRuleAttributes, naming owner_rule, when it is not regular.
ExprId ByteDfaExprOf(Grammar* g, ExprId expr, RuleId owner_rule, int64_t max_states = 200000);

// Gives the suffix/stop rule `rule` (whose text is body then marker) its MarkerSplit, with
// body and marker made byte automata (ByteDfaExprOf); whole_capture for a lazy rule's split.
void SetMarkerSplit(Grammar* g, RuleId rule, ExprId body, ExprId marker, bool hides_marker,
                    const std::string& stop_capture, bool whole_capture = false);

// The texts of `rule` (its body a ByteDfa, as ApplyRuleAttributes leaves it) that stop on
// the way to a marker where the text read is one of `body`: how xgrammar's any-text
// suffix/stop and lazy trigger rules may also end, at the end of the input (EndForms).
ExprId EndWithoutMarker(Grammar* g, RuleId rule, ExprId body, int64_t max_states = 200000);

// `temperature=T` (EBNF and Lark): the length of the number literal at text[at..]
// (digits, an optional fraction and exponent, an optional leading sign; 0 if there is none),
// and its value, which must be finite and >= 0 as a float: false otherwise (1e999, -0.1).
size_t TemperatureLiteralLength(const std::string& text, size_t at);
bool ParseTemperatureLiteral(const std::string& literal, float* value);

}  // namespace xg2
