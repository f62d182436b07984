// Tests of the Grammar IR, the EBNF parser, the printer and the builtin JSON grammar.
// A standalone executable: prints each failure and exits non-zero if any check failed.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "check.h"
#include "xg2/errors.h"
#include "xg2/grammar.h"

using namespace xg2;

namespace {

// Parses text, reporting (not propagating) an unexpected error.
bool TryParse(const std::string& text, Grammar* out, const std::string& root = "root") {
  try {
    *out = ParseEbnf(text, root);
    return true;
  } catch (const std::exception& e) {
    std::printf("FAIL unexpected error: %s\n  grammar: %s\n", e.what(), text.c_str());
    ++g_failures;
    return false;
  }
}

const Expr& RootBody(const Grammar& g) { return g.expr(g.rule(g.root()).body); }

// ---------------------------------------------------------------------------------------

void TestNormalizeRanges() {
  std::vector<CodepointRange> r = NormalizeRanges({{10, 20}, {0, 3}, {4, 5}, {15, 30}, {40, 40}});
  CHECK_EQ(r.size(), 3u);
  CHECK(r[0] == (CodepointRange{0, 5}));
  CHECK(r[1] == (CodepointRange{10, 30}));
  CHECK(r[2] == (CodepointRange{40, 40}));
  CHECK(NormalizeRanges({}).empty());
  r = NormalizeRanges({{0x10FFFF, 0x10FFFF}, {0, 0x10FFFE}});
  CHECK_EQ(r.size(), 1u);
  CHECK(r[0] == (CodepointRange{0, 0x10FFFF}));
}

void TestGrammarBuilder() {
  Grammar g;
  RuleId a = g.DeclareRule("a");
  RuleId a2 = g.DeclareRule("a");
  RuleId odd = g.DeclareRule("9 bad/name");
  RuleId empty = g.DeclareRule("");
  CHECK_EQ(g.rule(a).name, "a");
  CHECK_EQ(g.rule(a2).name, "a_2");
  CHECK_EQ(g.rule(odd).name, "_9_bad_name");
  CHECK_EQ(g.rule(empty).name, "rule");
  CHECK_EQ(g.FindRule("a_2"), a2);
  CHECK_EQ(g.FindRule("missing"), -1);
  ExprId cls = g.AddCharClass({{'z', 'z'}, {'a', 'y'}}, false);
  CHECK_EQ(g.expr(cls).ranges.size(), 1u);
  CHECK(g.expr(cls).ranges[0] == (CodepointRange{'a', 'z'}));

  bool threw = false;
  try {
    g.AddSequence({12345});
  } catch (const Error& e) {
    threw = e.kind() == ErrorKind::kInvalidArgument;
  }
  CHECK(threw);
  threw = false;
  try {
    g.AddRepeat(cls, 3, 2);
  } catch (const Error& e) {
    threw = e.kind() == ErrorKind::kInvalidArgument;
  }
  CHECK(threw);
  threw = false;
  try {
    g.AddCharClass({{5, 0x110000}}, false);
  } catch (const Error& e) {
    threw = e.kind() == ErrorKind::kInvalidArgument;
  }
  CHECK(threw);
}

void TestStrings() {
  Grammar g;
  if (TryParse("root ::= \"abc\"", &g)) {
    CHECK(RootBody(g).kind == ExprKind::kBytes);
    CHECK_EQ(RootBody(g).bytes, "abc");
  }
  if (TryParse("root ::= 'a\"b'", &g)) CHECK_EQ(RootBody(g).bytes, "a\"b");
  if (TryParse(R"(root ::= "\n\r\t\\\"\'\[\]\-\/\x41\u00e9\U0001F600")", &g)) {
    CHECK_EQ(RootBody(g).bytes, "\n\r\t\\\"'[]-/A\xC3\xA9\xF0\x9F\x98\x80");
  }
  if (TryParse(R"(root ::= "a\0b")", &g)) CHECK_EQ(RootBody(g).bytes, std::string("a\0b", 3));
  if (TryParse("root ::= \"h\xC3\xA9llo\"", &g)) CHECK_EQ(RootBody(g).bytes, "h\xC3\xA9llo");
  if (TryParse("root ::= \"\"", &g)) CHECK(RootBody(g).kind == ExprKind::kEmpty);
  if (TryParse("root ::= ''", &g)) CHECK(RootBody(g).kind == ExprKind::kEmpty);
}

void TestCharClasses() {
  Grammar g;
  if (TryParse("root ::= [a-z0-9_]", &g)) {
    const Expr& e = RootBody(g);
    CHECK(e.kind == ExprKind::kCharClass);
    CHECK(!e.negated);
    CHECK_EQ(e.ranges.size(), 3u);
    CHECK(e.ranges[0] == (CodepointRange{'0', '9'}));
    CHECK(e.ranges[1] == (CodepointRange{'_', '_'}));
    CHECK(e.ranges[2] == (CodepointRange{'a', 'z'}));
  }
  if (TryParse("root ::= [^\"\\\\]", &g)) {
    CHECK(RootBody(g).negated);
    CHECK_EQ(RootBody(g).ranges.size(), 2u);
  }
  if (TryParse("root ::= [\xC3\xA9-\xC3\xB1\xE4\xB8\xAD]", &g)) {  // [é-ñ中]
    CHECK_EQ(RootBody(g).ranges.size(), 2u);
    CHECK(RootBody(g).ranges[0] == (CodepointRange{0xE9, 0xF1}));
    CHECK(RootBody(g).ranges[1] == (CodepointRange{0x4E2D, 0x4E2D}));
  }
  if (TryParse(R"(root ::= [\x00-\x1f\u2028\U0010FFFF])", &g)) {
    CHECK_EQ(RootBody(g).ranges.size(), 3u);
    CHECK(RootBody(g).ranges[2] == (CodepointRange{0x10FFFF, 0x10FFFF}));
  }
  if (TryParse("root ::= [+-]", &g)) {
    CHECK_EQ(RootBody(g).ranges.size(), 2u);
    CHECK(RootBody(g).ranges[1] == (CodepointRange{'-', '-'}));
  }
  if (TryParse("root ::= [-a]", &g)) CHECK_EQ(RootBody(g).ranges.size(), 2u);
  if (TryParse(R"(root ::= [\]\-\^\\])", &g)) {  // '\', ']' and '^' are adjacent
    CHECK_EQ(RootBody(g).ranges.size(), 2u);
    CHECK(RootBody(g).ranges[1] == (CodepointRange{'\\', '^'}));
  }
  if (TryParse("root ::= .", &g)) {
    CHECK(RootBody(g).kind == ExprKind::kCharClass);
    CHECK(RootBody(g).negated);
    CHECK(RootBody(g).ranges.empty());
  }
}

void TestRepeats() {
  struct Case {
    const char* text;
    int64_t min, max;
  };
  const Case cases[] = {
      {"root ::= \"a\"*", 0, kUnbounded},
      {"root ::= \"a\"+", 1, kUnbounded},
      {"root ::= \"a\"?", 0, 1},
      {"root ::= \"a\"{3}", 3, 3},
      {"root ::= \"a\"{2,}", 2, kUnbounded},
      {"root ::= \"a\"{2,5}", 2, 5},
      {"root ::= \"a\" { 1 , 2 }", 1, 2},
      {"root ::= [a]{0}", 0, 0},
      {"root ::= x{1000000000}\nx ::= \"a\"", 1000000000, 1000000000},
  };
  for (const Case& c : cases) {
    Grammar g;
    if (!TryParse(c.text, &g)) continue;
    const Expr& e = RootBody(g);
    CHECK(e.kind == ExprKind::kRepeat);
    CHECK_EQ(e.min, c.min);
    CHECK_EQ(e.max, c.max);
  }
  Grammar g;
  if (TryParse("root ::= (\"a\" | \"b\")*", &g)) {
    CHECK(RootBody(g).kind == ExprKind::kRepeat);
    CHECK(g.expr(RootBody(g).children[0]).kind == ExprKind::kChoice);
  }
  if (TryParse("root ::= (\"a\"*)?", &g)) {  // stacked operators need parentheses
    CHECK(RootBody(g).kind == ExprKind::kRepeat);
    CHECK(g.expr(RootBody(g).children[0]).kind == ExprKind::kRepeat);
  }
}

void TestStructure() {
  Grammar g;
  // Sequence binds tighter than choice; groups keep their own node.
  if (TryParse("root ::= \"a\" \"b\" | \"c\" (\"d\" | \"e\")", &g)) {
    const Expr& choice = RootBody(g);
    CHECK(choice.kind == ExprKind::kChoice);
    CHECK_EQ(choice.children.size(), 2u);
    CHECK(g.expr(choice.children[0]).kind == ExprKind::kSequence);
    const Expr& second = g.expr(choice.children[1]);
    CHECK(second.kind == ExprKind::kSequence);
    CHECK(g.expr(second.children[1]).kind == ExprKind::kChoice);
  }
  // Forward references, multi-line bodies, comments; rules numbered in definition order.
  const char* text =
      "# leading comment\n"
      "root ::= item\n"
      "   (\",\" item)*   # trailing comment\n"
      "item ::= word | number\n"
      "number ::= [0-9]+\n"
      "word ::=\n"
      "  [a-z]+\n";
  if (TryParse(text, &g)) {
    CHECK_EQ(g.num_rules(), 4);
    CHECK_EQ(g.rule(0).name, "root");
    CHECK_EQ(g.rule(1).name, "item");
    CHECK_EQ(g.rule(2).name, "number");
    CHECK_EQ(g.rule(3).name, "word");
    CHECK_EQ(g.root(), 0);
    CHECK(RootBody(g).kind == ExprKind::kSequence);
    CHECK_EQ(RootBody(g).children.size(), 2u);
    CHECK(g.expr(g.rule(3).body).kind == ExprKind::kRepeat);
  }
  // Rules may follow each other on one line; names may contain '.' and '-'.
  if (TryParse("root ::= a.b-c a.b-c ::= \"x\"", &g)) {
    CHECK_EQ(g.num_rules(), 2);
    CHECK_EQ(g.rule(1).name, "a.b-c");
  }
  // The empty string is written "" or () (an empty alternative is a syntax error).
  if (TryParse("root ::= \"\" | \"a\"\nempty ::= ()\n", &g)) {
    CHECK(g.expr(RootBody(g).children[0]).kind == ExprKind::kEmpty);
    CHECK(g.expr(g.rule(1).body).kind == ExprKind::kEmpty);
  }
  // Lookahead assertion at the end of a rule body.
  if (TryParse("root ::= a \"b\"\na ::= \"x\" | \"y\" (= \"b\" [c])", &g)) {
    RuleId a = g.FindRule("a");
    CHECK(g.expr(g.rule(a).body).kind == ExprKind::kChoice);
    CHECK(g.rule(a).lookahead != kNoExpr);
    CHECK(g.expr(g.rule(a).lookahead).kind == ExprKind::kSequence);
    CHECK_EQ(g.rule(g.root()).lookahead, kNoExpr);
  }
  // A different root rule name.
  if (TryParse("a ::= \"x\"\nmain ::= a a", &g, "main")) {
    CHECK_EQ(g.rule(g.root()).name, "main");
  }
  // Windows line endings and a byte order mark.
  if (TryParse("\xEF\xBB\xBFroot ::= \"a\"\r\n  | b\r\nb ::= \"b\"\r\n", &g)) {
    CHECK_EQ(g.num_rules(), 2);
  }
}

// ---------------------------------------------------------------------------------------

void CheckRoundTrip(const std::string& text) {
  Grammar first;
  if (!TryParse(text, &first)) return;
  std::string printed = first.ToEbnf();
  Grammar second;
  if (!TryParse(printed, &second)) return;
  std::string reprinted = second.ToEbnf();
  if (printed != reprinted) {
    std::printf("FAIL round trip differs\n--- printed:\n%s--- reprinted:\n%s", printed.c_str(), reprinted.c_str());
    ++g_failures;
  }
  CHECK_EQ(first.num_rules(), second.num_rules());
}

void TestRoundTrip() {
  const std::vector<std::string> grammars = {
      BuiltinJsonGrammarEbnf(),
      "root ::= \"a\"",
      "root ::= \"\"",
      "root ::= x y z\nz ::= \"z\"\nx ::= \"x\"*\ny ::= x | z",
      "root ::= (\"a\" | \"b\") (\"c\" \"d\")+ \"e\"? [x-z]{2} [0-9]{3,} .{1,4}",
      "root ::= ((\"a\" \"b\") \"c\") | (\"d\" | (\"e\" | \"f\"))",
      "root ::= (\"a\"*)+ (\"b\"?)? ((\"c\"))",
      "root ::= \"\\n\\r\\t\\\\\\\"'\\x00\\x7f\\u00ad\\u2028\\U0001F600 \xC3\xA9\xE4\xB8\xAD\"",
      "root ::= [\\]\\-\\^\\\\a-z\\x00-\\x1f\xC3\xA9\\uD800-\\uDFFF] [^^] [\\^a] [^] [] [ab] [+-]",
      "root ::= a\na ::= \"x\" (= (\"y\" | [0-9]) \"z\")\nb ::= a* (= a)",
      "root ::= \"a\" | \"\" | \"b\"\ne ::= ()\n",
      "main ::= \"m\"\nroot ::= main main",
      "root ::= '\\'' \"'\" \"\\\"\" [\"'] [\\[\\]]",
      "root ::= [\\U0010FFFF\\uFFFE\\uFEFF\\u200B] \"\\uFDD0\\x9f\\x80\"",
      "root ::= x{0} x{0,0} x{5,5} x{0,1} x{1,} x{0,}\nx ::= [a]",
      "root ::= (((((\"deep\")))))+",
  };
  for (const std::string& text : grammars) CheckRoundTrip(text);

  // Round trip of a grammar built programmatically, with shapes the parser never makes.
  Grammar g;
  RuleId root = g.DeclareRule("root");
  RuleId other = g.DeclareRule("other name");
  RuleId bodiless = g.DeclareRule("bodiless");
  (void)bodiless;
  ExprId a = g.AddBytes("a");
  ExprId b = g.AddBytes("b");
  ExprId single_seq = g.AddSequence({a});
  ExprId single_choice = g.AddChoice({g.AddSequence({a, b})});
  ExprId nested_choice = g.AddChoice({a, g.AddChoice({b, a})});
  ExprId nested_seq = g.AddSequence({a, g.AddSequence({b, a}), g.AddSequence({})});
  ExprId repeat_of_single = g.AddRepeat(single_seq, 0, kUnbounded);
  ExprId repeat_of_multi = g.AddRepeat(single_choice, 1, 3);
  ExprId repeat_of_repeat = g.AddRepeat(g.AddChoice({repeat_of_single}), 2, 2);
  ExprId nothing = g.AddChoice({});
  ExprId empty_bytes = g.AddBytes("");
  g.SetRuleBody(root, g.AddSequence({nested_choice, nested_seq, repeat_of_single, repeat_of_multi, repeat_of_repeat,
                                     g.AddRuleRef(other), empty_bytes}));
  g.SetRuleBody(other, g.AddChoice({nothing, g.AddCharClass({{0, 0x10FFFF}}, true)}));
  g.SetRuleLookahead(other, g.AddRuleRef(root));
  g.set_root(root);
  CheckRoundTrip(g.ToEbnf());

  // The root rule is printed first, whatever its id.
  Grammar late_root;
  if (TryParse("a ::= \"x\"\nroot ::= a", &late_root)) {
    CHECK_EQ(late_root.ToEbnf(), "root ::= a\na ::= \"x\"\n");
  }
}

// ---------------------------------------------------------------------------------------

struct ErrorCase {
  std::string text;
  int line;
  int column;
  std::string message_part;
};

void TestSyntaxErrors() {
  const std::vector<ErrorCase> cases = {
      {"root ::= \"abc", 1, 14, "unterminated string literal opened at 1:10"},
      {"root ::= \"ab\ncd\"", 1, 13, "unterminated string literal opened at 1:10"},
      {"root ::= \"a\" @", 1, 14, "unexpected character '@'"},
      {"root ::= \"\xC3\xA9\" @", 1, 14, "unexpected"},  // columns count code points
      {"root \"a\"", 1, 6, "expected '::='"},
      {"\n\n  ::= \"a\"", 3, 3, "Assign should not be the first token"},
      {"root ::= (\"a\"", 1, 10, "missing ')'"},
      {"root ::= (\"a\"\nb ::= \"b\")", 1, 10, "missing ')'"},
      {"root ::= \"a\")", 1, 13, "unbalanced ')'"},
      {"root ::= \"a\\q\"", 1, 12, "Invalid escape"},
      {"root ::= \"\\x4\"", 1, 11, "hex digits"},
      {"root ::= \"\\U00110000\"", 1, 11, "out of range"},
      {"root ::= \"\\uD800\"", 1, 11, "surrogate"},
      {"root ::= \"\xFF\"", 1, 11, "Invalid UTF8"},
      {"root ::= \"\xC3\"", 1, 11, "Invalid UTF8"},
      {"root ::= [a-z", 1, 14, "unterminated character class opened at 1:10"},
      {"root ::= [z-a]", 1, 11, "lower bound is larger than upper bound"},
      {"root ::= a\n  b\nb ::= c", 1, 10, "Rule \"a\" is not defined"},
      {"root ::= \"a\"\nroot ::= \"b\"", 2, 1, "defined multiple times"},
      {"root ::= \"a\"{3,2}", 1, 13, "less than lower bound"},
      {"root ::= \"a\"{1000000000000000001}", 1, 14, "exceeds"},
      {"root ::= \"a\"{1", 1, 15, "expected '}'"},
      {"root ::= \"a\"{,2}", 1, 14, "expected a number"},
      {"root ::= \"a\" (= \"b\") \"c\"", 1, 22, "lookahead"},
      {"root ::= (\"a\" (= \"b\"))", 1, 15, "lookahead"},
      {"root ::= \"a\" ::= \"b\"", 1, 14, "Assign should be preceded by an identifier"},
  };
  for (const ErrorCase& c : cases) {
    try {
      ParseEbnf(c.text);
      std::printf("FAIL no error for: %s\n", c.text.c_str());
      ++g_failures;
    } catch (const SyntaxError& e) {
      std::string what = e.what();
      if (e.line() != c.line || e.column() != c.column || what.find(c.message_part) == std::string::npos ||
          e.kind() != ErrorKind::kGrammarSyntax) {
        std::printf("FAIL for %s\n  got %s, expected %d:%d with '%s'\n", c.text.c_str(), what.c_str(), c.line, c.column,
                    c.message_part.c_str());
        ++g_failures;
      }
    } catch (const std::exception& e) {
      std::printf("FAIL wrong exception type for %s: %s\n", c.text.c_str(), e.what());
      ++g_failures;
    }
  }
}

void CheckSemanticError(const std::string& text, const std::string& root, const std::string& part) {
  try {
    ParseEbnf(text, root);
    std::printf("FAIL no error for: %s\n", text.c_str());
    ++g_failures;
  } catch (const Error& e) {
    bool matches = std::string(e.what()).find(part) != std::string::npos;
    if (e.kind() != ErrorKind::kGrammarSemantic || !matches) {
      std::printf("FAIL for %s: got %s\n", text.c_str(), e.what());
      ++g_failures;
    }
  }
}

void TestSemanticErrors() {
  CheckSemanticError("", "root", "The root rule with name \"root\" is not found");
  CheckSemanticError("  # only a comment\n", "root", "The root rule with name \"root\" is not found");
  CheckSemanticError("main ::= \"a\"", "root", "The root rule with name \"root\" is not found");
  CheckSemanticError("root ::= \"a\"", "start", "The root rule with name \"start\" is not found");
}

void CheckLimitExceeded(const std::string& text) {
  try {
    ParseEbnf(text);
    std::printf("FAIL no limit error for a text of %zu bytes\n", text.size());
    ++g_failures;
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kLimitExceeded);
  }
}

