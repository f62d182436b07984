// Tests of the JSON document parser (errors with line:col, values, limits) and of the JSON
// Schema front end (a few conversions checked by matching texts, unsupported keywords and
// invalid schemas, the word-set automaton and key exclusion against the subset construction). A standalone executable:
// prints each failure and exits non-zero if any check failed.
#include <cctype>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "automata/byte_dfa_ops.h"
#include "automata/word_set_dfa.h"
#include "check.h"
#include "compiler/grammar_compiler.h"
#include "frontends/json_schema.h"
#include "frontends/json_schema_internal.h"
#include "matcher/grammar_matcher.h"
#include "support/json.h"
#include "support/utf8.h"
#include "xg2/errors.h"
#include "xg2/grammar.h"
#include "xg2/tokenizer.h"

using namespace xg2;

namespace {

// ------------------------------------------------------------------ JSON parser

// Expects a SyntaxError at line:col whose message contains `what`.
void ExpectSyntaxError(const std::string& text, int line, int col, const std::string& what, int src_line) {
  try {
    ParseJson(text);
    std::printf("FAIL line %d: no error for %s\n", src_line, text.c_str());
    ++g_failures;
  } catch (const SyntaxError& e) {
    std::string msg = e.what();
    if (e.line() != line || e.column() != col || msg.find(what) == std::string::npos ||
        msg.rfind(std::to_string(line) + ":" + std::to_string(col) + ": ", 0) != 0) {
      std::printf("FAIL line %d: %s -> '%s' (line %d col %d), expected %d:%d '%s'\n", src_line, text.c_str(),
                  msg.c_str(), e.line(), e.column(), line, col, what.c_str());
      ++g_failures;
    }
  } catch (const std::exception& e) {
    std::printf("FAIL line %d: %s -> unexpected exception %s\n", src_line, text.c_str(), e.what());
    ++g_failures;
  }
}
#define EXPECT_SYNTAX(text, line, col, what) ExpectSyntaxError(text, line, col, what, __LINE__)

void TestJsonParserErrors() {
  EXPECT_SYNTAX("", 1, 1, "unexpected end of input");
  EXPECT_SYNTAX("   ", 1, 4, "unexpected end of input");
  EXPECT_SYNTAX("{\"a\": 1,}", 1, 9, "expected a string key");
  EXPECT_SYNTAX("{\"a\" 1}", 1, 6, "expected ':'");
  EXPECT_SYNTAX("{\"a\": 1 \"b\": 2}", 1, 9, "expected ',' or '}'");
  EXPECT_SYNTAX("[1, 2", 1, 6, "expected ',' or ']'");
  EXPECT_SYNTAX("[1,\n 2,\n x]", 3, 2, "unexpected character 'x'");
  EXPECT_SYNTAX("{\n  \"a\": tru\n}", 2, 8, "unexpected character 't'");
  EXPECT_SYNTAX("\"abc", 1, 5, "unterminated string");
  EXPECT_SYNTAX("\"a\tb\"", 1, 3, "raw control character");
  EXPECT_SYNTAX("\"\\x\"", 1, 2, "invalid escape '\\x'");
  EXPECT_SYNTAX("\"\\u12G4\"", 1, 4, "invalid hex digit");
  EXPECT_SYNTAX("\"\\u12", 1, 4, "truncated \\u escape");
  EXPECT_SYNTAX("-", 1, 2, "expected a digit");
  EXPECT_SYNTAX("1.", 1, 3, "expected a digit after '.'");
  EXPECT_SYNTAX("1e+", 1, 4, "expected a digit in the exponent");
  EXPECT_SYNTAX("01", 1, 2, "unexpected trailing characters");
  EXPECT_SYNTAX("{} {}", 1, 4, "unexpected trailing characters");
  EXPECT_SYNTAX("[\"\xc3\xa9\", x]", 1, 7, "unexpected character 'x'");  // columns count code points
  EXPECT_SYNTAX("[\"\xff\"]", 1, 3, "invalid UTF-8");
  EXPECT_SYNTAX("\r\n\n  nul", 3, 3, "unexpected character 'n'");

  // Nesting limit: a typed LimitExceeded error, not a crash.
  JsonParseOptions shallow;
  shallow.max_depth = 3;
  try {
    ParseJson("[[[[[1]]]]]", shallow);
    std::printf("FAIL: no depth error\n");
    ++g_failures;
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kLimitExceeded);
  }
  std::string deep(100000, '[');
  try {
    ParseJson(deep);
    ++g_failures;
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kLimitExceeded);
  }
}

