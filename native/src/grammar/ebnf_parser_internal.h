// The EBNF parser's class, shared by the files that define its parts: ebnf_parser.cc (rules,
// expressions, string macros, literals, result assembly) and ebnf_token_macros.cc (the
// token-level macros Token, ExcludeToken and TokenTagDispatch).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "grammar/rule_attributes.h"
#include "xg2/grammar.h"

namespace xg2::ebnf {

inline bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

inline bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9') || c == '.' || c == '-'; }

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

class EbnfParser {
 public:
  explicit EbnfParser(const std::string& text) : text_(text) {}

  Grammar Parse(const std::string& root_rule_name);

 private:
  // ---- Cursor and diagnostics ----
  char Peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  bool AtEnd() const { return pos_ >= text_.size(); }
  std::pair<int, int> LineColumn(size_t offset) const;
  // Errors read as xgrammar's: "EBNF parser error at line L, column C: ..." (Fail) and, for
  // malformed tokens (strings, classes, escapes, "::=" without a name), "EBNF lexer error".
  [[noreturn]] void Fail(const std::string& message, size_t offset) const;
  [[noreturn]] void FailLexer(const std::string& message, size_t offset) const;
  std::string DescribeCharAt(size_t offset) const;
  std::string LexemeAt(size_t offset) const;                   // the character itself where printable
  [[noreturn]] void FailUnterminatedClass(size_t open) const;  // at pos_, a newline or the end
  [[noreturn]] void FailUnexpected() const;                    // nothing can start an element at pos_
  size_t SkipSpaceFrom(size_t offset) const;                   // whitespace and # comments
  void SkipSpace() { pos_ = SkipSpaceFrom(pos_); }
  size_t NameEnd(size_t offset) const;
  bool RuleStartsAt(size_t offset) const;
  bool LookaheadStartsAt(size_t offset) const;
  void EnterNesting(size_t offset);

  // ---- Grammar structure ----
  void ParseRule();
  ExprId ParseChoice();
  ExprId ParseSequence();
  ExprId ParsePostfixed();
  ExprId ParseAtom();
  ExprId ParseGroup();
  ExprId ParseLookahead();
  ExprId ParseRuleRef();
  ExprId ParseTagDispatch();
  ExprId ParseTokenSet(bool excluded);
  ExprId ParseTokenTagDispatch();
  int32_t ParseTokenId(const std::string& macro);
  std::vector<int32_t> ParseTokenIds(const std::string& macro);
  ExprId ParseByteDfa();
  ExprId ParseAnyOrder();
  std::vector<AnyOrderPresenceRule> ParsePresenceRules();
  ExprId ParseRegexMacro();
  bool NextKeywordArgument(const std::string& macro, std::string* key, size_t* at);
  ExprId ParseSubstringMacro();
  ExprId WithoutJsonSpecialCharacters(ExprId regex);
  ExprId UnbuiltRegex(size_t open, const std::string& message);
  size_t AttributesEnd(size_t offset) const;
  RuleAttributes ParseAttributes(const std::string& rule_name);
  std::string ParseCaptureName(const std::string& key, const std::string& default_name);
  void ParseMarkerSplit(const std::string& key, RuleAttributes* attrs);
  char NextAfterBlanks() const;  // the next character after spaces and tabs ('\0' at the end)
  void SkipAttributeAssign(const std::string& key);
  int64_t ParseDfaNumber(int64_t max);
  std::string ParseStringBytes();
  bool ParseKeywordBool(const std::string& name = "");  // name: for the error
  void ParseBraces(int64_t* min, int64_t* max);
  int64_t ParseBound();
  void ReportBadRuleEnd() const;

  // ---- Literals ----
  ExprId ParseString();
  ExprId ParseCharClass();
  uint32_t ParseClassChar(size_t class_start);
  uint32_t ParseEscape();
  uint32_t ParseHexDigits(int count, size_t escape_start);
  uint32_t ReadLiteralCodepoint();

  // ---- Result assembly ----
  RuleId ScratchRule(const std::string& name);
  Grammar BuildResult(const std::string& root_rule_name) const;

  const std::string& text_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool in_lookahead_ = false;  // parsing a rule's lookahead assertion
  Grammar scratch_;
  std::vector<size_t> first_reference_;  // per scratch rule: offset of first reference
  // Per scratch rule: where an undefined first reference is reported (the TagDispatch
  // argument list holding it, as xgrammar, else the reference itself).
  std::vector<size_t> reported_reference_;
  size_t reference_anchor_ = static_cast<size_t>(-1);  // the enclosing TagDispatch's '(', if any
  std::vector<size_t> definition_;                     // per scratch rule: offset of its definition
  std::vector<RuleId> definition_order_;
  std::vector<std::pair<RuleId, RuleAttributes>> attributes_;  // scratch rules with attributes
};

}  // namespace xg2::ebnf