void TestNestingLimit() {
  Grammar g;
  // The default limit (kMaxNestingDepthLimit, xgrammar's 10000).
  CHECK(TryParse("root ::= " + std::string(10000, '(') + "\"a\"" + std::string(10000, ')'), &g));
  CheckLimitExceeded("root ::= " + std::string(10001, '(') + "\"a\"" + std::string(10001, ')'));
  CheckLimitExceeded("root ::= " + std::string(1000000, '('));
  std::string starred;  // ("a")*)*...: quantified groups
  for (int i = 0; i < 12000; ++i) starred += ")*";
  CheckLimitExceeded("root ::= a\na ::= " + std::string(12000, '(') + "\"a\"" + starred);
  // Long flat sequences and choices are not nesting.
  std::string wide = "root ::= \"a\"";
  for (int i = 0; i < 20000; ++i) wide += " | \"a\" \"b\"";
  CHECK(TryParse(wide, &g));
}

// Mutates valid grammars at random: the parser must either succeed or throw a typed error,
// and whatever it accepts must round-trip. Run under sanitizers this catches stray reads.
void TestMutations() {
  const std::vector<std::string> seeds = {
      BuiltinJsonGrammarEbnf(),
      "root ::= (\"a\" | [b-d]{2,3})* x (= \"y\")\nx ::= '\\u00e9' . [^\\]]?",
  };
  const char alphabet[] = "()[]{}|*+?.,:=\"'\\#^-\n ax09uU\xC3\xA9";
  uint64_t state = 12345;
  auto next = [&state]() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state >> 33);
  };
  int accepted = 0;
  for (int iteration = 0; iteration < 4000; ++iteration) {
    std::string text = seeds[iteration % seeds.size()];
    int edits = 1 + next() % 3;
    for (int k = 0; k < edits; ++k) {
      size_t at = next() % (text.size() + 1);
      switch (next() % 3) {
        case 0: text.insert(at, 1, alphabet[next() % (sizeof(alphabet) - 1)]); break;
        case 1:
          if (at < text.size()) text.erase(at, 1);
          break;
        default:
          if (at < text.size()) text[at] = alphabet[next() % (sizeof(alphabet) - 1)];
      }
    }
    try {
      Grammar g = ParseEbnf(text);
      ++accepted;
      std::string printed = g.ToEbnf();
      if (ParseEbnf(printed).ToEbnf() != printed) {
        std::printf("FAIL mutated grammar does not round-trip:\n%s\n", text.c_str());
        ++g_failures;
      }
    } catch (const Error&) {
      // Expected for most mutations.
    }
  }
  std::printf("mutation test: %d of 4000 mutated grammars parsed\n", accepted);
  CHECK(accepted > 0);
}

}  // namespace

int main() {
  TestNormalizeRanges();
  TestGrammarBuilder();
  TestStrings();
  TestCharClasses();
  TestRepeats();
  TestStructure();
  TestRoundTrip();
  TestSyntaxErrors();
  TestSemanticErrors();
  TestNestingLimit();
  TestMutations();
  if (g_failures > 0) {
    std::printf("%d check(s) failed\n", g_failures);
    return 1;
  }
  std::printf("all EBNF tests passed\n");
  return 0;
}
