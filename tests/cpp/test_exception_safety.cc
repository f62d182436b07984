// A std::bad_alloc part way through a matcher call leaves the matcher as it was before the
// call, so the caller may go on with it. Every allocation of the process goes through the
// operator new below, which can be armed to throw at its k-th call; each step of a decode
// (fill the mask, accept the token) is tried with k = 1, 2, ... until it runs through, and
// after every throw the matcher's state must equal the state before the step, and the step,
// run again, must give the masks and states of a run that never threw. The compiles are lazy,
// so the mask entries the shared cache builds during a fill are under fire too.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "check.h"
#include "compiler/grammar_compiler.h"
#include "matcher/grammar_matcher.h"
#include "xg2/grammar.h"
#include "xg2/tokenizer.h"

namespace {

std::atomic<long> g_countdown{0};  // > 0: the allocation that brings it to 0 throws
std::atomic<long> g_thrown{0};

void* Allocate(std::size_t size) {
  if (g_countdown.load(std::memory_order_relaxed) > 0 && g_countdown.fetch_sub(1) == 1) {
    g_thrown.fetch_add(1);
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t size) { return Allocate(size); }
void* operator new[](std::size_t size) { return Allocate(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

std::vector<std::string> Vocab() {
  std::vector<std::string> v = {"</s>"};
  for (char c = ' '; c <= '~'; ++c) v.push_back(std::string(1, c));
  for (const char* t : {"\xc3\xa9", "{\"", "\":", "\",", "ab", "abc", "null", "true", "12", "<call>", "</call>", "name",
                        "\"}", "[1,"}) {
    v.push_back(t);
  }
  return v;
}

// Greedy longest-match tokenization over the vocabulary (ids from 1; 0 is the stop token).
std::vector<int32_t> Tokenize(const std::vector<std::string>& vocab, const std::string& text) {
  std::vector<int32_t> out;
  for (size_t pos = 0; pos < text.size();) {
    int32_t best = -1;
    size_t best_len = 0;
    for (size_t id = 1; id < vocab.size(); ++id) {
      const std::string& t = vocab[id];
      if (t.size() > best_len && text.compare(pos, t.size(), t) == 0)
        best = static_cast<int32_t>(id), best_len = t.size();
    }
    if (best < 0) {
      std::printf("FAIL: text not tokenizable at %zu\n", pos);
      ++g_failures;
      return out;
    }
    out.push_back(best);
    pos += best_len;
  }
  return out;
}

struct Step {
  std::vector<int32_t> mask;
  std::string state_after;  // DebugState after the accept
};

std::vector<int32_t> Fill(xg2::GrammarMatcher& m, int32_t words) {
  std::vector<int32_t> mask(static_cast<size_t>(words));
  m.FillNextTokenBitmask(mask.data(), words);
  return mask;
}

// One decode never under fire: the mask and the state after each token.
std::vector<Step> Reference(const std::shared_ptr<xg2::CompiledGrammar>& compiled, const std::vector<int32_t>& tokens,
                            int32_t words) {
  xg2::GrammarMatcher m(compiled, {}, false);
  std::vector<Step> steps;
  for (int32_t t : tokens) {
    Step s;
    s.mask = Fill(m, words);
    CHECK(m.AcceptToken(t));
    s.state_after = m.DebugState();
    steps.push_back(s);
  }
  return steps;
}

// Runs `call` with the k-th allocation throwing, k = 1, 2, ..., until it runs through; after
// each throw `check` sees the matcher. Returns the throws seen.
template <class Call, class Check>
long UnderFire(Call call, Check check) {
  long throws = 0;
  for (long k = 1;; ++k) {
    bool threw = false;
    g_countdown.store(k);
    try {
      call();
    } catch (const std::bad_alloc&) {
      threw = true;
    }
    g_countdown.store(0);
    if (!threw) return throws;
    ++throws;
    check();
  }
}

void CheckGrammar(const std::shared_ptr<const xg2::TokenizerInfo>& tok, const std::string& ebnf,
                  const std::string& text) {
  const int32_t words = (tok->vocab_size() + 31) / 32;
  const std::vector<int32_t> tokens = Tokenize(Vocab(), text);
  xg2::CompileOptions lazy;
  lazy.precompute_masks = false;
  lazy.num_threads = 1;
  xg2::GrammarCompiler reference_compiler(tok, 1, false);
  const std::vector<Step> want = Reference(reference_compiler.Compile(xg2::ParseEbnf(ebnf), lazy), tokens, words);

  // A compile of its own, so its lazy mask entries are first built under fire.
  xg2::GrammarCompiler compiler(tok, 1, false);
  auto compiled = compiler.Compile(xg2::ParseEbnf(ebnf), lazy);
  xg2::GrammarMatcher m(compiled, {}, false);
  long throws = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::vector<int32_t> mask(static_cast<size_t>(words));
    // A fill may commit a token budget before it throws (a valid state of its own), so it is
    // checked by the fill that runs through and by the accept after it.
    throws += UnderFire([&] { m.FillNextTokenBitmask(mask.data(), words); }, [] {});
    CHECK(mask == want[i].mask);
    const std::string filled = m.DebugState();
    throws += UnderFire([&] { CHECK(m.AcceptToken(tokens[i])); }, [&] { CHECK_EQ(m.DebugState(), filled); });
    CHECK_EQ(m.DebugState(), want[i].state_after);
  }
  // A rollback and a string accept under fire, at the end of the decode.
  const std::string end = m.DebugState();
  throws += UnderFire([&] { m.Rollback(1); }, [&] { CHECK_EQ(m.DebugState(), end); });
  const std::string rolled_back = m.DebugState();
  throws +=
      UnderFire([&] { CHECK(m.AcceptString(Vocab()[tokens.back()])); }, [&] { CHECK_EQ(m.DebugState(), rolled_back); });
  // The matcher is still usable: it ends where the reference ends.
  CHECK(m.IsCompleted());
  CHECK(throws > 0);
  std::printf("  %-40.40s %zu tokens, %ld throws\n", ebnf.c_str(), tokens.size(), throws);
}

}  // namespace

int main() {
  const std::vector<std::string> vocab = Vocab();
  auto tok = std::make_shared<xg2::TokenizerInfo>(vocab, xg2::VocabType::kRaw, static_cast<int32_t>(vocab.size()),
                                                  std::vector<int32_t>{0}, std::vector<int32_t>{}, false);
  std::printf("test_exception_safety:\n");
  // JSON: completions, Leo chains, many rows.
  CheckGrammar(tok, xg2::BuiltinJsonGrammarEbnf(), "{\"name\": [1, \"ab\xc3\xa9\", true, null], \"abc\": {\"x\": 12}}");
  // Captures (recorded by accepts) and a token budget (committed by fills).
  CheckGrammar(tok, "root ::= \"[\" item (\",\" item)* \"]\"\nitem[capture] ::= [a-z]+", "[ab,abc,x,name]");
  CheckGrammar(tok, "root ::= \"<\" r \">\" [a-z]*\nr[max_tokens=3] ::= [a-z ]*", "<ab c>abc");
  // A character budget (a count and decoder state per parser item), escapes included.
  CheckGrammar(tok, "root ::= \"{\\\"\" s \"\\\"}\"\ns[json_chars=3..12] ::= ([a-z ] | \"\\\\n\")*",
               "{\"ab\\nc name\"}");
  // A dispatch over free text (an Aho-Corasick automaton in the rule).
  CheckGrammar(tok, "root ::= TagDispatch((\"<call>\", call))\ncall ::= \"name\" \"</call>\"",
               "ab <call>name</call> x");
  std::printf("test_exception_safety: %s\n", g_failures ? "FAILED" : "all checks passed");
  return g_failures ? 1 : 0;
}
