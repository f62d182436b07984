// Rule temperatures without Python: parsing and printing (EBNF), the matcher's active
// temperature along a parse (innermost rule, the largest on disagreeing paths, the default
// elsewhere), and the draft-tree and batch outputs.
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "check.h"
#include "compiler/grammar_compiler.h"
#include "matcher/batch_matcher.h"
#include "matcher/draft_tree.h"
#include "matcher/grammar_matcher.h"
#include "xg2/errors.h"
#include "xg2/grammar.h"
#include "xg2/tokenizer.h"

namespace {

bool Near(std::optional<float> got, std::optional<float> want) {
  if (!got || !want) return got.has_value() == want.has_value();
  return std::fabs(*got - *want) < 1e-6f;
}

std::shared_ptr<xg2::CompiledGrammar> CompileEbnf(xg2::GrammarCompiler* compiler, const std::string& text) {
  return compiler->Compile(xg2::ParseEbnf(text), xg2::CompileOptions());
}

bool ParseFails(const std::string& text) {
  try {
    xg2::ParseEbnf(text);
  } catch (const xg2::SyntaxError&) {
    return true;
  }
  return false;
}

}  // namespace

int main() {
  auto tok = std::make_shared<xg2::TokenizerInfo>(std::vector<std::string>{"a", "b", "x", "z"}, xg2::VocabType::kRaw, 0,
                                                  std::vector<int32_t>{}, std::vector<int32_t>{}, false);
  xg2::GrammarCompiler compiler(tok, 1, false);

  // Stored, printed, and read back from the print.
  xg2::Grammar g = xg2::ParseEbnf("root ::= \"a\" v \"z\"\nv[temperature=0.6] ::= \"x\"+");
  CHECK(Near(g.rule(g.FindRule("v")).temperature, 0.6f));
  CHECK(!g.rule(g.FindRule("root")).has_temperature());
  CHECK(g.ToEbnf().find("v[temperature=0.6] ::=") != std::string::npos);
  xg2::Grammar again = xg2::ParseEbnf(g.ToEbnf());
  CHECK_EQ(again.ToEbnf(), g.ToEbnf());

  for (const char* bad : {"root[temperature=-1] ::= \"a\"", "root[temperature=1e999] ::= \"a\"",
                          "root[temperature=x] ::= \"a\"", "root[temperature=1,temperature=1] ::= \"a\""}) {
    CHECK(ParseFails(bad));
  }

  // Along a parse: default outside, the rule's value inside.
  auto compiled = CompileEbnf(&compiler, g.ToEbnf());
  xg2::GrammarMatcher m(compiled, {}, false, 0.1f);
  CHECK(Near(m.Temperature(), 0.1f));
  CHECK(m.AcceptString("a"));
  CHECK(Near(m.Temperature(), 0.6f));
  CHECK(m.AcceptString("xx"));
  CHECK(Near(m.Temperature(), 0.6f));
  CHECK(!m.TakeTemperatureConflict());  // the path back in root has no temperature: no conflict
  CHECK(m.AcceptString("z"));
  CHECK(Near(m.Temperature(), 0.1f));
  m.Rollback(1);
  CHECK(Near(m.Temperature(), 0.6f));

  // Disagreeing paths: the largest, reported once.
  auto ambiguous =
      CompileEbnf(&compiler, "root ::= l | r\nl[temperature=0.2] ::= \"a\"+\nr[temperature=0.9] ::= \"a\" \"b\"");
  xg2::GrammarMatcher amb(ambiguous, {}, false);
  CHECK(Near(amb.Temperature(), 0.9f));
  CHECK(amb.TakeTemperatureConflict());
  CHECK(amb.AcceptString("a"));
  CHECK(Near(amb.Temperature(), 0.9f));
  CHECK(!amb.TakeTemperatureConflict());
  CHECK(amb.AcceptString("a"));
  CHECK(Near(amb.Temperature(), 0.2f));

  // No default, no temperature rule: none.
  xg2::GrammarMatcher plain(CompileEbnf(&compiler, "root ::= \"a\""), {}, false);
  CHECK(!plain.Temperature().has_value());

  bool threw = false;
  try {
    xg2::GrammarMatcher bad(compiled, {}, false, std::nanf(""));
  } catch (const xg2::Error& e) {
    threw = e.kind() == xg2::ErrorKind::kInvalidArgument;
  }
  CHECK(threw);

  // Draft tree: root -> "a" -> "x" -> "z"; node 4 ("b" after the root) is rejected.
  xg2::GrammarMatcher fresh(compiled, {}, false, 0.1f);
  std::vector<int64_t> first_child = {1, 2, 3, -1, -1}, next_sibling = {-1, 4, -1, -1, -1};
  std::vector<int64_t> draft = {0, 0, 2, 3, 1};
  xg2::DraftTree tree = xg2::DraftTree::FromLinks(first_child.data(), next_sibling.data(), 5);
  std::vector<int32_t> bitmask(5);
  std::vector<float> temps(5, 7.0f);
  xg2::TraverseDraftTree(fresh, tree, draft.data(), bitmask.data(), 5, 1, 1, temps.data());
  const float want[5] = {0.1f, 0.6f, 0.6f, 0.1f, -1.0f};
  for (int i = 0; i < 5; ++i) CHECK(Near(temps[i], want[i]));

  // Batch: in place at the given indices, -1 for none, other entries untouched.
  std::vector<xg2::GrammarMatcher*> matchers = {&fresh, &plain};
  std::vector<float> out(3, 5.0f);
  xg2::BatchGrammarMatcher batch(2);
  batch.FillTemperatures(matchers, out.data(), 3, {2, 0});
  CHECK(Near(out[0], -1.0f));
  CHECK(Near(out[1], 5.0f));
  CHECK(Near(out[2], 0.1f));

  if (g_failures) std::printf("%d failures\n", g_failures);
  return g_failures ? 1 : 0;
}
