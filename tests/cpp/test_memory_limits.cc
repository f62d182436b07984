// Issue #18 in the core: bounded compiled-grammar cache, the cache registry's budget split,
// budgets (time, memory) that reach the caller from worker threads, degenerate vocabularies.
#include <pthread.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "compiler/by_id_token_cache.h"
#include "compiler/cache_registry.h"
#include "compiler/grammar_compiler.h"
#include "xg2/errors.h"
#include "xg2/limits.h"

using namespace xg2;

namespace {

std::shared_ptr<const TokenizerInfo> Vocab() {
  std::vector<std::string> vocab;
  for (char c = 'a'; c <= 'z'; ++c) vocab.push_back(std::string(1, c));
  for (char c = '0'; c <= '9'; ++c) vocab.push_back(std::string(1, c));
  vocab.push_back("</s>");
  return std::make_shared<TokenizerInfo>(vocab, VocabType::kRaw, 0, std::vector<int32_t>{36}, std::vector<int32_t>{},
                                         false);
}

std::string Ebnf(int i) {
  return "root ::= \"k" + std::to_string(i) + "=\" [a-z]+ (\",\" [0-9]{1," + std::to_string(i % 9 + 2) + "})*";
}

void TestCompiledCacheIsBounded() {
  GrammarCompiler compiler(Vocab(), 2, true, /*cache_limit_bytes=*/200'000);
  for (int i = 0; i < 200; ++i) {
    compiler.Compile(ParseEbnf(Ebnf(i)), CompileOptions());
    CacheStats s = compiler.cache_stats();
    CHECK(s.bytes <= s.limit_bytes);
  }
  CacheStats s = compiler.cache_stats();
  CHECK(s.evictions > 0);
  CHECK_EQ(s.misses, 200);
  auto again = compiler.Compile(ParseEbnf(Ebnf(199)), CompileOptions());
  CHECK_EQ(compiler.cache_stats().hits, 1);
  compiler.SetCacheLimit(0);
  CHECK_EQ(compiler.cache_stats().entries, 0);
}

void TestRegistrySplit() {
  const int64_t before = cache_registry::Budget();
  cache_registry::SetBudget(1 << 20);
  CacheRegistryStats s = cache_registry::Stats();
  CHECK_EQ(s.masks.limit_bytes, 1 << 20);
  CHECK_EQ(s.automata.limit_bytes, (1 << 20) / 8);
  CHECK_EQ(s.suffixes.limit_bytes, (1 << 20) / 4);
  CHECK_EQ(s.key_exclusion.limit_bytes, (1 << 20) / 16);
  CHECK_EQ(s.patterns.limit_bytes, (1 << 20) / 16);
  CHECK_EQ(s.total_limit_bytes(), (1 << 20) * 3 / 2);
  bool threw = false;
  try {
    cache_registry::SetBudget(-1);
  } catch (const Error& e) {
    threw = e.kind() == ErrorKind::kInvalidArgument;
  }
  CHECK(threw);
  cache_registry::SetBudget(before);
  cache_registry::Clear();
}

void TestMemoryBudgetFromWorkers() {
  cache_registry::SetBudget(0);  // every mask is walked, on the 4 workers
  GrammarCompiler compiler(Vocab(), 4, false);
  std::string ebnf = "root ::= ";
  for (int i = 0; i < 60; ++i)
    ebnf += std::string(i ? " | " : "") + "\"p" + std::to_string(i) + "\" [a-z]{1," + std::to_string(i % 7 + 1) + "}";
  CompileOptions options;
  options.max_memory_bytes = 4000;
  bool threw = false;
  try {
    compiler.Compile(ParseEbnf(ebnf), options);
  } catch (const BudgetExceeded& e) {
    threw = e.limit() == "max_memory_bytes";
  }
  CHECK(threw);
  options.max_memory_bytes = 0;
  CHECK(compiler.Compile(ParseEbnf(ebnf), options)->automaton()->num_states() > 0);  // still usable
  cache_registry::SetBudget(cache_registry::kDefaultBudgetBytes);
}

void TestThreadTimeLimit() {
  CheckThreadTimeLimit();  // no limit in scope
  bool threw = false;
  {
    ScopedTimeLimit limit(1e-9);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    {
      ScopedTimeLimit longer(100);  // cannot extend the outer deadline
      try {
        CheckThreadTimeLimit();
      } catch (const BudgetExceeded& e) {
        threw = e.limit() == "time_limit_s";
      }
    }
    // Another thread has no limit.
    bool other_threw = false;
    std::thread t([&] {
      try {
        CheckThreadTimeLimit();
      } catch (const BudgetExceeded&) {
        other_threw = true;
      }
    });
    t.join();
    CHECK(!other_threw);
  }
  CHECK(threw);
  CheckThreadTimeLimit();  // the scope is gone
}

void TestDegenerateVocabularies() {
  // An empty vocabulary is a valid string-only tokenizer (as in xgrammar: matchers accept
  // strings, masks are empty).
  bool threw = false;
  try {
    TokenizerInfo empty(std::vector<std::string>{}, VocabType::kRaw, 0, {}, {}, false);
    CHECK(empty.vocab_size() == 0);
  } catch (const Error&) {
    threw = true;
  }
  CHECK(!threw);
  try {
    GrammarCompiler compiler(std::make_shared<TokenizerInfo>(std::vector<std::string>{"", ""}, VocabType::kRaw, 0,
                                                             std::vector<int32_t>{}, std::vector<int32_t>{}, false),
                             1, true);
  } catch (const Error& e) {
    threw = e.kind() == ErrorKind::kInvalidArgument;
  }
  CHECK(threw);
}

}  // namespace

// The by-id results a compiled grammar shares stay within their entry bound, the least
// recently used going first, and the stats count what happened.
void TestByIdTokenCacheIsBounded() {
  xg2::ByIdTokenCache cache;
  auto words = std::make_shared<const xg2::ByIdTokens>(std::vector<uint32_t>(8, 0xFFFFFFFFu), 8 * 32);
  for (int32_t k = 0; k < 70; ++k) {
    cache.Insert({k}, words);
    if (k >= 1) CHECK(cache.Find({0}) != nullptr);  // state 0 stays the most recently used
  }
  const xg2::CacheStats s = cache.Stats();
  CHECK(s.entries == 64);
  CHECK(s.evictions == 6);
  CHECK(s.bytes == 64 * (8 * 4 + 4));
  CHECK(s.bytes <= s.limit_bytes);
  CHECK(cache.Find({0}) != nullptr);
  CHECK(cache.Find({1}) == nullptr);  // among the first evicted
  CHECK(cache.Find({69}) != nullptr);
  CHECK(cache.Stats().hits == 71 && cache.Stats().misses == 1);
}

// The words a by-id result leaves open (not all ones over the tokenizer's ids), which a fill
// then reads alone; bits past the last token count as set; many open words are not listed.
void TestByIdTokensOpenWords() {
  const xg2::ByIdTokens a({0xFFFFFFFFu, 0xFFFFFFFEu, 0x7u}, 67);
  CHECK(!a.many_open && a.open_words == std::vector<int32_t>{1});
  const xg2::ByIdTokens b({0xFFFFFFFFu, 0xFFFFFFFFu, 0x7u}, 68);
  CHECK(!b.many_open && b.open_words == std::vector<int32_t>{2});
  const xg2::ByIdTokens c(std::vector<uint32_t>(64, 0u), 64 * 32);
  CHECK(!c.many_open && c.open_words.size() == 64);
  const xg2::ByIdTokens d(std::vector<uint32_t>(65, 0u), 65 * 32);
  CHECK(d.many_open && d.open_words.empty());
}

// About 5 MiB of stack at the depth used below (a frame of 256 bytes and more a level).
int Deep(int n) {
  volatile char pad[256];
  pad[0] = static_cast<char>(n & 1);
  return n == 0 ? 0 : Deep(n - 1) + pad[0];
}

void* DeepStackChecks(void* ok) {
  // This thread's 256 KiB are too little: the work moves to a helper thread and comes back.
  CHECK(StackBytesLeft() < (size_t{256} << 10));
  CHECK_EQ(WithDeepStack([] { return Deep(20000); }), 10000);
  bool typed = false;
  try {
    WithDeepStack([]() -> int { throw Error(ErrorKind::kGrammarSyntax, "1:1: nothing here"); });
  } catch (const Error& e) {
    typed = e.kind() == ErrorKind::kGrammarSyntax && std::string(e.what()) == "1:1: nothing here";
  }
  CHECK(typed);
  // The caller's time limit holds on the helper thread.
  bool timed_out = false;
  {
    ScopedTimeLimit limit(1e-9);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    try {
      RunWithDeepStack([] { CheckThreadTimeLimit(); });
    } catch (const BudgetExceeded& e) {
      timed_out = e.limit() == "time_limit_s";
    }
  }
  CHECK(timed_out);
  *static_cast<bool*>(ok) = true;
  return nullptr;
}

void TestDeepStack() {
  // A thread with room runs the work itself.
  const pthread_t self = pthread_self();
  bool same_thread = false;
  RunWithDeepStack([&] { same_thread = pthread_equal(self, pthread_self()) != 0; });
  CHECK(same_thread == (StackBytesLeft() >= (size_t{7} << 20)));
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t{256} << 10);
  pthread_t small;
  bool ok = false;
  CHECK(pthread_create(&small, &attr, DeepStackChecks, &ok) == 0);
  pthread_join(small, nullptr);
  pthread_attr_destroy(&attr);
  CHECK(ok);
}

int main() {
  TestByIdTokenCacheIsBounded();
  TestByIdTokensOpenWords();
  TestCompiledCacheIsBounded();
  TestRegistrySplit();
  TestMemoryBudgetFromWorkers();
  TestThreadTimeLimit();
  TestDeepStack();
  TestDegenerateVocabularies();
  if (g_failures) {
    std::printf("%d failure(s)\n", g_failures);
    return 1;
  }
  std::printf("memory limits: all checks passed\n");
  return 0;
}
