// BatchGrammarMatcher and TraverseDraftTree without Python: batched fills equal serial ones
// (also for a lazily compiled grammar whose mask entries are built concurrently), and draft
// tree rows equal root-to-node replays. Meant to run under -DXG2_SANITIZE=ON or TSan too.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "compiler/grammar_compiler.h"
#include "compiler/serialization.h"
#include "matcher/batch_matcher.h"
#include "matcher/draft_tree.h"
#include "matcher/grammar_matcher.h"
#include "xg2/errors.h"
#include "xg2/grammar.h"
#include "xg2/tokenizer.h"

using namespace xg2;

namespace {

std::shared_ptr<const TokenizerInfo> SmallVocab() {
  std::vector<std::string> vocab = {"{", "}", "[",    "]",    ",",     ":",    "\"", " ",   "a",   "b",
                                    "1", "2", "true", "null", "\"a\"", "\": ", ", ", "{\"", "</s>"};
  return std::make_shared<TokenizerInfo>(vocab, VocabType::kRaw, 0, std::vector<int32_t>{18}, std::vector<int32_t>{},
                                         false);
}

std::vector<int32_t> Allowed(GrammarMatcher& m, int32_t vocab) {
  std::vector<int32_t> words((vocab + 31) / 32);
  m.FillNextTokenBitmask(words.data(), static_cast<int64_t>(words.size()));
  std::vector<int32_t> out;
  for (int32_t t = 0; t < vocab; ++t) {
    if ((static_cast<uint32_t>(words[t >> 5]) >> (t & 31)) & 1u) out.push_back(t);
  }
  return out;
}

std::vector<std::unique_ptr<GrammarMatcher>> States(const std::shared_ptr<CompiledGrammar>& g, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  GrammarMatcher m(g, {}, false);
  std::vector<std::unique_ptr<GrammarMatcher>> out;
  const int32_t vocab = g->tokenizer()->vocab_size();
  for (int i = 0; i < n; ++i) {
    out.push_back(m.Fork());
    std::vector<int32_t> ids;
    for (int32_t t : Allowed(m, vocab)) {
      if (t != 18) ids.push_back(t);
    }
    if (ids.empty()) break;
    m.AcceptToken(ids[rng() % ids.size()]);
  }
  return out;
}

void TestBatchFill(bool lazy) {
  auto tok = SmallVocab();
  GrammarCompiler compiler(tok, 4, false);
  CompileOptions options;
  options.precompute_masks = !lazy;
  auto g = compiler.Compile(ParseEbnf(BuiltinJsonGrammarEbnf()), options);
  auto eager = GrammarCompiler(tok, 4, false).Compile(ParseEbnf(BuiltinJsonGrammarEbnf()), CompileOptions());
  auto states = States(g, 48, lazy ? 7 : 9);
  std::vector<GrammarMatcher*> ptrs;
  for (auto& s : states) ptrs.push_back(s.get());
  const int64_t words = 1;
  std::vector<int32_t> batch(ptrs.size() * words, -1), serial(ptrs.size() * words, -1);
  BatchGrammarMatcher(0).FillNextTokenBitmask(ptrs, batch.data(), static_cast<int64_t>(ptrs.size()), words, words, {});
  for (size_t i = 0; i < states.size(); ++i) states[i]->FillNextTokenBitmask(&serial[i], words);
  CHECK(batch == serial);
  bool threw = false;
  try {
    std::vector<GrammarMatcher*> dup = {ptrs[0], ptrs[1], ptrs[0]};
    BatchGrammarMatcher(0).FillNextTokenBitmask(dup, batch.data(), 3, words, words, {});
  } catch (const Error& e) {
    threw = e.kind() == ErrorKind::kInvalidArgument &&
            std::string(e.what()).find("matcher 2 is the same object as matcher 0") != std::string::npos;
  }
  CHECK(threw);
}

void TestDraftTree() {
  auto tok = SmallVocab();
  auto g = GrammarCompiler(tok, 2, false).Compile(ParseEbnf(BuiltinJsonGrammarEbnf()), CompileOptions());
  auto states = States(g, 10, 3);
  std::mt19937 rng(5);
  const int32_t vocab = tok->vocab_size();
  for (int trial = 0; trial < 50; ++trial) {
    GrammarMatcher& root = *states[trial % states.size()];
    const int n = 1 + static_cast<int>(rng() % 30);
    std::vector<int64_t> tokens(n), parents(n);
    parents[0] = -1;
    tokens[0] = 0;
    for (int i = 1; i < n; ++i) {
      parents[i] = static_cast<int64_t>(rng() % i);
      tokens[i] = static_cast<int64_t>(rng() % (vocab + 2)) - 1;  // includes -1 and vocab
    }
    std::vector<int32_t> rows(n, 0x7777);
    DraftTree tree = DraftTree::FromParents(parents.data(), n);
    std::vector<bool> valid = TraverseDraftTree(root, tree, tokens.data(), rows.data(), n, 1, 1);
    for (int i = 0; i < n; ++i) {
      std::vector<int64_t> path;
      for (int j = i; j > 0; j = static_cast<int>(parents[j])) path.insert(path.begin(), tokens[j]);
      auto m = root.Fork();
      bool ok = true;
      for (int64_t t : path) {
        if (m->IsTerminated() || t < 0 || t >= vocab || !m->AcceptToken(static_cast<int32_t>(t))) {
          ok = false;
          break;
        }
      }
      int32_t expected = 0;
      if (ok && !m->IsTerminated()) m->FillNextTokenBitmask(&expected, 1);
      CHECK(valid[i] == ok);
      CHECK(rows[i] == expected);
    }
  }
}

void TestBatchDraftTrees() {
  auto tok = SmallVocab();
  auto g = GrammarCompiler(tok, 2, false).Compile(ParseEbnf(BuiltinJsonGrammarEbnf()), CompileOptions());
  auto states = States(g, 12, 4);
  std::vector<GrammarMatcher*> ptrs;
  for (auto& s : states) ptrs.push_back(s.get());
  const int64_t b = static_cast<int64_t>(ptrs.size()), n = 9;
  std::mt19937 rng(8);
  std::vector<int64_t> parents(n), tokens(b * n);
  parents[0] = -1;
  for (int64_t i = 1; i < n; ++i) parents[i] = static_cast<int64_t>(rng() % i);
  for (auto& t : tokens) t = static_cast<int64_t>(rng() % tok->vocab_size());
  std::vector<DraftTree> trees = {DraftTree::FromParents(parents.data(), n)};
  std::vector<int32_t> batch(b * n, -1);
  auto valid = BatchGrammarMatcher(0).TraverseDraftTrees(ptrs, trees, tokens.data(), batch.data(), b * n, 1, 1);
  for (int64_t i = 0; i < b; ++i) {
    std::vector<int32_t> one(n, -1);
    auto v = TraverseDraftTree(*ptrs[i], trees[0], tokens.data() + i * n, one.data(), n, 1, 1);
    CHECK(v == valid[i]);
    CHECK(std::equal(one.begin(), one.end(), batch.begin() + i * n));
  }
}

void TestSerialization() {
  auto tok = SmallVocab();
  GrammarCompiler compiler(tok, 2, false);
  auto g = compiler.Compile(ParseEbnf(BuiltinJsonGrammarEbnf()), CompileOptions());
  std::string blob = SerializeCompiledGrammar(*g);
  auto loaded = DeserializeCompiledGrammar(blob, tok);
  CHECK(SerializeCompiledGrammar(*loaded) == blob);
  int rejected = 0;
  for (size_t pos = 0; pos < blob.size(); ++pos) {
    std::string bad = blob;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x10);
    try {
      DeserializeCompiledGrammar(bad, tok);
    } catch (const Error& e) {
      rejected += e.kind() == ErrorKind::kInvalidArgument;
    }
  }
  CHECK(rejected == static_cast<int>(blob.size()));
}

}  // namespace