void TestJsonParserValues() {
  JsonValue v = ParseJson(" {\"b\": [1, -2.50, 1e3, true, null], \"a\": \"x\\n\\u00e9\\ud83d\\ude00\"} ");
  CHECK(v.is_object());
  CHECK(v.members().size() == 2);
  CHECK(v.members()[0].first == "b");  // member order is kept
  const JsonValue* b = v.Find("b");
  CHECK(b && b->is_array() && b->items().size() == 5);
  if (b && b->items().size() == 5) {
    CHECK(b->items()[0].is_integer());
    CHECK(b->items()[1].number_literal() == "-2.50");
    CHECK(b->items()[1].as_number() == -2.5);
    CHECK(!b->items()[1].is_integer());
    CHECK(b->items()[2].is_integer() && b->items()[2].as_number() == 1000);
    CHECK(b->items()[3].is_bool() && b->items()[3].as_bool());
    CHECK(b->items()[4].is_null());
  }
  const JsonValue* a = v.Find("a");
  // \u00e9 -> é, a surrogate pair -> U+1F600.
  CHECK(a && a->as_string() == "x\n\xc3\xa9\xf0\x9f\x98\x80");
  // A lone surrogate has no UTF-8 encoding: refused at its escape, not replaced.
  for (const char* lone : {"\"a\\ud800\"", "\"a\\udc00\\ud800\"", "\"a\\ud800\\u0041\"", "\"a\\ud800\\n\""}) {
    bool refused = false;
    try {
      ParseJson(lone);
    } catch (const SyntaxError& e) {
      refused = std::string(e.what()).find("lone surrogate") != std::string::npos && e.line() == 1 && e.column() == 3;
    }
    CHECK(refused);
  }
  CHECK(v.Find("missing") == nullptr);
  CHECK(ParseJson("1.0") == ParseJson("1"));  // equality by value
  CHECK(!(ParseJson("{\"a\":1,\"b\":2}") == ParseJson("{\"a\":1}")));
  CHECK(ParseJson("[1, {\"k\": \"v\"}]").Dump() == "[1,{\"k\":\"v\"}]");
  CHECK(JsonQuote("a\"b\\\n") == "\"a\\\"b\\\\\\n\"");
  CHECK(JsonPointerEscape("a/b~c") == "a~1b~0c");
}

// ------------------------------------------------------------------ JSON Schema conversion

std::shared_ptr<TokenizerInfo> ByteTokenizer() {
  std::vector<std::string> vocab = {"</s>"};
  for (int b = 0; b < 256; ++b) vocab.push_back(std::string(1, static_cast<char>(b)));
  return std::make_shared<TokenizerInfo>(vocab, VocabType::kRaw, static_cast<int32_t>(vocab.size()),
                                         std::vector<int32_t>{0}, std::vector<int32_t>{}, false);
}

struct Checker {
  GrammarCompiler compiler{ByteTokenizer(), 1, false};

  // Whether the schema's grammar accepts the whole text.
  bool Accepts(const Grammar& g, const std::string& text) {
    CompileOptions options;
    options.precompute_masks = false;
    GrammarMatcher m(compiler.Compile(g, options), {}, false);
    return m.AcceptString(text) && m.IsCompleted();
  }

