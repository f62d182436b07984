// EBNF front end: a recursive-descent parser for the GBNF / XGrammar dialect.
//
//   grammar   ::= rule*
//   rule      ::= NAME attributes? "::=" choice lookahead?
//   attributes::= "[" ("lazy" | "max_chars" "=" n) ("," ...)* "]"    (xgrammar's rule attributes)  (ebnf_attributes.cc)
//   lookahead ::= "(" "=" choice ")"                 (only at the end of a rule body)
//   choice    ::= sequence ("|" sequence)*
//   sequence  ::= postfixed+                          (ends where "NAME ::=" starts a rule)
//   postfixed ::= atom ("*" | "+" | "?" | "{" n "}" | "{" n "," "}" | "{" n "," m "}")?
//   atom      ::= STRING | CLASS | "." | NAME | "(" choice ")" | "(" ")"
//               | Regex("pattern", flags="is") | Substring("chunk", ...)    (xgrammar's macros)
//               | Token(ids) | ExcludeToken(ids) | TokenTagDispatch(...)  (ebnf_token_macros.cc)
//
// The text is parsed into a scratch grammar whose rules are numbered by first mention, then
// copied into the result with rules renumbered by definition order. That keeps rule ids
// independent of forward references, so printing and re-parsing gives the same rule order.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "automata/byte_dfa_ops.h"
#include "automata/substring_dfa.h"
#include "frontends/regex.h"
#include "grammar/ebnf_parser_internal.h"
#include "grammar/rule_attributes.h"
#include "support/utf8.h"
#include "xg2/errors.h"
#include "xg2/grammar.h"
#include "xg2/limits.h"
#include "xg2/tokenizer.h"

