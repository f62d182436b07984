// Tests of the regex front end: the IR it builds, its errors (kind, message, column), limits,
// search semantics, and a fuzz loop that only typed errors come out of arbitrary input.
// A standalone executable: prints each failure and exits non-zero if any check failed.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "frontends/regex.h"
#include "xg2/errors.h"
#include "xg2/grammar.h"

using namespace xg2;

namespace {

// Converts a pattern, reporting (not propagating) an unexpected error.
bool TryConvert(const std::string& pattern, Grammar* out, const RegexOptions& options = RegexOptions()) {
  try {
    *out = RegexToGrammar(pattern, options);
    return true;
  } catch (const std::exception& e) {
    std::printf("FAIL unexpected error: %s\n  pattern: %s\n", e.what(), pattern.c_str());
    ++g_failures;
    return false;
  }
}

const Expr& RootBody(const Grammar& g) { return g.expr(g.rule(g.root()).body); }

// The root rule's body printed as EBNF (the text after "root ::= ").
std::string Body(const std::string& pattern, const RegexOptions& options = RegexOptions()) {
  Grammar g;
  if (!TryConvert(pattern, &g, options)) return "<error>";
  std::string text = g.ToEbnf();
  const std::string head = "root ::= ";
  if (text.compare(0, head.size(), head) != 0) return "<bad head>" + text;
  text = text.substr(head.size());
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// Expects a SyntaxError whose message contains `needle` at 1-based column `column`.
void ExpectSyntaxError(const std::string& pattern, int column, const std::string& needle, int line) {
  try {
    RegexToGrammar(pattern);
    std::printf("FAIL line %d: no error for pattern %s\n", line, pattern.c_str());
    ++g_failures;
  } catch (const SyntaxError& e) {
    if (e.line() != 1 || e.column() != column || std::string(e.what()).find(needle) == std::string::npos) {
      std::printf("FAIL line %d: pattern %s: got %s (col %d), want col %d containing '%s'\n", line, pattern.c_str(),
                  e.what(), e.column(), column, needle.c_str());
      ++g_failures;
    }
  } catch (const std::exception& e) {
    std::printf("FAIL line %d: pattern %s: wrong error type: %s\n", line, pattern.c_str(), e.what());
    ++g_failures;
  }
}
#define EXPECT_SYNTAX(p, col, needle) ExpectSyntaxError(p, col, needle, __LINE__)

void ExpectLimit(const std::string& pattern, int line) {
  try {
    RegexToGrammar(pattern);
    std::printf("FAIL line %d: no error for pattern %.60s\n", line, pattern.c_str());
    ++g_failures;
  } catch (const SyntaxError& e) {
    std::printf("FAIL line %d: syntax error instead of limit: %s\n", line, e.what());
    ++g_failures;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kLimitExceeded) {
      std::printf("FAIL line %d: wrong kind: %s\n", line, e.what());
      ++g_failures;
    }
  }
}
#define EXPECT_LIMIT(p) ExpectLimit(p, __LINE__)

// ---------------------------------------------------------------------------------------

void TestStructure() {
  Grammar g;
  if (TryConvert("abc", &g)) {
    CHECK_EQ(g.num_rules(), 1);
    CHECK_EQ(g.rule(g.root()).name, "root");
    CHECK(RootBody(g).kind == ExprKind::kBytes);
    CHECK_EQ(RootBody(g).bytes, "abc");
  }
  if (TryConvert("", &g)) CHECK(RootBody(g).kind == ExprKind::kEmpty);
  if (TryConvert("a|b|", &g)) {
    CHECK(RootBody(g).kind == ExprKind::kChoice);
    CHECK_EQ(RootBody(g).children.size(), 3u);
    CHECK(g.expr(RootBody(g).children[2]).kind == ExprKind::kEmpty);
  }
  if (TryConvert("ab*", &g)) {
    const Expr& e = RootBody(g);
    CHECK(e.kind == ExprKind::kSequence);
    CHECK_EQ(e.children.size(), 2u);
    CHECK_EQ(g.expr(e.children[0]).bytes, "a");
    const Expr& rep = g.expr(e.children[1]);
    CHECK(rep.kind == ExprKind::kRepeat);
    CHECK_EQ(rep.min, 0);
    CHECK_EQ(rep.max, kUnbounded);
    CHECK_EQ(g.expr(rep.children[0]).bytes, "b");
  }
  if (TryConvert("x{2,5}?", &g)) {
    CHECK(RootBody(g).kind == ExprKind::kRepeat);
    CHECK_EQ(RootBody(g).min, 2);
    CHECK_EQ(RootBody(g).max, 5);
  }
  if (TryConvert("x{3,}", &g)) {
    CHECK_EQ(RootBody(g).min, 3);
    CHECK_EQ(RootBody(g).max, kUnbounded);
  }
  if (TryConvert("[^a-c\\d]", &g)) {
    const Expr& e = RootBody(g);
    CHECK(e.kind == ExprKind::kCharClass);
    CHECK(e.negated);
    CHECK_EQ(e.ranges.size(), 2u);
    CHECK(e.ranges[0] == (CodepointRange{'0', '9'}));
    CHECK(e.ranges[1] == (CodepointRange{'a', 'c'}));
  }
  if (TryConvert("[^]", &g)) {
    CHECK(RootBody(g).negated);
    CHECK(RootBody(g).ranges.empty());
  }
  if (TryConvert("[]", &g)) {
    CHECK(!RootBody(g).negated);
    CHECK(RootBody(g).ranges.empty());
  }
  // RegexToExpr adds to an existing grammar without creating rules.
  Grammar h;
  RuleId r = h.DeclareRule("x");
  ExprId e = RegexToExpr(&h, "(?<year>\\d{4})-(?:0[1-9]|1[0-2])");
  CHECK_EQ(h.num_rules(), 1);
  h.SetRuleBody(r, e);
  h.set_root(r);
  CHECK(!h.ToEbnf().empty());
}

void TestPrinting() {
  CHECK_EQ(Body("a.b"), "\"a\" [^\\n\\r\\u2028\\u2029] \"b\"");
  CHECK_EQ(Body("\\d+"), "[0-9]+");
  CHECK_EQ(Body("\\w"), "[0-9A-Z_a-z]");
  CHECK_EQ(Body("\\D"), "[^0-9]");
  CHECK_EQ(Body("[\\D]"), "[\\x00-/:-\\U0010FFFF]");  // complemented explicitly
  CHECK_EQ(Body("(?:ab|c)?"), "(\"ab\" | \"c\")?");
  CHECK_EQ(Body("\\u00e9\\x41\\u{1F600}\\uD83D\\uDE00"),
           "\"\xc3\xa9"
           "A\xf0\x9f\x98\x80\xf0\x9f\x98\x80\"");
  CHECK_EQ(Body("\\t\\n\\r\\f\\v\\0\\cJ"), "\"\\t\\n\\r\\x0C\\x0B\\x00\\n\"");
  CHECK_EQ(Body("\\/\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\\\-"), "\"/.*+?()[]{}|^$\\\\-\"");
  CHECK_EQ(Body("[\\b]"), "[\\x08]");
  CHECK_EQ(Body("a{,2}"), "\"a{,2}\"");  // Annex B: not a quantifier, a literal
  CHECK_EQ(Body("a}]"), "\"a}]\"");
  CHECK_EQ(Body("[\\d-z]"), "[\\-0-9z]");  // Annex B union
  CHECK_EQ(Body("[a-]"), "[\\-a]");
  CHECK_EQ(Body("^ab$"), "\"ab\"");
  CHECK_EQ(Body("^^a$$"), "\"a\"");
  CHECK_EQ(Body("a??b+?c*?d{2}?"), "\"a\"? \"b\"+ \"c\"* \"d\"{2}");
}

void TestSearchSemantics() {
  RegexOptions s;
  s.search_semantics = true;
  const std::string any = "[\\x00-\\U0010FFFF]*";
  CHECK_EQ(Body("ab", s), any + " \"ab\" " + any);
  CHECK_EQ(Body("^ab", s), "\"ab\" " + any);
  CHECK_EQ(Body("ab$", s), any + " \"ab\"");
  CHECK_EQ(Body("^ab$", s), "\"ab\"");
  CHECK_EQ(Body("^a|b$", s), "\"a\" " + any + " | " + any + " \"b\"");
  CHECK_EQ(Body("^(a|b)$", s), "\"a\" | \"b\"");
  CHECK_EQ(Body("", s), any);
  CHECK_EQ(Body("^", s), any);
  CHECK_EQ(Body("^$", s), "\"\"");
  CHECK_EQ(Body("a|", s), any + " \"a\" " + any + " | " + any);
}

void TestErrors() {
  EXPECT_SYNTAX("(a)\\1", 4, "Backreference");
  EXPECT_SYNTAX("(?<n>a)\\k<n>", 8, "backreference");
  EXPECT_SYNTAX("a(?=b)", 2, "Lookahead");
  EXPECT_SYNTAX("a(?!b)", 2, "Negative lookahead");
  EXPECT_SYNTAX("ab(?<=b)", 3, "Lookbehind");
  EXPECT_SYNTAX("ab(?<!b)", 3, "Negative lookbehind");
  EXPECT_SYNTAX("\xc3\xa9\xc3\xa9(?=x)", 3, "Lookahead");  // columns count code points
  EXPECT_SYNTAX("a\\b", 2, "\\b");
  EXPECT_SYNTAX("a\\B", 2, "\\B");
  EXPECT_SYNTAX("\\p{L}", 1, "property");
  EXPECT_SYNTAX("[\\P{L}]", 2, "property");
  // Anchors inside a pattern are exact (tests/test_regex.py checks their languages against
  // Python's re); only an anchored term repeated past the unroll bound is refused.
  EXPECT_SYNTAX("(^a){17}", 1, "anchor under a repetition");
  EXPECT_SYNTAX("(a$)*{2}", 6, "nothing to repeat");
  EXPECT_SYNTAX("^*", 2, "nothing to repeat");
  EXPECT_SYNTAX("a$?", 3, "nothing to repeat");
  EXPECT_SYNTAX("*", 1, "nothing to repeat");
  EXPECT_SYNTAX("a|+", 3, "nothing to repeat");
  EXPECT_SYNTAX("a**", 3, "nothing to repeat");
  EXPECT_SYNTAX("a*??", 4, "nothing to repeat");
  EXPECT_SYNTAX("{2}", 1, "nothing to repeat");
  EXPECT_SYNTAX("a{2}{3}", 5, "nothing to repeat");
  EXPECT_SYNTAX("(a", 1, "unterminated group");
  EXPECT_SYNTAX("a)", 2, "Unmatched ')'");
  EXPECT_SYNTAX("[ab", 1, "unterminated character class");
  EXPECT_SYNTAX("ab[z-a]", 4, "out of order");
  EXPECT_SYNTAX("a{3,2}", 2, "out of order");
  EXPECT_SYNTAX("\\", 1, "end of pattern");
  EXPECT_SYNTAX("\\x4", 1, "\\x");
  EXPECT_SYNTAX("\\u12", 1, "\\u");
  EXPECT_SYNTAX("\\u{110000}", 1, "0x10FFFF");
  EXPECT_SYNTAX("\\u{}", 1, "\\u{");
  EXPECT_SYNTAX("\\c1", 1, "\\c");
  EXPECT_SYNTAX("\\01", 1, "octal");
  EXPECT_SYNTAX("[\\1]", 2, "octal");
  EXPECT_SYNTAX("\\q", 1, "invalid escape");
  EXPECT_SYNTAX("(?i)a", 1, "group");
  EXPECT_SYNTAX("(?<>a)", 1, "group name");
  EXPECT_SYNTAX("(?<a-b>a)", 5, "group name");
  EXPECT_SYNTAX("ab\xff", 3, "UTF-8");
  EXPECT_SYNTAX("\xc3\xa9\xed\xa0\x80", 2, "UTF-8");  // an encoded surrogate is not UTF-8
}

void TestLimits() {
  EXPECT_LIMIT("a{100001}");
  EXPECT_LIMIT("a{1,100001}");
  EXPECT_LIMIT("a{100001,}");
  EXPECT_LIMIT("a{99999999999999999999999999}");
  Grammar g;
  if (TryConvert("a{100000}", &g)) CHECK_EQ(RootBody(g).min, 100000);
  RegexOptions small;
  small.max_repeat_bound = 10;
  bool threw = false;
  try {
    RegexToGrammar("a{11}", small);
  } catch (const Error& e) {
    threw = e.kind() == ErrorKind::kLimitExceeded;
  }
  CHECK(threw);

  std::string deep = std::string(10000, '(') + "a" + std::string(10000, ')');  // the default limit
  TryConvert(deep, &g);
  EXPECT_LIMIT(std::string(10001, '(') + "a" + std::string(10001, ')'));
  EXPECT_LIMIT(std::string(100000, '('));  // no stack overflow on unterminated nesting
  EXPECT_LIMIT(std::string(15000, '(') + std::string(15000, '['));
  // Long inputs convert in linear time.
  if (TryConvert(std::string(200000, '^') + std::string(200000, 'a') + std::string(200000, '$'), &g)) {
    CHECK_EQ(RootBody(g).bytes.size(), 200000u);
  }
  TryConvert("{" + std::string(200000, '1') + "{" + std::string(200000, ','), &g);
}

// Random patterns over regex metacharacters: only xg2::Error may come out, and any grammar
// produced prints as EBNF that parses back.
void TestFuzz() {
  const std::vector<std::string> pieces = {"(",    ")",    "[",    "]",     "{",       "}",        "|",
                                           "*",    "+",    "?",    "^",     "$",       ".",        "\\",
                                           "-",    ",",    "<",    ">",     "=",       "!",        ":",
                                           "a",    "b",    "z",    "0",     "1",       "2",        "9",
                                           "d",    "D",    "w",    "s",     "u",       "x",        "k",
                                           "p",    "c",    "{2}",  "{1,3}", "{0,}",    "\\u",      "\\x",
                                           "\\d",  "(?",   "(?:",  "(?<",   "[^",      "\xc3\xa9", "\xf0\x9f\x98\x80",
                                           "\xff", "\xc3", "\\u{", "D83D",  "\\uD83D", "\\uDE00",  "\x00"};
  std::mt19937 rng(12345);
  int converted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string pattern;
    int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) pattern += pieces[rng() % pieces.size()];
    for (bool search : {false, true}) {
      RegexOptions options;
      options.search_semantics = search;
      try {
        Grammar g = RegexToGrammar(pattern, options);
        ++converted;
        std::string text = g.ToEbnf();
        try {
          Grammar back = ParseEbnf(text);
          CHECK_EQ(back.ToEbnf(), text);
        } catch (const std::exception& e) {
          std::printf("FAIL reprint of regex %s does not parse: %s\n%s\n", pattern.c_str(), e.what(), text.c_str());
          ++g_failures;
        }
      } catch (const Error&) {
      } catch (const std::exception& e) {
        std::printf("FAIL untyped error for regex %s: %s\n", pattern.c_str(), e.what());
        ++g_failures;
      }
    }
  }
  CHECK(converted > 1000);
}

}  // namespace

int main() {
  TestStructure();
  TestPrinting();
  TestSearchSemantics();
  TestErrors();
  TestLimits();
  TestFuzz();
  if (g_failures) {
    std::printf("%d check(s) failed\n", g_failures);
    return 1;
  }
  std::printf("all regex tests passed\n");
  return 0;
}