  void Expect(const std::string& schema, const std::vector<std::string>& valid, const std::vector<std::string>& invalid,
              int src_line, JsonSchemaOptions options = JsonSchemaOptions()) {
    Grammar g;
    try {
      g = JsonSchemaToGrammar(schema, options).grammar;
    } catch (const std::exception& e) {
      std::printf("FAIL line %d: %s raised %s\n", src_line, schema.c_str(), e.what());
      ++g_failures;
      return;
    }
    for (const auto& t : valid) {
      if (!Accepts(g, t)) {
        std::printf("FAIL line %d: %s rejects %s\n%s\n", src_line, schema.c_str(), t.c_str(), g.ToEbnf().c_str());
        ++g_failures;
      }
    }
    for (const auto& t : invalid) {
      if (Accepts(g, t)) {
        std::printf("FAIL line %d: %s accepts %s\n", src_line, schema.c_str(), t.c_str());
        ++g_failures;
      }
    }
  }
};
#define EXPECT_SCHEMA(schema, valid, invalid, ...) checker.Expect(schema, valid, invalid, __LINE__, ##__VA_ARGS__)
using Texts = std::vector<std::string>;

// Expects conversion to fail with an Error whose message starts with `prefix`: of kind
// kUnsupported for "unsupported keyword ..." (valid input not enforced), else kGrammarSemantic.
void ExpectSchemaError(const std::string& schema, const std::string& prefix, int src_line, bool strict = true) {
  JsonSchemaOptions o;
  o.strict_mode = strict;
  try {
    JsonSchemaToGrammar(schema, o);
    std::printf("FAIL line %d: no error for %s\n", src_line, schema.c_str());
    ++g_failures;
  } catch (const Error& e) {
    std::string msg = e.what();
    const ErrorKind want = prefix.rfind("unsupported", 0) == 0 ? ErrorKind::kUnsupported : ErrorKind::kGrammarSemantic;
    if (e.kind() != want || msg.rfind(prefix, 0) != 0) {
      std::printf("FAIL line %d: %s -> '%s', expected prefix '%s'\n", src_line, schema.c_str(), msg.c_str(),
                  prefix.c_str());
      ++g_failures;
    }
  }
}
#define EXPECT_SCHEMA_ERROR(schema, prefix) ExpectSchemaError(schema, prefix, __LINE__)