namespace xg2 {

namespace {

// Bounds as large as the grammar holds (a JSON Schema's maxLength 4294967295 prints as one),
// so every grammar reads back from its printing.
constexpr int64_t kMaxRepeatBound = 1000000000000000000;
constexpr uint32_t kMaxCodepoint = 0x10FFFF;
constexpr size_t kNone = static_cast<size_t>(-1);

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsSurrogate(uint32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

// Length of the UTF-8 sequence introduced by lead byte c (the text is validated up front).
int Utf8SequenceLength(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) return 2;
  if ((c & 0xF0) == 0xE0) return 3;
  return 4;
}

}  // namespace

namespace ebnf {

// ---------------------------------------------------------------------------------------
// Cursor and diagnostics

std::pair<int, int> EbnfParser::LineColumn(size_t offset) const { return TextLineColumn(text_, offset); }

void EbnfParser::Fail(const std::string& message, size_t offset) const {
  std::pair<int, int> lc = LineColumn(offset);
  throw SyntaxError("EBNF parser", message, lc.first, lc.second);
}

void EbnfParser::FailLexer(const std::string& message, size_t offset) const {
  std::pair<int, int> lc = LineColumn(offset);
  throw SyntaxError("EBNF lexer", message, lc.first, lc.second);
}

// Reported where the class ends without ']', as xgrammar; the '[' that opened it is named too.
void EbnfParser::FailUnterminatedClass(size_t open) const {
  std::pair<int, int> lc = LineColumn(open);
  const std::string opened =
      "unterminated character class opened at " + std::to_string(lc.first) + ":" + std::to_string(lc.second);
  FailLexer(
      AtEnd() ? "Unterminated character class: " + opened : "Character class should not contain newline: " + opened,
      pos_);
}

// xgrammar's "but got X" shows the token's text; ours is one character, or "end of input".
std::string EbnfParser::LexemeAt(size_t offset) const {
  if (offset >= text_.size()) return "end of input";
  unsigned char c = static_cast<unsigned char>(text_[offset]);
  if (c >= 0x21 && c < 0x7F) return std::string(1, static_cast<char>(c));
  return DescribeCharAt(offset);
}

std::string EbnfParser::DescribeCharAt(size_t offset) const {
  if (offset >= text_.size()) return "end of input";
  unsigned char c = static_cast<unsigned char>(text_[offset]);
  if (c >= 0x21 && c < 0x7F) return std::string("character '") + static_cast<char>(c) + "'";
  static const char kHex[] = "0123456789ABCDEF";
  if (c < 0x80) return std::string("character 0x") + kHex[c >> 4] + kHex[c & 15];
  return "character '" + text_.substr(offset, Utf8SequenceLength(c)) + "'";
}

size_t EbnfParser::SkipSpaceFrom(size_t offset) const {
  while (offset < text_.size()) {
    char c = text_[offset];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++offset;
    } else if (c == '#') {
      while (offset < text_.size() && text_[offset] != '\n') ++offset;
    } else {
      break;
    }
  }
  return offset;
}

size_t EbnfParser::NameEnd(size_t offset) const {
  if (offset >= text_.size() || !IsNameStart(text_[offset])) return offset;
  ++offset;
  while (offset < text_.size() && IsNameChar(text_[offset])) ++offset;
  return offset;
}

bool EbnfParser::RuleStartsAt(size_t offset) const {
  size_t end = NameEnd(offset);
  if (end == offset) return false;
  end = AttributesEnd(end);
  return text_.compare(SkipSpaceFrom(end), 3, "::=") == 0;
}

bool EbnfParser::LookaheadStartsAt(size_t offset) const {
  if (offset >= text_.size() || text_[offset] != '(') return false;
  size_t next = SkipSpaceFrom(offset + 1);
  return next < text_.size() && text_[next] == '=';
}

void EbnfParser::EnterNesting(size_t offset) {
  // Parentheses and macro arguments.
  if (++depth_ > MaxNestingDepth()) {
    std::pair<int, int> lc = LineColumn(offset);
    throw Error(ErrorKind::kLimitExceeded, std::to_string(lc.first) + ":" + std::to_string(lc.second) +
                                               ": expressions nested deeper than " + std::to_string(MaxNestingDepth()) +
                                               " levels" + NestingLimitNote());
  }
}

// ---------------------------------------------------------------------------------------
// Grammar structure

Grammar EbnfParser::Parse(const std::string& root_rule_name) {
  int64_t invalid = FindInvalidUtf8(text_);
  if (invalid >= 0) FailLexer("Invalid UTF8 sequence in grammar text", static_cast<size_t>(invalid));
  if (text_.compare(0, 3, "\xEF\xBB\xBF") == 0) pos_ = 3;  // byte order mark
  SkipSpace();
  while (!AtEnd()) {
    ParseRule();
    SkipSpace();
  }
  return BuildResult(root_rule_name);
}

void EbnfParser::ParseRule() {
  size_t name_start = pos_;
  size_t name_end = NameEnd(pos_);
  if (name_end == name_start) {
    if (text_.compare(pos_, 3, "::=") == 0) {
      FailLexer("Assign should not be the first token: expected a rule name before '::='", pos_);
    }
    Fail("Expect rule name, found " + DescribeCharAt(pos_), pos_);
  }
  std::string name = text_.substr(name_start, name_end - name_start);
  pos_ = name_end;
  RuleAttributes attrs = ParseAttributes(name);
  SkipSpace();
  if (text_.compare(pos_, 3, "::=") != 0) {
    Fail("expected '::=' after rule name '" + name + "', found " + DescribeCharAt(pos_), pos_);
  }
  pos_ += 3;
  RuleId rule = ScratchRule(name);
  if (definition_[rule] != kNone) {
    std::pair<int, int> previous = LineColumn(definition_[rule]);
    Fail("Rule \"" + name + "\" is defined multiple times (first defined at " + std::to_string(previous.first) + ":" +
             std::to_string(previous.second) + ")",
         name_start);
  }
  definition_[rule] = name_start;
  definition_order_.push_back(rule);
  if (attrs.any() || attrs.split_body != kNoExpr) attributes_.push_back({rule, attrs});
  scratch_.SetRuleTemperature(rule, attrs.temperature);
  scratch_.SetRuleMaxTokens(rule, attrs.max_tokens);
  scratch_.SetRuleJsonChars(rule, attrs.json_min_chars, attrs.json_max_chars);
  scratch_.SetRuleCapture(rule, attrs.capture);
  scratch_.SetRuleEndOnly(rule, attrs.end_only);
  scratch_.SetRuleMarkerBefore(rule, attrs.marker_before);

  scratch_.SetRuleBody(rule, ParseChoice());
  SkipSpace();
  if (LookaheadStartsAt(pos_)) {
    scratch_.SetRuleLookahead(rule, ParseLookahead());
    SkipSpace();
    if (!AtEnd() && !RuleStartsAt(pos_)) {
      Fail("Expect rule name: a lookahead assertion must be the last element of a rule body", pos_);
    }
  }
  if (!AtEnd() && !RuleStartsAt(pos_)) ReportBadRuleEnd();
}

// Called where a rule body should end but does not; names the most likely mistake.
void EbnfParser::ReportBadRuleEnd() const {
  if (Peek() == ')') Fail("unbalanced ')'", pos_);
  FailUnexpected();
}

// An element was expected at pos_ but nothing can start one there.
void EbnfParser::FailUnexpected() const {
  if (text_.compare(pos_, 3, "::=") == 0) {
    FailLexer("Assign should be preceded by an identifier: unexpected '::=' (a rule starts with its name)", pos_);
  }
  Fail("unexpected " + DescribeCharAt(pos_), pos_);
}

ExprId EbnfParser::ParseChoice() {
  std::vector<ExprId> alternatives;
  alternatives.push_back(ParseSequence());
  SkipSpace();
  while (Peek() == '|') {
    ++pos_;
    alternatives.push_back(ParseSequence());
    SkipSpace();
  }
  if (alternatives.size() == 1) return alternatives[0];
  return scratch_.AddChoice(std::move(alternatives));
}

ExprId EbnfParser::ParseSequence() {
  std::vector<ExprId> items;
  for (;;) {
    SkipSpace();
    char c = Peek();
    if (AtEnd() || c == '|' || c == ')' || c == ',') break;
    if (LookaheadStartsAt(pos_) || RuleStartsAt(pos_)) break;
    items.push_back(ParsePostfixed());
  }
  // As in xgrammar, an alternative needs an element: the empty string is written "" (or ()).
  if (items.empty()) Fail("Expect element, but got " + LexemeAt(pos_) + " (write \"\" for the empty string)", pos_);
  if (items.size() == 1) return items[0];
  return scratch_.AddSequence(std::move(items));
}

ExprId EbnfParser::ParsePostfixed() {
  ExprId expr = ParseAtom();
  SkipSpace();
  int64_t min = 0, max = 0;
  char c = Peek();
  if (c == '*') {
    min = 0, max = kUnbounded, ++pos_;
  } else if (c == '+') {
    min = 1, max = kUnbounded, ++pos_;
  } else if (c == '?') {
    min = 0, max = 1, ++pos_;
  } else if (c == '{') {
    ParseBraces(&min, &max);
  } else {
    return expr;
  }
  SkipSpace();
  c = Peek();
  if (c == '*' || c == '+' || c == '?' || c == '{') {
    // As in xgrammar, one quantifier per element.
    Fail("Expect element, but got " + LexemeAt(pos_) + ": one quantifier per element (write (x*)? to stack them)",
         pos_);
  }
  return scratch_.AddRepeat(expr, min, max);
}

void EbnfParser::ParseBraces(int64_t* min, int64_t* max) {
  size_t open = pos_;
  ++pos_;
  SkipSpace();
  *min = ParseBound();
  SkipSpace();
  if (Peek() == ',') {
    ++pos_;
    SkipSpace();
    *max = Peek() == '}' ? kUnbounded : ParseBound();
    SkipSpace();
  } else {
    *max = *min;
  }
  if (Peek() != '}') Fail("expected '}' in repetition, found " + DescribeCharAt(pos_), pos_);
  ++pos_;
  if (*max != kUnbounded && *max < *min) {
    Fail("repetition upper bound " + std::to_string(*max) + " is less than lower bound " + std::to_string(*min), open);
  }
}

int64_t EbnfParser::ParseBound() {
  size_t start = pos_;
  if (!IsDigit(Peek())) Fail("expected a number, found " + DescribeCharAt(pos_), pos_);
  int64_t value = 0;
  while (IsDigit(Peek())) {
    const int digit = Peek() - '0';
    if (value > (kMaxRepeatBound - digit) / 10) {
      Fail("repetition bound exceeds " + std::to_string(kMaxRepeatBound), start);
    }
    value = value * 10 + digit;
    ++pos_;
  }
  return value;
}

ExprId EbnfParser::ParseAtom() {
  char c = Peek();
  if (c == '"' || c == '\'') return ParseString();
  if (c == '[') return ParseCharClass();
  if (c == '(') return ParseGroup();
  if (c == '.') {
    ++pos_;
    return scratch_.AddCharClass({}, /*negated=*/true);  // any code point
  }
  if (IsNameStart(c)) {
    static const std::string kDispatch = "TagDispatch(";
    if (text_.compare(pos_, kDispatch.size(), kDispatch) == 0) return ParseTagDispatch();
    static const std::string kByteDfa = "ByteDfa(";
    if (text_.compare(pos_, kByteDfa.size(), kByteDfa) == 0) return ParseByteDfa();
    static const std::string kAnyOrder = "AnyOrder(";
    if (text_.compare(pos_, kAnyOrder.size(), kAnyOrder) == 0) return ParseAnyOrder();
    static const std::string kRegex = "Regex(";
    if (text_.compare(pos_, kRegex.size(), kRegex) == 0) return ParseRegexMacro();
    static const std::string kSubstring = "Substring(";
    if (text_.compare(pos_, kSubstring.size(), kSubstring) == 0) return ParseSubstringMacro();
    static const std::string kToken = "Token(", kExcludeToken = "ExcludeToken(";
    if (text_.compare(pos_, kToken.size(), kToken) == 0) return ParseTokenSet(false);
    if (text_.compare(pos_, kExcludeToken.size(), kExcludeToken) == 0) return ParseTokenSet(true);
    static const std::string kTokenDispatch = "TokenTagDispatch(";
    if (text_.compare(pos_, kTokenDispatch.size(), kTokenDispatch) == 0) return ParseTokenTagDispatch();
    return ParseRuleRef();
  }
  FailUnexpected();
}

ExprId EbnfParser::ParseGroup() {
  size_t open = pos_;
  ++pos_;
  EnterNesting(open);
  if (SkipSpaceFrom(pos_) < text_.size() && text_[SkipSpaceFrom(pos_)] == ')') {  // "()": the empty string
    pos_ = SkipSpaceFrom(pos_) + 1;
    --depth_;
    return scratch_.AddEmpty();
  }
  ExprId inner = ParseChoice();
  SkipSpace();
  if (Peek() != ')') {
    if (LookaheadStartsAt(pos_)) {
      Fail("a lookahead assertion is only allowed at the end of a rule body", pos_);
    }
    Fail("unbalanced '(': missing ')'", open);
  }
  ++pos_;
  --depth_;
  return inner;
}

ExprId EbnfParser::ParseLookahead() {
  size_t open = pos_;
  pos_ = SkipSpaceFrom(pos_ + 1) + 1;  // past "(" and "="
  EnterNesting(open);
  in_lookahead_ = true;
  ExprId inner = ParseChoice();
  in_lookahead_ = false;
  SkipSpace();
  if (Peek() != ')') {
    if (LookaheadStartsAt(pos_)) Fail("lookahead assertions cannot be nested", pos_);
    Fail("unbalanced '(': missing ')' of lookahead assertion", open);
  }
  // As xgrammar: a lookahead is one sequence (it is a hint of what follows, see Rule).
  if (scratch_.expr(inner).kind == ExprKind::kChoice) {
    Fail("Choices in lookahead assertion are not supported yet: write one sequence", open);
  }
  ++pos_;
  --depth_;
  return inner;
}

ExprId EbnfParser::ParseRuleRef() {
  size_t start = pos_;
  pos_ = NameEnd(pos_);
  RuleId rule = ScratchRule(text_.substr(start, pos_ - start));
  if (first_reference_[rule] == kNone) {
    first_reference_[rule] = start;
    reported_reference_[rule] = reference_anchor_ == kNone ? start : reference_anchor_;
  }
  return scratch_.AddRuleRef(rule);
}

// ---------------------------------------------------------------------------------------
// Literals

// A decimal or 0x-prefixed hex number in [0, max].
int64_t EbnfParser::ParseDfaNumber(int64_t max) {
  SkipSpace();
  size_t start = pos_;
  int base = 10;
  if (Peek() == '0' && pos_ + 1 < text_.size() && (text_[pos_ + 1] == 'x' || text_[pos_ + 1] == 'X')) {
    base = 16;
    pos_ += 2;
  }
  auto digit = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (base == 16 && c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (base == 16 && c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (digit(Peek()) < 0) Fail("expected a number, found " + DescribeCharAt(pos_), pos_);
  int64_t value = 0;
  while (digit(Peek()) >= 0) {
    value = value * base + digit(Peek());
    if (value > max) Fail("number exceeds " + std::to_string(max), start);
    ++pos_;
  }
  return value;
}

// ByteDfa(states=N, final=(s, ...), edges=((from, lo, hi, to), ...)): the printer's form.
ExprId EbnfParser::ParseByteDfa() {
  size_t open = pos_;
  pos_ += std::string("ByteDfa(").size();
  constexpr int64_t kMaxStates = 1 << 24;
  auto expect = [&](const std::string& word) {
    SkipSpace();
    if (text_.compare(pos_, word.size(), word) != 0) Fail("expected '" + word + "' in ByteDfa", pos_);
    pos_ += word.size();
  };
  auto comma_or = [&](char close) {
    SkipSpace();
    if (Peek() == ',')
      ++pos_;
    else if (Peek() != close)
      Fail(std::string("expected ',' or '") + close + "' in ByteDfa", pos_);
  };
  expect("states");
  expect("=");
  int64_t n = ParseDfaNumber(kMaxStates);
  if (n == 0) Fail("a ByteDfa needs at least one state", open);
  ByteDfaSpec spec;
  spec.is_final.assign(n, 0);
  spec.edges.resize(n);
  // ", name=(": the start of a keyword's list.
  auto open_list = [&](const std::string& name) {
    for (const std::string& w : {std::string(","), name, std::string("="), std::string("(")}) expect(w);
  };
  open_list("final");
  for (;;) {
    SkipSpace();
    if (Peek() == ')') break;
    spec.is_final[ParseDfaNumber(n - 1)] = 1;
    comma_or(')');
  }
  ++pos_;
  open_list("edges");
  for (;;) {
    SkipSpace();
    if (Peek() == ')') break;
    size_t at = pos_;
    expect("(");
    int64_t from = ParseDfaNumber(n - 1);
    expect(",");
    int64_t lo = ParseDfaNumber(255);
    expect(",");
    int64_t hi = ParseDfaNumber(255);
    expect(",");
    int64_t to = ParseDfaNumber(n - 1);
    expect(")");
    auto& edges = spec.edges[from];
    if (lo > hi || (!edges.empty() && lo <= edges.back().hi))
      Fail("ByteDfa edges must be sorted, disjoint byte ranges", at);
    edges.push_back({static_cast<uint8_t>(lo), static_cast<uint8_t>(hi), static_cast<int32_t>(to)});
    comma_or(')');
  }
  ++pos_;
  expect(")");
  return scratch_.AddByteDfa(std::move(spec));
}

// TagDispatch(("trigger", continuation), ..., ends=("..."), excludes=("..."), loop=true,
// plain_end=true, at_least_one=false, max_chars=-1); the keyword arguments are optional.
//
// Misuse of the arguments (an empty or non-tuple element, an unknown keyword, an exclude that
// starts a trigger, an undefined continuation rule) is reported at the argument list's '(',
// as xgrammar does, with the exact place after the message.
ExprId EbnfParser::ParseTagDispatch() {
  size_t open = pos_;
  const size_t args_at = open + std::string("TagDispatch").size();
  pos_ = args_at + 1;
  EnterNesting(open);
  const size_t outer_anchor = reference_anchor_;
  reference_anchor_ = args_at;
  auto fail_argument = [&](const std::string& message, size_t at) {
    std::pair<int, int> lc = LineColumn(at);
    Fail(message + " (at line " + std::to_string(lc.first) + ", column " + std::to_string(lc.second) + ")", args_at);
  };
  TagDispatchSpec spec;
  std::vector<ExprId> children;
  auto string_list = [&](std::vector<std::string>* out) {
    SkipSpace();
    if (Peek() != '(') Fail("expected '(' starting a list of strings", pos_);
    ++pos_;
    for (;;) {
      SkipSpace();
      if (Peek() == ')') break;
      if (Peek() != '"' && Peek() != '\'') Fail("expected a string", pos_);
      size_t at = pos_;
      std::string bytes = ParseStringBytes();
      if (bytes.empty()) {
        fail_argument("Exclude must be a non-empty string literal: TagDispatch strings must not be empty", at);
      }
      out->push_back(std::move(bytes));
      SkipSpace();
      if (Peek() == ',')
        ++pos_;
      else if (Peek() != ')')
        Fail("expected ',' or ')'", pos_);
    }
    ++pos_;
  };
  for (;;) {
    SkipSpace();
    if (Peek() == ')') break;
    if (Peek() == '(') {
      size_t at = ++pos_;
      SkipSpace();
      if (Peek() != '"' && Peek() != '\'') Fail("expected the trigger string", pos_);
      std::string trigger = ParseStringBytes();
      if (trigger.empty())
        fail_argument("Tag must be a non-empty string literal: a TagDispatch trigger must not be empty", at);
      SkipSpace();
      if (Peek() != ',') Fail("Expect , or ) in tuple: expected ',' after the trigger", pos_);
      ++pos_;
      ExprId child = ParseChoice();
      SkipSpace();
      if (Peek() != ')') Fail("Expect , or ) in tuple: expected ')' closing the (trigger, continuation) pair", pos_);
      ++pos_;
      spec.triggers.push_back(std::move(trigger));
      children.push_back(child);
    } else if (IsNameStart(Peek())) {
      size_t at = pos_;
      pos_ = NameEnd(pos_);
      std::string key = text_.substr(at, pos_ - at);
      SkipSpace();
      if (Peek() != '=') Fail("expected '=' after '" + key + "'", pos_);
      ++pos_;
      if (key == "ends")
        string_list(&spec.ends);
      else if (key == "excludes")
        string_list(&spec.excludes);
      else if (key == "loop" || key == "loop_after_dispatch")  // the latter: xgrammar's name
        spec.loop = ParseKeywordBool();
      else if (key == "plain_end")
        spec.plain_end = ParseKeywordBool();
      else if (key == "at_least_one")
        spec.at_least_one = ParseKeywordBool();
      else if (key == "max_chars") {
        SkipSpace();
        bool negative = Peek() == '-';
        if (negative) ++pos_;
        int64_t v = ParseBound();
        spec.max_chars = negative ? (v == 1 ? -1 : -2) : v;
        if (spec.max_chars < -1) Fail("max_chars must be -1 or a count", at);
      } else {
        fail_argument("Unknown named argument for TagDispatch: " + key +
                          " (known: ends, excludes, loop, loop_after_dispatch, plain_end, at_least_one, max_chars)",
                      at);
      }
    } else {
      fail_argument(
          "Each tag dispatch element must be a tuple: expected a (trigger, continuation) pair or a keyword argument",
          pos_);
    }
    SkipSpace();
    if (Peek() == ',')
      ++pos_;
    else if (Peek() != ')')
      Fail("expected ',' or ')' in TagDispatch", pos_);
  }
  ++pos_;
  --depth_;
  reference_anchor_ = outer_anchor;
  // Excludes take precedence over triggers, so a trigger that starts with an exclude could
  // never fire; one that merely contains an exclude is left to that precedence, as xgrammar.
  for (const std::string& exclude : spec.excludes) {
    for (const std::string& trigger : spec.triggers) {
      if (trigger.compare(0, exclude.size(), exclude) == 0) {
        Fail("Exclude string must not be a prefix of trigger string: " + exclude + " (the trigger '" + trigger +
                 "' would never fire)",
             args_at);
      }
    }
  }
  return scratch_.AddTagDispatch(std::move(spec), std::move(children));
}

// AnyOrder(separator, required=(a, ...), optional=(...), repeated=(...), min=0, max=-1); the
// keyword arguments are optional and come in this order (the member order is the node's).
ExprId EbnfParser::ParseAnyOrder() {
  size_t open = pos_;
  pos_ += std::string("AnyOrder(").size();
  EnterNesting(open);
  AnyOrderSpec spec;
  std::vector<ExprId> children{ParseChoice()};
  std::vector<ExprId> lists[3];
  const char* kLists[3] = {"required", "optional", "repeated"};
  int next_list = 0;
  std::string key;
  size_t at = 0;
  while (NextKeywordArgument("AnyOrder", &key, &at)) {
    int list = -1;
    for (int i = 0; i < 3; ++i) {
      if (key == kLists[i]) list = i;
    }
    if (list >= 0) {
      if (list < next_list) Fail("AnyOrder lists come in the order required, optional, repeated", at);
      next_list = list + 1;
      if (Peek() != '(') Fail("expected '(' starting a list of members", pos_);
      ++pos_;
      for (;;) {
        SkipSpace();
        if (Peek() == ')') break;
        lists[list].push_back(ParseChoice());
        SkipSpace();
        if (Peek() == ',')
          ++pos_;
        else if (Peek() != ')')
          Fail("expected ',' or ')' in a member list", pos_);
      }
      ++pos_;
    } else if (key == "depends" && spec.presence.empty()) {
      spec.presence = ParsePresenceRules();
    } else if (key == "min" || key == "max") {
      bool negative = Peek() == '-';
      if (negative) ++pos_;
      int64_t v = ParseBound();
      if (negative && !(key == "max" && v == 1)) Fail("AnyOrder " + key + " must be a count (max may be -1)", at);
      (key == "min" ? spec.min_count : spec.max_count) = negative ? -1 : v;
    } else {
      Fail("unknown AnyOrder argument '" + key + "'", at);
    }
  }
  ++pos_;
  --depth_;
  spec.num_required = static_cast<int32_t>(lists[0].size());
  spec.num_optional = static_cast<int32_t>(lists[1].size());
  spec.num_repeated = static_cast<int32_t>(lists[2].size());
  if (spec.num_members() == 0) Fail("an AnyOrder needs at least one member", open);
  if (spec.max_count >= 0 && spec.max_count < spec.min_count) Fail("AnyOrder max is below min", open);
  for (const auto& l : lists) children.insert(children.end(), l.begin(), l.end());
  try {
    return scratch_.AddAnyOrder(spec, std::move(children));
  } catch (const Error& e) {
    Fail(e.what(), open);
  }
}

// depends=((member, (a, b, ...), (c, ...)), ...): member indices count the required, then the
// optional members (see AnyOrderPresenceRule).
std::vector<AnyOrderPresenceRule> EbnfParser::ParsePresenceRules() {
  auto expect = [&](char c) {
    SkipSpace();
    if (Peek() != c)
      Fail(std::string("expected '") + c + "' in AnyOrder depends=, found " + DescribeCharAt(pos_), pos_);
    ++pos_;
    SkipSpace();
  };
  auto at_close = [&]() {
    SkipSpace();
    if (Peek() == ')') return ++pos_, true;
    expect(',');
    return false;
  };
  auto index = [&]() { return static_cast<int32_t>(ParseBound()); };
  std::vector<AnyOrderPresenceRule> rules;
  expect('(');
  do {
    AnyOrderPresenceRule r;
    expect('(');
    r.member = index();
    while (!at_close()) {
      std::vector<int32_t> alt;
      expect('(');
      if (Peek() != ')') {
        do alt.push_back(index());
        while (!at_close());
      } else {
        ++pos_;
      }
      r.any_of.push_back(std::move(alt));
    }
    rules.push_back(std::move(r));
  } while (!at_close());
  return rules;
}

// Regex("pattern") (xgrammar: `.` matches any code point) or Regex("pattern", flags="is")
// (`.` stops at \n unless s; i folds ASCII case); json_string=true keeps the matches a JSON string
// holds unescaped.
ExprId EbnfParser::ParseRegexMacro() {
  size_t open = pos_;
  pos_ += std::string("Regex(").size();
  SkipSpace();
  if (Peek() == ')') Fail("Regex expects exactly one string argument (the pattern)", pos_);
  if (Peek() != '"' && Peek() != '\'') Fail("Regex pattern must be a string literal", pos_);
  std::string pattern = ParseStringBytes();
  SkipSpace();
  if (Peek() == ',') {  // a second positional argument
    size_t next = pos_ + 1;
    while (next < text_.size() && (text_[next] == ' ' || text_[next] == '\t' || text_[next] == '\n')) ++next;
    if (next < text_.size() && (text_[next] == '"' || text_[next] == '\''))
      Fail("Regex expects exactly one string argument (the pattern)", next);
  }
  RegexOptions options;
  options.dot_all = true;
  bool json_string = false;
  std::string key;
  size_t at = 0;
  while (NextKeywordArgument("Regex", &key, &at)) {
    if (key == "json_string") {
      json_string = ParseKeywordBool("json_string");
    } else if (key == "flags") {
      if (Peek() != '"' && Peek() != '\'') Fail("flags must be a string", pos_);
      std::string flags = ParseStringBytes();
      options.dot_all = false;
      options.dot_excludes_newline_only = true;
      for (char f : flags) {
        if (f == 'i')
          options.ascii_case_insensitive = true;
        else if (f == 's')
          options.dot_all = true;
        else if (f != 'u')
          Fail(std::string("regular-expression flag '") + f + "' is not supported", at);
      }
    } else {
      Fail("Regex does not support the named argument " + key + " (only flags and json_string)", at);
    }
  }
  ++pos_;
  try {
    pattern = AdaptPythonRegex(pattern, &options);
    ExprId regex = RegexToExpr(&scratch_, pattern, options);
    return json_string ? WithoutJsonSpecialCharacters(regex) : regex;
  } catch (const SyntaxError& e) {
    std::string what = e.what();
    size_t colon = what.find(": ");
    return UnbuiltRegex(open, "in Regex pattern at character " + std::to_string(e.column()) + ": " +
                                  (colon == std::string::npos ? what : what.substr(colon + 2)));
  }
}

// A pattern that does not compile is reported when the grammar is compiled, as xgrammar
// reports it (the grammar reads, prints and combines; GrammarCompiler refuses it): a stand-in
// automaton that keeps the macro's text and the error.
ExprId EbnfParser::UnbuiltRegex(size_t open, const std::string& message) {
  std::pair<int, int> lc = LineColumn(open);
  auto spec = std::make_shared<ByteDfaSpec>();
  spec->is_final = {0};
  spec->edges = {{}};
  spec->unbuilt_source = text_.substr(open, pos_ - open);
  spec->unbuilt_error = SyntaxError("EBNF parser", message, lc.first, lc.second).what();
  spec->unbuilt_line = lc.first;
  spec->unbuilt_column = lc.second;
  return scratch_.AddByteDfa(std::shared_ptr<const ByteDfaSpec>(std::move(spec)));
}

// json_string=true: the strings of `regex` that hold no '"', '\\' or control character (below
// U+0020), so the match can stand unescaped inside a JSON string literal. One automaton: the
// product of the regex's with the strings free of those characters.
ExprId EbnfParser::WithoutJsonSpecialCharacters(ExprId regex) {
  constexpr int64_t kMaxStates = 200000;
  ExprId plain = scratch_.AddRepeat(scratch_.AddCharClass({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}, true), 0, kUnbounded);
  ByteDfaProduct product = ProductWithParts(ByteDfaOfExpr(scratch_, plain, kMaxStates),
                                            {ByteDfaOfExpr(scratch_, regex, kMaxStates)}, kMaxStates);
  return scratch_.AddByteDfa(TrimAndMinimize(SelectByParts(std::move(product), 1, 1)));
}

// Substring("chunk", ...): any run of consecutive chunks, the empty one included.
ExprId EbnfParser::ParseSubstringMacro() {
  if (in_lookahead_) Fail("Substring should not be in lookahead assertion", pos_);
  pos_ += std::string("Substring(").size();
  std::vector<std::string> chunks;
  for (;;) {
    SkipSpace();
    if (Peek() == ')') break;
    if (IsNameStart(Peek()) && text_[SkipSpaceFrom(NameEnd(pos_))] == '=') {
      Fail("Substring() does not accept named arguments: its arguments are the chunks, as strings", pos_);
    }
    if (Peek() != '"' && Peek() != '\'') Fail("Substring() arguments must be strings", pos_);
    chunks.push_back(ParseStringBytes());
    SkipSpace();
    if (Peek() == ',')
      ++pos_;
    else if (Peek() != ')')
      Fail("expected ',' or ')' in Substring", pos_);
  }
  ++pos_;
  return scratch_.AddByteDfa(SubstringDfa(chunks));
}

// In a macro's argument list: false at its ')'; otherwise reads ", key =" (the key starts at *at).
bool EbnfParser::NextKeywordArgument(const std::string& macro, std::string* key, size_t* at) {
  SkipSpace();
  if (Peek() == ')') return false;
  if (Peek() != ',') Fail("expected ',' or ')' in " + macro, pos_);
  ++pos_;
  SkipSpace();
  *at = pos_;
  if (!IsNameStart(Peek())) Fail("expected a keyword argument in " + macro, pos_);
  pos_ = NameEnd(pos_);
  *key = text_.substr(*at, pos_ - *at);
  SkipSpace();
  if (Peek() != '=') Fail("expected '=' after '" + *key + "'", pos_);
  ++pos_;
  SkipSpace();
  return true;
}

bool EbnfParser::ParseKeywordBool(const std::string& name) {
  SkipSpace();
  if (text_.compare(pos_, 4, "true") == 0) {
    pos_ += 4;
    return true;
  }
  if (text_.compare(pos_, 5, "false") == 0) {
    pos_ += 5;
    return false;
  }
  Fail(name.empty() ? std::string("expected true or false") : name + " must be a boolean (true or false)", pos_);
}

ExprId EbnfParser::ParseString() {
  std::string bytes = ParseStringBytes();
  if (bytes.empty()) return scratch_.AddEmpty();
  return scratch_.AddBytes(std::move(bytes));
}

std::string EbnfParser::ParseStringBytes() {
  size_t open = pos_;
  char quote = text_[pos_++];
  std::string bytes;
  for (;;) {
    if (AtEnd() || Peek() == '\n') {
      // Where the closing quote was expected, as xgrammar; the opening one is named too.
      std::pair<int, int> lc = LineColumn(open);
      FailLexer("Expect \" in string literal: unterminated string literal opened at " + std::to_string(lc.first) + ":" +
                    std::to_string(lc.second),
                pos_);
    }
    char c = Peek();
    if (c == quote) {
      ++pos_;
      break;
    }
    if (c == '\\' && Peek(1) == '<') {  // \<id>: a special token (see VirtualTokenBytes)
      size_t escape_start = pos_;
      pos_ += 2;
      int64_t id = ParseBound();
      if (Peek() != '>' || id >= (int64_t{1} << 24)) Fail("a token escape is \\<id> with id below 2^24", escape_start);
      ++pos_;
      bytes += VirtualTokenBytes(static_cast<int32_t>(id));
    } else if (c == '\\') {
      size_t escape_start = pos_;
      uint32_t cp = ParseEscape();
      if (IsSurrogate(cp))
        FailLexer("Invalid escape sequence: a surrogate code point cannot appear in a string", escape_start);
      AppendUtf8(cp, &bytes);
    } else {
      size_t length = Utf8SequenceLength(static_cast<unsigned char>(c));
      bytes.append(text_, pos_, length);
      pos_ += length;
    }
  }
  return bytes;
}

ExprId EbnfParser::ParseCharClass() {
  size_t open = pos_;
  ++pos_;
  bool negated = false;
  if (Peek() == '^') {
    negated = true;
    ++pos_;
  }
  std::vector<CodepointRange> ranges;
  for (;;) {
    if (AtEnd() || Peek() == '\n') FailUnterminatedClass(open);
    if (Peek() == ']') {
      ++pos_;
      break;
    }
    size_t range_start = pos_;
    uint32_t lo = ParseClassChar(open);
    uint32_t hi = lo;
    // A '-' right before ']' is a literal dash, as in [+-].
    if (Peek() == '-' && Peek(1) != ']' && pos_ + 1 < text_.size()) {
      ++pos_;
      hi = ParseClassChar(open);
      if (hi < lo) Fail("Invalid character class: lower bound is larger than upper bound", range_start);
    }
    ranges.push_back(CodepointRange{lo, hi});
  }
  return scratch_.AddCharClass(std::move(ranges), negated);
}

uint32_t EbnfParser::ParseClassChar(size_t class_start) {
  if (AtEnd() || Peek() == '\n') FailUnterminatedClass(class_start);
  if (Peek() == '\\') return ParseEscape();
  return ReadLiteralCodepoint();
}

uint32_t EbnfParser::ParseEscape() {
  size_t start = pos_;
  ++pos_;  // the backslash
  if (AtEnd() || Peek() == '\n') FailLexer("Invalid escape sequence: incomplete", start);
  char c = Peek();
  ++pos_;
  // C's escapes (xgrammar reads these too), plus \e for ESC.
  switch (c) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case '0': return 0;
    case 'a': return 0x07;
    case 'b': return 0x08;
    case 'f': return 0x0C;
    case 'v': return 0x0B;
    case 'e': return 0x1B;
    case '?':
    case '\\':
    case '"':
    case '\'':
    case '[':
    case ']':
    case '-':
    case '/':
    case '^': return static_cast<unsigned char>(c);
    case 'x': return ParseHexDigits(2, start);
    case 'u': return ParseHexDigits(4, start);
    case 'U': return ParseHexDigits(8, start);
    default: FailLexer("Invalid escape sequence: backslash followed by " + DescribeCharAt(pos_ - 1), start);
  }
}

uint32_t EbnfParser::ParseHexDigits(int count, size_t escape_start) {
  uint64_t value = 0;
  for (int i = 0; i < count; ++i) {
    int digit = HexValue(Peek());
    if (digit < 0) {
      FailLexer("Invalid escape sequence: expected " + std::to_string(count) + " hex digits", escape_start);
    }
    value = value * 16 + static_cast<uint64_t>(digit);
    ++pos_;
  }
  if (value > kMaxCodepoint)
    FailLexer("Invalid escape sequence: code point out of range (above U+10FFFF)", escape_start);
  return static_cast<uint32_t>(value);
}

uint32_t EbnfParser::ReadLiteralCodepoint() {
  unsigned char lead = static_cast<unsigned char>(text_[pos_]);
  int length = Utf8SequenceLength(lead);
  static const unsigned char kLeadMask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  uint32_t cp = lead & kLeadMask[length];
  for (int i = 1; i < length; ++i) {
    cp = (cp << 6) | (static_cast<unsigned char>(text_[pos_ + i]) & 0x3F);
  }
  pos_ += length;
  return cp;
}

// ---------------------------------------------------------------------------------------
// Result assembly

RuleId EbnfParser::ScratchRule(const std::string& name) {
  RuleId rule = scratch_.FindRule(name);
  if (rule >= 0) return rule;
  rule = scratch_.DeclareRule(name);  // a valid identifier, so stored unchanged
  first_reference_.push_back(kNone);
  reported_reference_.push_back(kNone);
  definition_.push_back(kNone);
  return rule;
}

Grammar EbnfParser::BuildResult(const std::string& root_rule_name) const {
  // Report the earliest reference to a rule that is never defined.
  size_t earliest = kNone;
  RuleId undefined = -1;
  for (RuleId r = 0; r < scratch_.num_rules(); ++r) {
    if (definition_[r] == kNone && first_reference_[r] < earliest) {
      earliest = first_reference_[r];
      undefined = r;
    }
  }
  if (undefined >= 0) {
    std::string message = "Rule \"" + scratch_.rule(undefined).name + "\" is not defined";
    const size_t reported = reported_reference_[undefined];
    if (reported != earliest) {
      std::pair<int, int> lc = LineColumn(earliest);
      message += " (referenced at line " + std::to_string(lc.first) + ", column " + std::to_string(lc.second) + ")";
    }
    Fail(message, reported);
  }

  RuleId scratch_root = scratch_.FindRule(root_rule_name);
  if (scratch_root < 0) {
    // Not a syntax error (no place in the text is wrong): a semantic error, placed where the
    // grammar starts, in xgrammar's words.
    throw Error(ErrorKind::kGrammarSemantic, "EBNF parser error at line 1, column 1: The root rule with name \"" +
                                                 root_rule_name + "\" is not found");
  }

  Grammar result;
  std::vector<RuleId> renumbered(scratch_.num_rules(), -1);
  for (RuleId r : definition_order_) renumbered[r] = result.DeclareRule(scratch_.rule(r).name);
  // Copying in arena order keeps children before parents; ids are mapped (equal nodes fold).
  std::vector<ExprId> map(scratch_.num_exprs(), kNoExpr);
  auto mapped = [&](const std::vector<ExprId>& ids) {
    std::vector<ExprId> out(ids);
    for (ExprId& id : out) id = map[id];
    return out;
  };
  for (ExprId id = 0; id < scratch_.num_exprs(); ++id) {
    const Expr& e = scratch_.expr(id);
    ExprId out = kNoExpr;
    switch (e.kind) {
      case ExprKind::kEmpty: out = result.AddEmpty(); break;
      case ExprKind::kBytes: out = result.AddBytes(e.bytes); break;
      case ExprKind::kCharClass: out = result.AddCharClass(e.ranges, e.negated); break;
      case ExprKind::kSequence: out = result.AddSequence(mapped(e.children)); break;
      case ExprKind::kChoice: out = result.AddChoice(mapped(e.children)); break;
      case ExprKind::kRuleRef: out = result.AddRuleRef(renumbered[e.rule]); break;
      case ExprKind::kRepeat: out = result.AddRepeat(map[e.children[0]], e.min, e.max); break;
      case ExprKind::kTagDispatch: out = result.AddTagDispatch(*e.dispatch, mapped(e.children)); break;
      case ExprKind::kByteDfa: out = result.AddByteDfa(e.dfa); break;
      case ExprKind::kAnyOrder: out = result.AddAnyOrder(*e.any_order, mapped(e.children)); break;
    }
    map[id] = out;
  }
  for (RuleId r : definition_order_) {
    if (scratch_.rule(r).body != kNoExpr) result.SetRuleBody(renumbered[r], map[scratch_.rule(r).body]);
    if (scratch_.rule(r).lookahead != kNoExpr) {
      result.SetRuleLookahead(renumbered[r], map[scratch_.rule(r).lookahead]);
    }
    result.SetRuleTemperature(renumbered[r], scratch_.rule(r).temperature);
    result.SetRuleMaxTokens(renumbered[r], scratch_.rule(r).max_tokens);
    result.SetRuleJsonChars(renumbered[r], scratch_.rule(r).json_min_chars, scratch_.rule(r).json_max_chars);
    result.SetRuleCapture(renumbered[r], scratch_.rule(r).capture);
    result.SetRuleEndOnly(renumbered[r], scratch_.rule(r).end_only);
    result.SetRuleMarkerBefore(renumbered[r], scratch_.rule(r).marker_before);
  }
  for (const auto& [rule, attrs] : attributes_) {
    try {
      if (attrs.split_body != kNoExpr) {
        SetMarkerSplit(&result, renumbered[rule], map[attrs.split_body], map[attrs.split_marker], attrs.hides_marker,
                       attrs.stop_capture, attrs.whole_capture);
      }
      ApplyRuleAttributes(&result, renumbered[rule], attrs);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kGrammarSemantic) throw;
      Fail(e.what(), definition_[rule]);
    }
  }
  result.set_root(renumbered[scratch_root]);
  return result;
}

}  // namespace ebnf

Grammar ParseEbnf(const std::string& text, const std::string& root_rule_name) {
  return WithDeepStack([&] { return ebnf::EbnfParser(text).Parse(root_rule_name); });
}

}  // namespace xg2
