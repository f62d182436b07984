// Tests of the Aho-Corasick automaton, the TagDispatch node and the structural tag front end
// (accepted and rejected texts, error paths, special tokens), mainly to run the new native
// code under the sanitizers. A standalone executable: prints each failure and exits non-zero
// if any check failed.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "automata/aho_corasick.h"
#include "check.h"
#include "compiler/grammar_compiler.h"
#include "frontends/structural_tag.h"
#include "matcher/grammar_matcher.h"
#include "xg2/errors.h"
#include "xg2/grammar.h"
#include "xg2/tokenizer.h"

using namespace xg2;

namespace {

void TestAhoCorasick() {
  AhoCorasick ac({"he", "she", "his", "hers"});
  int32_t node = ac.root();
  std::vector<int32_t> found;
  for (char c : std::string("ushers")) {
    node = ac.Next(node, static_cast<uint8_t>(c));
    for (int32_t m : ac.Matches(node)) found.push_back(m);
  }
  // "she" and "he" end at the 4th byte, "hers" at the last.
  CHECK_EQ(found, (std::vector<int32_t>{0, 1, 3}));
  CHECK_EQ(ac.Depth(node), 4);
}

// A byte vocabulary plus one special token (id 257, "<|sp|>") and a stop token (id 0).
std::shared_ptr<TokenizerInfo> ByteTokenizer() {
  std::vector<std::string> vocab = {"</s>"};
  for (int b = 0; b < 256; ++b) vocab.push_back(std::string(1, static_cast<char>(b)));
  vocab.push_back("<|sp|>");
  return std::make_shared<TokenizerInfo>(vocab, VocabType::kRaw, static_cast<int32_t>(vocab.size()),
                                         std::vector<int32_t>{0}, std::vector<int32_t>{257}, false);
}

struct Checker {
  std::shared_ptr<TokenizerInfo> tok = ByteTokenizer();
  GrammarCompiler compiler{tok, 1, false};

  std::shared_ptr<CompiledGrammar> Compile(const std::string& tag, int src_line) {
    try {
      StructuralTagOptions options;
      options.tokenizer = tok.get();
      Grammar g = StructuralTagToGrammar(tag, options).grammar;
      // The printed grammar parses back to the same text (TagDispatch syntax, token escapes).
      if (ParseEbnf(g.ToEbnf()).ToEbnf() != g.ToEbnf()) {
        std::printf("FAIL line %d: EBNF round trip differs\n", src_line);
        ++g_failures;
      }
      return compiler.Compile(g, CompileOptions());
    } catch (const std::exception& e) {
      std::printf("FAIL line %d: %s raised %s\n", src_line, tag.c_str(), e.what());
      ++g_failures;
      return nullptr;
    }
  }

  // Texts are token ids: bytes as 1 + byte, and -1 for the special token.
  bool Accepts(const std::shared_ptr<CompiledGrammar>& c, const std::string& text, bool special_first) {
    GrammarMatcher m(c, {}, false);
    if (special_first && !m.AcceptToken(257)) return false;
    for (unsigned char b : text) {
      if (!m.AcceptToken(1 + b)) return false;
    }
    return m.IsCompleted();
  }

  void Expect(const std::string& tag, const std::vector<std::string>& valid, const std::vector<std::string>& invalid,
              int src_line, bool special_first = false) {
    auto c = Compile(tag, src_line);
    if (!c) return;
    for (const auto& t : valid) {
      if (!Accepts(c, t, special_first)) {
        std::printf("FAIL line %d: rejects %s\n", src_line, t.c_str());
        ++g_failures;
      }
    }
    for (const auto& t : invalid) {
      if (Accepts(c, t, special_first)) {
        std::printf("FAIL line %d: accepts %s\n", src_line, t.c_str());
        ++g_failures;
      }
    }
  }

  void ExpectError(const std::string& tag, const std::string& path, int src_line) {
    try {
      StructuralTagOptions options;
      options.tokenizer = tok.get();
      StructuralTagToGrammar(tag, options);
      std::printf("FAIL line %d: no error for %s\n", src_line, tag.c_str());
      ++g_failures;
    } catch (const Error& e) {
      std::string msg = e.what();
      if (e.kind() != ErrorKind::kStructuralTag || msg.rfind(path + ":", 0) != 0) {
        std::printf("FAIL line %d: '%s', expected a structural-tag error at %s\n", src_line, msg.c_str(), path.c_str());
        ++g_failures;
      }
    }
  }
};

void TestFormats() {
  Checker c;
  c.Expect(R"({"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<f"],
             "tags": [{"begin": "<f>", "content": {"type": "any_text", "excludes": ["!"]}, "end": "</f>"}],
             "excludes": ["zz"]}})",
           {"", "a <f>x</f> b", "<f></f><f>y</f>"}, {"a zz", "<f>!</f>", "<f>x"}, __LINE__);
  c.Expect(R"({"type": "tag", "begin": "[", "content": {"type": "any_text", "max_chars": 2}, "end": "]"})",
           {"[]", "[ab]"}, {"[abc]"}, __LINE__);
  c.Expect(R"({"type": "dispatch", "rules": [["@", {"type": "regex", "pattern": "[0-9]+;"}]], "loop": false})",
           {"x", "x@12;"}, {"x@12;y", "@x"}, __LINE__);
  c.Expect(R"({"type": "json_schema", "style": "qwen_xml",
             "json_schema": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}})",
           {"<parameter=a>\nhi\n</parameter>\n"}, {"", "<parameter=b>x</parameter>"}, __LINE__);
  // Special tokens match only as themselves: the special id starts the tag, its text does not.
  c.Expect(R"({"type": "token_triggered_tags", "trigger_tokens": ["<|sp|>"],
             "tags": [{"begin": {"type": "token", "token": 257}, "content": {"type": "const_string", "value": "ok"},
                       "end": "."}], "at_least_one": true, "stop_after_first": true})",
           {"ok."}, {"", "ok", "ok.x"}, __LINE__, /*special_first=*/true);
}

void TestErrors() {
  Checker c;
  c.ExpectError(R"({"type": "triggered_tags", "triggers": ["<a", "<z"],
                  "tags": [{"begin": "<a>", "content": {"type": "any_text"}, "end": "</a>"}]})",
                "format.triggers[1]", __LINE__);
  c.ExpectError(R"({"type": "sequence", "elements": [{"type": "tag", "begin": "a", "end": "b"}]})",
                "format.elements[0].content", __LINE__);
  c.ExpectError(R"({"type": "token", "token": "<|nope|>"})", "format.token", __LINE__);
  c.ExpectError(R"({"type": "token", "token": 0})", "format.token", __LINE__);  // the stop token
  c.ExpectError(R"({"type": "any_text", "excludes": [""]})", "format.excludes[0]", __LINE__);
}

}  // namespace

int main() {
  TestAhoCorasick();
  TestFormats();
  TestErrors();
  if (g_failures) {
    std::printf("%d failure(s)\n", g_failures);
    return 1;
  }
  std::printf("all passed\n");
  return 0;
}