void TestSchemaConversions() {
  Checker checker;
  JsonSchemaOptions compact;  // json.dumps(obj) formatting
  compact.any_whitespace = false;
  JsonSchemaOptions lax = compact;
  lax.strict_mode = false;

  EXPECT_SCHEMA("{\"type\": \"integer\", \"minimum\": -5, \"exclusiveMaximum\": 100}", (Texts{"-5", "0", "99"}),
                (Texts{"-6", "100", "1.5", "01"}), compact);
  EXPECT_SCHEMA("{\"type\": \"string\", \"minLength\": 2, \"maxLength\": 3}", (Texts{"\"ab\"", "\"\\n\\u00e9c\""}),
                (Texts{"\"a\"", "\"abcd\""}), compact);
  EXPECT_SCHEMA(
      "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"boolean\"}, \"b\": {\"enum\": [1, \"x\"]}},"
      " \"required\": [\"a\"]}",
      (Texts{"{\"a\": true}", "{\"a\": false, \"b\": \"x\"}", "{\"a\": true, \"b\": 1}"}),
      (Texts{"{}", "{\"b\": 1}", "{\"a\": true, \"c\": 1}", "{\"a\": 1}"}), compact);
  EXPECT_SCHEMA(
      "{\"type\": \"array\", \"prefixItems\": [{\"type\": \"null\"}], \"items\": {\"type\": \"integer\"}, "
      "\"maxItems\": 3}",
      (Texts{"[]", "[null]", "[null, 1, 2]"}), (Texts{"[1]", "[null, 1, 2, 3]", "[null, null]"}), compact);
  // $ref recursion.
  EXPECT_SCHEMA(
      "{\"$defs\": {\"n\": {\"type\": \"array\", \"items\": {\"$ref\": \"#/$defs/n\"}}}, \"$ref\": \"#/$defs/n\"}",
      (Texts{"[]", "[[], [[]]]"}), (Texts{"[1]"}), compact);
  // const/enum numbers compare by value.
  EXPECT_SCHEMA("{\"enum\": [1, 2.5]}", (Texts{"1", "1.0", "2.5", "2.50"}), (Texts{"2", "1.5", "25"}), compact);
  // Required properties come in the order listed (validation order of the instance).
  EXPECT_SCHEMA("{\"required\": [\"z\", \"a\"]}", (Texts{"{\"z\": 1, \"a\": 2}"}), (Texts{"{\"a\": 2}"}), lax);
  // A false prefix entry caps the array length.
  EXPECT_SCHEMA("{\"prefixItems\": [true, false]}", (Texts{"[]", "[1]"}), (Texts{"[1, 2]"}), lax);
  // Keys with escapes are excluded from the additional properties in their escaped spelling.
  EXPECT_SCHEMA("{\"properties\": {\"a\\nb\": {\"type\": \"number\"}, \"q\\\"\": {\"type\": \"number\"}}}",
                (Texts{"{\"a\\nb\": 1}", "{\"ab\": \"s\"}", "{\"q\\\"\": 2}"}),
                (Texts{"{\"a\\nb\": \"1\"}", "{\"q\\\"\": \"1\"}"}), lax);
  // additionalProperties applies to properties declared only in an allOf branch.
  EXPECT_SCHEMA("{\"allOf\": [{\"properties\": {\"foo\": {}}}], \"additionalProperties\": {\"type\": \"boolean\"}}",
                (Texts{"{\"foo\": true}", "{\"bar\": false}"}), (Texts{"{\"foo\": 1}"}), lax);
  // Draft-07: keywords beside $ref are ignored.
  EXPECT_SCHEMA(
      "{\"$schema\": \"http://json-schema.org/draft-07/schema#\", \"definitions\": {\"r\": {\"type\": \"array\"}},"
      " \"properties\": {\"foo\": {\"$ref\": \"#/definitions/r\", \"maxItems\": 1}}}",
      (Texts{"{\"foo\": [1, 2]}"}), (Texts{"{\"foo\": 1}"}), lax);
  // Indented formatting, like json.dumps(obj, indent=2).
  JsonSchemaOptions indented = compact;
  indented.indent = 2;
  EXPECT_SCHEMA(
      "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"array\", \"items\": {\"type\": \"integer\"}}}}",
      (Texts{"{\n  \"a\": [\n    1,\n    2\n  ]\n}", "{}"}), (Texts{"{\"a\": [1, 2]}"}), indented);

  EXPECT_SCHEMA_ERROR("{\"uniqueItems\": true}", "unsupported keyword 'uniqueItems' at (root)");
  EXPECT_SCHEMA_ERROR("{\"properties\": {\"a\": {\"if\": {\"uniqueItems\": true}, \"then\": {}}}}",
                      "unsupported keyword 'if' at /properties/a");
  EXPECT_SCHEMA_ERROR("{\"type\": \"string\", \"format\": \"regex\"}", "unsupported keyword 'format'");
  EXPECT_SCHEMA_ERROR("{\"$ref\": \"#/$defs/missing\"}", "invalid schema at (root)");
  EXPECT_SCHEMA_ERROR("{\"type\": \"strin\"}", "invalid schema at /type");
  EXPECT_SCHEMA_ERROR("{\"properties\": {\"a\": 5}}", "invalid schema at /properties/a");
  EXPECT_SCHEMA_ERROR("{\"minLength\": -1}", "invalid schema at (root)");

  // Warnings instead of errors.
  JsonSchemaOptions warn;
  warn.on_unsupported_warn = true;
  JsonSchemaResult r = JsonSchemaToGrammar(std::string("{\"type\": \"array\", \"uniqueItems\": true}"), warn);
  CHECK(r.warnings.size() == 1 && r.warnings[0].rfind("unsupported keyword 'uniqueItems'", 0) == 0);

  // Malformed schema text: the JSON parser's SyntaxError with line:col.
  try {
    JsonSchemaToGrammar(std::string("{\n  \"type\": \"string\",\n}"));
    ++g_failures;
  } catch (const SyntaxError& e) {
    CHECK(e.line() == 3 && e.column() == 1);
  }
}

