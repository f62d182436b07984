// The EBNF parser's token-level macros (xgrammar 0.2.9): Token(ids...), ExcludeToken(ids...)
// and TokenTagDispatch(...), each lowered to token sets (grammar/token_set.h).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "grammar/ebnf_parser_internal.h"
#include "grammar/token_set.h"
#include "xg2/grammar.h"

namespace xg2::ebnf {

// Token(id, ...) / ExcludeToken(id, ...): one token by id (see grammar/token_set.h).
// ExcludeToken() is any one token (xgrammar prints the structural tags' exclude_token and
// any_tokens without exclusions so); Token() would match nothing and is refused.
ExprId EbnfParser::ParseTokenSet(bool excluded) {
  const size_t open = pos_;
  const std::string macro = excluded ? "ExcludeToken" : "Token";
  pos_ += macro.size() + 1;
  std::vector<int32_t> ids = ParseTokenIds(macro);
  if (ids.empty() && !excluded) Fail(macro + "(...) needs at least one token id", open);
  return scratch_.AddByteDfa(TokenSetDfa(std::move(ids), excluded));
}

// A token id: a decimal integer in [0, INT32_MAX] (checked against the vocabulary when compiled).
int32_t EbnfParser::ParseTokenId(const std::string& macro) {
  const size_t at = pos_;
  if (!IsDigit(Peek())) {
    Fail(macro + " takes token ids (non-negative integers), found " + DescribeCharAt(pos_), pos_);
  }
  int64_t id = 0;
  while (IsDigit(Peek())) {
    id = id * 10 + (Peek() - '0');
    if (id > INT32_MAX) Fail("token id exceeds " + std::to_string(INT32_MAX), at);
    ++pos_;
  }
  return static_cast<int32_t>(id);
}

// Token ids separated by commas (a trailing one allowed), through the closing ')'.
std::vector<int32_t> EbnfParser::ParseTokenIds(const std::string& macro) {
  std::vector<int32_t> ids;
  for (;;) {
    SkipSpace();
    if (Peek() == ')') break;
    ids.push_back(ParseTokenId(macro));
    SkipSpace();
    if (Peek() == ',') {
      ++pos_;
    } else if (Peek() != ')') {
      Fail("expected ',' or ')' in " + macro + ", found " + DescribeCharAt(pos_), pos_);
    }
  }
  ++pos_;
  return ids;
}

// TokenTagDispatch((id, rule), ..., loop_after_dispatch=true, excludes=(id, ...)): free tokens
// (any but the triggers and the excluded), where a trigger token is followed by its rule; after
// it, free tokens again (loop) or the end (lowered by AddTokenTagDispatch).
ExprId EbnfParser::ParseTokenTagDispatch() {
  const size_t open = pos_;
  pos_ += std::string("TokenTagDispatch(").size();
  EnterNesting(open);
  std::vector<std::pair<int32_t, ExprId>> dispatches;
  std::vector<int32_t> excludes;
  bool loop = true;
  for (;;) {
    SkipSpace();
    if (Peek() == ')') break;
    if (Peek() == '(') {
      ++pos_;
      SkipSpace();
      const int32_t trigger = ParseTokenId("a TokenTagDispatch trigger");
      SkipSpace();
      if (Peek() != ',') Fail("expected ',' after the trigger token id", pos_);
      ++pos_;
      SkipSpace();
      if (!IsNameStart(Peek())) Fail("expected the name of the rule to dispatch to", pos_);
      ExprId rule = ParseRuleRef();
      SkipSpace();
      if (Peek() != ')') Fail("expected ')' closing the (token id, rule) pair", pos_);
      ++pos_;
      dispatches.emplace_back(trigger, rule);
    } else if (IsNameStart(Peek())) {
      const size_t at = pos_;
      pos_ = NameEnd(pos_);
      const std::string key = text_.substr(at, pos_ - at);
      SkipSpace();
      if (Peek() != '=') Fail("expected '=' after '" + key + "'", pos_);
      ++pos_;
      SkipSpace();
      if (key == "loop_after_dispatch") {
        loop = ParseKeywordBool(key);
      } else if (key == "excludes") {
        if (Peek() != '(') Fail("expected '(' starting the excluded token ids", pos_);
        ++pos_;
        excludes = ParseTokenIds("excludes");
      } else {
        Fail("unknown TokenTagDispatch argument '" + key + "'", at);
      }
    } else {
      Fail("expected a (token id, rule) pair or a keyword argument, found " + DescribeCharAt(pos_), pos_);
    }
    SkipSpace();
    if (Peek() == ',') {
      ++pos_;
    } else if (Peek() != ')') {
      Fail("expected ',' or ')' in TokenTagDispatch, found " + DescribeCharAt(pos_), pos_);
    }
  }
  ++pos_;
  --depth_;
  for (const auto& dispatch : dispatches) {
    const int32_t trigger = dispatch.first;
    if (std::find(excludes.begin(), excludes.end(), trigger) != excludes.end()) {
      Fail("TokenTagDispatch trigger token " + std::to_string(trigger) + " is also excluded", open);
    }
  }
  return AddTokenTagDispatch(&scratch_, dispatches, std::move(excludes), loop);
}

}  // namespace xg2::ebnf