// Any-order states are made while parsing, from several threads at once here: a lazily
// compiled grammar, 64 matchers at different points, batch fills on 4 threads (twice, so the
// second round reads states the first made) equal serial fills on an eager twin.
void TestAnyOrderStatesAcrossThreads() {
  auto tok = SmallVocab();
  const std::string ebnf =
      "root ::= \"{\" AnyOrder(\",\", required=(\"a\"), optional=(\"b\", \"1\", \"\\\"a\\\"\"), "
      "repeated=(\"null\", \"true\"), min=1, max=5) \"}\"";
  CompileOptions lazy_options;
  lazy_options.precompute_masks = false;
  auto lazy = GrammarCompiler(tok, 4, false).Compile(ParseEbnf(ebnf), lazy_options);
  auto eager = GrammarCompiler(tok, 4, false).Compile(ParseEbnf(ebnf), CompileOptions());
  for (int round = 0; round < 2; ++round) {
    auto states = States(lazy, 64, 11 + round);
    auto twins = States(eager, 64, 11 + round);
    CHECK_EQ(states.size(), twins.size());
    std::vector<GrammarMatcher*> ptrs;
    for (auto& st : states) ptrs.push_back(st.get());
    std::vector<int32_t> batch(ptrs.size(), -1), serial(ptrs.size(), -1);
    BatchGrammarMatcher(4).FillNextTokenBitmask(ptrs, batch.data(), static_cast<int64_t>(ptrs.size()), 1, 1, {});
    for (size_t i = 0; i < twins.size(); ++i) twins[i]->FillNextTokenBitmask(&serial[i], 1);
    CHECK(batch == serial);
  }
}

int main() {
  TestAnyOrderStatesAcrossThreads();
  TestBatchFill(false);
  TestBatchFill(true);
  TestDraftTree();
  TestBatchDraftTrees();
  TestSerialization();
  if (g_failures) {
    std::printf("%d failure(s)\n", g_failures);
    return 1;
  }
  std::printf("batch matcher / draft tree / serialization: all checks passed\n");
  return 0;
}