// Formats lower to one process-wide minimal DFA each: a second conversion using the same
// format is a cache hit and accepts the same texts, escape spellings included ("\u0040" is the
// "@" of an address, "\u00E9" any letter case of the hex digits).
void TestFormatDfaCache() {
  Checker checker;
  JsonSchemaOptions compact;
  compact.any_whitespace = false;
  ClearFormatDfaCache();
  const std::string email = "{\"type\": \"string\", \"format\": \"email\"}";
  const Texts ok{"\"a@b.c\"", "\"a\\u0040b.c\"", "\"x.y@[1.2.3.4]\"", "\"q@[IPv6:::1]\""};
  const Texts bad{"\"a@\"", "\"@b\"", "\"a@b@c\"", "\"a\\u0020@b\""};
  EXPECT_SCHEMA(email, ok, bad, compact);
  CacheStats first = FormatDfaCacheStats();
  CHECK_EQ(first.misses, 1);
  CHECK_EQ(first.entries, 1);
  EXPECT_SCHEMA(email, ok, bad, compact);
  CacheStats second = FormatDfaCacheStats();
  CHECK_EQ(second.misses, 1);
  CHECK(second.hits >= first.hits + 1);
  // A pattern class's \u escapes: one digit tree over every range of the class.
  EXPECT_SCHEMA("{\"type\": \"string\", \"pattern\": \"^[a-cX\\u00e9\\u4e00-\\u4e0f]+$\"}",
                (Texts{"\"abX\"", "\"\\u0061\\u00E9\\u00e9\"", "\"\\u4E0F\\u4e00\"", "\"\u00e9\""}),
                (Texts{"\"d\"", "\"\\u0064\"", "\"\\u4e10\"", "\"\\u00ea\""}), compact);
  EXPECT_SCHEMA_ERROR("{\"type\": \"string\", \"format\": \"regex\"}", "unsupported keyword 'format'");
  CHECK_EQ(FormatDfaCacheStats().entries, 1);  // an unsupported format is not stored
}

// "\u" and the four hex digits of `unit`, each letter digit in either case.
ExprId ReferenceUnitEscape(Grammar* g, uint32_t unit) {
  const char* hex = "0123456789abcdef";
  std::vector<ExprId> parts{g->AddBytes("\\u")};
  for (int shift = 12; shift >= 0; shift -= 4) {
    const char low = hex[(unit >> shift) & 15], up = static_cast<char>(std::toupper(low));
    parts.push_back(g->AddCharClass({{uint32_t(low), uint32_t(low)}, {uint32_t(up), uint32_t(up)}}, false));
  }
  return g->AddSequence(parts);
}

// The spellings of one character of an undeclared key, written here as expressions: raw UTF-8
// where JSON allows it, the short escape where there is one, and "\u" escapes (either case, a
// surrogate pair above U+FFFF) outside U+0020..U+007F.
ExprId ReferenceKeyChar(Grammar* g, uint32_t cp) {
  std::vector<ExprId> alts;
  if (cp >= 0x20 && cp != '"' && cp != '\\') {
    std::string raw;
    AppendUtf8(cp, &raw);
    alts.push_back(g->AddBytes(raw));
  }
  const std::map<uint32_t, std::string> shorts = {{'"', "\\\""}, {'\\', "\\\\"}, {'/', "\\/"},  {'\b', "\\b"},
                                                  {'\f', "\\f"}, {'\n', "\\n"},  {'\r', "\\r"}, {'\t', "\\t"}};
  if (shorts.count(cp)) alts.push_back(g->AddBytes(shorts.at(cp)));
  if (cp < 0x20 || cp > 0x7F) {
    alts.push_back(cp < 0x10000 ? ReferenceUnitEscape(g, cp)
                                : g->AddSequence({ReferenceUnitEscape(g, 0xD800 + ((cp - 0x10000) >> 10)),
                                                  ReferenceUnitEscape(g, 0xDC00 + ((cp - 0x10000) & 0x3FF))}));
  }
  return alts.size() == 1 ? alts[0] : g->AddChoice(alts);
}

