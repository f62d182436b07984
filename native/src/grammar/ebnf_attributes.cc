// EBNF rule attributes (xgrammar's): `name[lazy, max_chars=N, max_tokens=N, capture="n",
// temperature=T] ::= ...`, and xg2-jax's stop=/suffix= split of a suffix/stop rule with its
// stop_capture (see MarkerSplit), which printing writes so that the text reads back whole.
#include <climits>
#include <cstdint>
#include <string>

#include "grammar/ebnf_parser_internal.h"
#include "grammar/rule_attributes.h"
#include "xg2/grammar.h"

namespace xg2::ebnf {

// After "name", the end of an attribute block "[...]" followed by "::=" (as in xgrammar, a
// bracket group is a block only then; otherwise it is a character class); offset if none.
size_t EbnfParser::AttributesEnd(size_t offset) const {
  if (offset >= text_.size() || text_[offset] != '[') return offset;
  // One line; a stop=/suffix= split's expressions may hold strings and character classes.
  size_t close = offset + 1;
  char quote = 0;
  for (int depth = 1; depth > 0; ++close) {
    if (close >= text_.size() || text_[close] == '\n') return offset;
    const char c = text_[close];
    if (c == '\\') {
      ++close;
    } else if (quote != 0) {
      quote = c == quote ? 0 : quote;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else {
      depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    }
  }
  --close;  // the block's ']'
  size_t after = close + 1;
  while (after < text_.size() && (text_[after] == ' ' || text_[after] == '\t')) ++after;
  return text_.compare(after, 3, "::=") == 0 ? close + 1 : offset;
}

// The " = " between an attribute's key and its value.
void EbnfParser::SkipAttributeAssign(const std::string& key) {
  while (Peek() == ' ' || Peek() == '\t') ++pos_;
  if (Peek() != '=') Fail("expected '=' after " + key, pos_);
  ++pos_;
  while (Peek() == ' ' || Peek() == '\t') ++pos_;
}

RuleAttributes EbnfParser::ParseAttributes(const std::string& rule_name) {
  RuleAttributes attrs;
  size_t end = AttributesEnd(pos_);
  if (end == pos_) return attrs;
  ++pos_;
  bool seen_lazy = false, seen_max_chars = false, seen_temperature = false, seen_max_tokens = false;
  bool seen_capture = false, seen_stop_capture = false, seen_json_chars = false;
  size_t stop_capture_at = pos_;
  for (;;) {
    while (Peek() == ' ' || Peek() == '\t') ++pos_;
    size_t at = pos_;
    pos_ = NameEnd(pos_);
    std::string key = text_.substr(at, pos_ - at);
    if (key == "lazy" && attrs.split_body == kNoExpr && NextAfterBlanks() == '=') {
      ParseMarkerSplit(key, &attrs);
    } else if (key == "end_only" && !attrs.end_only) {
      attrs.end_only = true;
    } else if ((key == "trigger_stop" || key == "trigger_suffix") && attrs.marker_before.length == 0) {
      SkipAttributeAssign(key);
      const int64_t length = ParseBound();
      if (length <= 0 || length > INT32_MAX) Fail(key + " must be a positive byte count", at);
      attrs.marker_before.length = static_cast<int32_t>(length);
      attrs.marker_before.hides = key == "trigger_stop";
    } else if (key == "trigger_capture" && attrs.marker_before.capture.empty()) {
      attrs.marker_before.capture = ParseCaptureName(key, "");
    } else if (key == "lazy" && !seen_lazy) {
      seen_lazy = attrs.lazy = true;
    } else if (key == "max_chars" && !seen_max_chars) {
      seen_max_chars = true;
      SkipAttributeAssign(key);
      attrs.max_chars = ParseBound();
    } else if (key == "max_tokens" && !seen_max_tokens) {
      seen_max_tokens = true;
      SkipAttributeAssign(key);
      const size_t value_at = pos_;
      if (!IsDigit(Peek())) Fail("expected a number after max_tokens=, found " + DescribeCharAt(pos_), pos_);
      int64_t value = 0;
      for (; IsDigit(Peek()); ++pos_) {
        value = value * 10 + (Peek() - '0');
        if (value > INT32_MAX) Fail("max_tokens must be at most 2147483647", value_at);
      }
      attrs.max_tokens = value;
    } else if (key == "json_chars" && !seen_json_chars) {
      seen_json_chars = true;
      SkipAttributeAssign(key);
      const size_t value_at = pos_;
      attrs.json_min_chars = ParseBound();
      if (text_.compare(pos_, 2, "..") != 0)
        Fail("expected '..' in json_chars=MIN..MAX, found " + DescribeCharAt(pos_), pos_);
      pos_ += 2;
      attrs.json_max_chars = IsDigit(Peek()) ? ParseBound() : Rule::kNoCharBudget;
      if (attrs.json_max_chars != Rule::kNoCharBudget && attrs.json_max_chars < attrs.json_min_chars) {
        Fail("json_chars=MIN..MAX needs MIN <= MAX", value_at);
      }
    } else if (key == "temperature" && !seen_temperature) {
      seen_temperature = true;
      SkipAttributeAssign(key);
      size_t length = TemperatureLiteralLength(text_, pos_);
      // xgrammar reads a block that is not attributes as a character class, then finds "::="
      // after it: its phrase comes first.
      if (length == 0) {
        Fail("Assign should be preceded by an identifier: expected a number after temperature=, found " +
                 DescribeCharAt(pos_),
             pos_);
      }
      if (!ParseTemperatureLiteral(text_.substr(pos_, length), &attrs.temperature)) {
        Fail("temperature must be a finite non-negative number, found " + text_.substr(pos_, length), pos_);
      }
      pos_ += length;
    } else if (key == "capture" && !seen_capture) {
      seen_capture = true;
      attrs.capture = ParseCaptureName(key, rule_name);
    } else if ((key == "stop" || key == "suffix") && attrs.split_body == kNoExpr) {
      ParseMarkerSplit(key, &attrs);
    } else if (key == "stop_capture" && !seen_stop_capture) {
      seen_stop_capture = true;
      stop_capture_at = at;
      attrs.stop_capture = ParseCaptureName(key, "");
    } else if (key == "lazy" || key == "end_only" || key == "max_chars" || key == "temperature" ||
               key == "json_chars" || key == "max_tokens" || key == "capture" || key == "stop" || key == "suffix" ||
               key == "stop_capture" || key == "trigger_stop" || key == "trigger_suffix" || key == "trigger_capture") {
      Fail("rule attribute '" + key + "' is given twice", at);
    } else if (key.empty()) {
      Fail("expected a rule attribute, found " + DescribeCharAt(at), at);
    } else {
      Fail("rule attribute '" + key +
               "' is not supported (supported: capture, end_only, json_chars, lazy, max_chars, max_tokens, stop, "
               "stop_capture, "
               "suffix, temperature, trigger_capture, trigger_stop, trigger_suffix)",
           at);
    }
    while (Peek() == ' ' || Peek() == '\t') ++pos_;
    if (Peek() == ',') {
      ++pos_;
      continue;
    }
    if (Peek() != ']') Fail("expected ',' or ']' in rule attributes, found " + DescribeCharAt(pos_), pos_);
    ++pos_;
    if (!attrs.marker_before.capture.empty() && attrs.marker_before.length == 0) {
      Fail("trigger_capture requires trigger_stop or trigger_suffix", pos_ - 1);
    }
    if (!attrs.stop_capture.empty() && (attrs.split_body == kNoExpr || attrs.whole_capture)) {
      Fail("stop_capture requires stop or suffix", stop_capture_at);
    }
    return attrs;
  }
}

char EbnfParser::NextAfterBlanks() const {
  size_t i = pos_;
  while (i < text_.size() && (text_[i] == ' ' || text_[i] == '\t')) ++i;
  return i < text_.size() ? text_[i] : '\0';
}

// After `stop`, `suffix` or `lazy` (key): `=(body, marker)`, the rule's split (see MarkerSplit).
void EbnfParser::ParseMarkerSplit(const std::string& key, RuleAttributes* attrs) {
  SkipAttributeAssign(key);
  if (Peek() != '(') Fail("expected '(' after " + key + "=, found " + DescribeCharAt(pos_), pos_);
  ++pos_;
  attrs->split_body = ParseChoice();
  SkipSpace();
  if (Peek() != ',') Fail("expected ',' between the body and the marker of " + key + "=", pos_);
  ++pos_;
  attrs->split_marker = ParseChoice();
  SkipSpace();
  if (Peek() != ')') Fail("expected ')' after the marker of " + key + "=", pos_);
  ++pos_;
  attrs->hides_marker = key == "stop";
  attrs->whole_capture = key == "lazy";
}

// After `capture` or `stop_capture` (key): `="name"`, or for capture nothing (default_name,
// the rule's own name).
std::string EbnfParser::ParseCaptureName(const std::string& key, const std::string& default_name) {
  const size_t key_at = pos_;
  while (Peek() == ' ' || Peek() == '\t') ++pos_;
  std::string name = default_name;
  size_t at = key_at;
  if (Peek() == '=' || default_name.empty()) {
    SkipAttributeAssign(key);
    at = pos_;
    if (Peek() != '"') Fail("expected a quoted name after " + key + "=, found " + DescribeCharAt(pos_), pos_);
    const size_t close = text_.find_first_of("\"\n", pos_ + 1);
    if (close == std::string::npos || text_[close] != '"') Fail("unterminated capture name", at);
    name = text_.substr(pos_ + 1, close - pos_ - 1);
    pos_ = close + 1;
  }
  const std::string why = CaptureNameError(name);
  if (!why.empty()) Fail(why, at);
  return name;
}

}  // namespace xg2::ebnf