// Key exclusion (an open object's undeclared keys) against its construction from expressions:
// JSON string content minus the union of every excluded key's spellings, built by the subset
// construction and a product. For random key sets over letters with one, two or three
// spellings (and multi-byte ones) both must give the same automaton, state numbers included.
void TestKeyExclusion() {
  const std::vector<uint32_t> letters = {'a', 'b', 'x', '/', '"', '\\', '\n', 0x01, 0x1f, 0xe9, 0x4e00, 0x1f600};
  std::mt19937 rng(7);
  Grammar contents_grammar;
  const ByteDfaSpec contents =
      ByteDfaOfExpr(contents_grammar,
                    contents_grammar.AddRepeat(jsonschema::JsonKeyCharExpr(&contents_grammar), 0, kUnbounded), 20000);
  for (int iter = 0; iter < 200; ++iter) {
    std::vector<std::string> names;
    std::vector<std::vector<uint32_t>> name_letters;
    const int count = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < count; ++i) {
      std::string name;
      std::vector<uint32_t> cps;
      const int length = static_cast<int>(rng() % 5);
      for (int k = 0; k < length; ++k) cps.push_back(letters[rng() % letters.size()]);
      for (uint32_t cp : cps) AppendUtf8(cp, &name);
      names.push_back(name);
      name_letters.push_back(cps);
    }
    Grammar g;
    const ExprId rest = g.AddEmpty();
    const Expr& quoted = g.expr(jsonschema::JsonStringNotIn(&g, names, [&] { return rest; }));
    CHECK(quoted.kind == ExprKind::kSequence && quoted.children.size() == 3);
    const Expr& key = g.expr(quoted.children[1]);
    CHECK(key.kind == ExprKind::kByteDfa);
    if (key.kind != ExprKind::kByteDfa) return;
    Grammar ref;
    std::vector<ExprId> spelled;
    for (const auto& cps : name_letters) {
      std::vector<ExprId> chars;
      for (uint32_t cp : cps) chars.push_back(ReferenceKeyChar(&ref, cp));
      spelled.push_back(chars.empty() ? ref.AddEmpty() : ref.AddSequence(chars));
    }
    const ByteDfaSpec expected = TrimAndMinimize(
        SelectByParts(ProductWithParts(contents, {ByteDfaOfExpr(ref, ref.AddChoice(spelled), 20000)}, 20000), 1, 0),
        /*minimize=*/false);
    if (!(*key.dfa == expected)) {
      std::printf("FAIL key exclusion differs from the reference construction (iteration %d, %d names)\n", iter, count);
      ++g_failures;
      return;
    }
  }
}

// An open object with so many declared names that their exclusion is too large for one
// automaton takes the trie form: the declared names and their escape spellings still reach
// only the declared properties, and any other key is an additional property.
void TestKeyExclusionTrieForm() {
  std::mt19937 rng(11);
  std::string schema = "{\"type\": \"object\", \"properties\": {\"a/b\\u0001c\": {\"type\": \"integer\"}";
  std::string declared;
  for (int i = 0; i < 3000; ++i) {
    std::string name;
    for (int k = 0; k < 12; ++k) name.push_back(static_cast<char>('a' + rng() % 26));
    if (i == 0) declared = name;
    schema += ", \"" + name + "\": {\"type\": \"integer\"}";
  }
  schema += "}}";
  JsonSchemaOptions loose;
  loose.strict_mode = false;
  loose.any_whitespace = false;
  const Grammar g = JsonSchemaToGrammar(schema, loose).grammar;
  CHECK(g.ToEbnf().find("ByteDfa") == std::string::npos);  // the trie form, not one automaton
  GrammarCompiler compiler(ByteTokenizer(), 1, false);
  CompileOptions options;
  options.precompute_masks = false;
  const auto compiled = compiler.Compile(g, options);
  auto accepts = [&](const std::string& text) {
    GrammarMatcher m(compiled, {}, false);
    return m.AcceptString(text) && m.IsCompleted();
  };
  // Undeclared keys take any value; a declared name, in either spelling of its slash, only
  // its declared type.
  for (const std::string& ok : std::vector<std::string>{"{\"" + declared + "\": 1}", "{\"zz\": \"x\"}",
                                                        "{\"a\\/b\\u0001c\": 2}", "{\"" + declared + "x\": \"x\"}"})
    CHECK(accepts(ok));
  for (const std::string& bad : std::vector<std::string>{"{\"" + declared + "\": \"x\"}", "{\"a/b\\u0001c\": \"x\"}",
                                                         "{\"a\\/b\\u0001c\": \"x\"}"})
    CHECK(!accepts(bad));
  // An undeclared key writes no "\u" escape of U+0020..U+007F (the declared name or another).
  CHECK(!accepts("{\"\\u0061\\/b\\u0001c\": \"x\"}"));
  CHECK(!accepts("{\"\\u007a\": \"x\"}"));
  CHECK(accepts("{\"\\u00e9\": \"x\"}"));
}

// The minimal automaton of a word set: equal words by different spellings share states, and
// the result is what minimising the subset construction of the same union gives.
void TestWordSetDfa() {
  WordSetDfaBuilder b;
  // "ab", "b" and "xb" spelled "ab" / "a\x62", "b" / "\x62", "xb" / "x\x62": one shared tail.
  const WordSetDfaBuilder::Spelling plain_b = {{'b'}}, escaped_b = {{'\\'}, {'x'}, {'6'}, {'2'}};
  int32_t a = b.AddLetter(b.root(), 'a', {{{'a'}}});
  b.SetFinal(b.AddLetter(a, 'b', {plain_b, escaped_b}));
  b.SetFinal(b.AddLetter(b.root(), 'b', {plain_b, escaped_b}));
  const int32_t x = b.AddByteLetter(b.root(), 'x');
  b.SetFinal(b.AddLetter(x, 'b', {plain_b, escaped_b}));
  const ByteDfaSpec dfa = b.Minimal(100);
  Grammar g;
  const ExprId tail = g.AddChoice({g.AddBytes("b"), g.AddBytes("\\x62")});
  const ExprId words =
      g.AddChoice({g.AddSequence({g.AddBytes("a"), tail}), tail, g.AddSequence({g.AddBytes("x"), tail})});
  CHECK(dfa == ByteDfaOfExpr(g, words, 100));
  for (const char* yes : {"ab", "a\\x62", "b", "\\x62", "xb", "x\\x62"}) CHECK(ByteDfaAccepts(dfa, yes));
  for (const char* no : {"", "a", "x", "ba", "\\x6", "abb"}) CHECK(!ByteDfaAccepts(dfa, no));
  // Spellings that are prefixes of one another would make the trie nondeterministic.
  for (const std::vector<WordSetDfaBuilder::Spelling>& spellings :
       {std::vector<WordSetDfaBuilder::Spelling>{{{'a'}}, {{'a'}, {'a'}}},
        std::vector<WordSetDfaBuilder::Spelling>{{{'a'}, {'a'}}, {{'a'}}}}) {
    WordSetDfaBuilder bad;
    try {
      bad.AddLetter(bad.root(), 'a', spellings);
      std::printf("FAIL no error for spellings that are prefixes of one another\n");
      ++g_failures;
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::kInvalidArgument);
    }
  }
  // The state bound.
  try {
    b.Minimal(2);
    std::printf("FAIL no error past the state bound\n");
    ++g_failures;
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kLimitExceeded);
  }
}

}  // namespace

int main() {
  TestJsonParserErrors();
  TestJsonParserValues();
  TestSchemaConversions();
  TestFormatDfaCache();
  TestWordSetDfa();
  TestKeyExclusion();
  TestKeyExclusionTrieForm();
  if (g_failures) {
    std::printf("%d check(s) failed\n", g_failures);
    return 1;
  }
  std::printf("test_json_schema: all checks passed\n");
  return 0;
}
