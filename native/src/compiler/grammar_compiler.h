// GrammarCompiler turns grammars into CompiledGrammars (automaton + token-mask cache) for one
// tokenizer, and keeps compiled grammars keyed by their printed form.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "automata/grammar_automaton.h"
#include "compiler/cache_registry.h"
#include "compiler/token_mask_cache.h"
#include "xg2/grammar.h"
#include "xg2/tokenizer.h"

namespace xg2 {

struct CompileOptions {
  bool precompute_masks = true;  // false: masks are built on first use (lazy)
  int num_threads = 0;           // 0: hardware concurrency
  AutomatonLimits limits;
  double time_limit_s = 0;  // > 0: automaton and mask building must finish within it
  // > 0: BudgetExceeded("max_memory_bytes") once the automaton, or the automaton plus the
  // masks an eager compile builds, would hold more than this.
  int64_t max_memory_bytes = 0;
};

class CompiledGrammar {
 public:
  CompiledGrammar(Grammar grammar, std::shared_ptr<const GrammarAutomaton> automaton,
                  std::shared_ptr<const TokenizerInfo> tokenizer);

  const Grammar& grammar() const { return grammar_; }
  const std::shared_ptr<const GrammarAutomaton>& automaton() const { return automaton_; }
  const std::shared_ptr<const TokenizerInfo>& tokenizer() const { return tokenizer_; }
  TokenMaskCache& mask_cache() const { return *cache_; }
  // Approximate heap size: the grammar, the automaton, the built mask entries (their pooled
  // cores included) and the mask cache's own tables.
  size_t MemoryBytes() const;

 private:
  Grammar grammar_;
  std::shared_ptr<const GrammarAutomaton> automaton_;
  std::shared_ptr<const TokenizerInfo> tokenizer_;
  std::unique_ptr<TokenMaskCache> cache_;
};

// A background build of a lazily compiled grammar's mask entries (started while the device
// runs the prefill). Destroying it cancels the build and joins the thread.
class PrecomputeTask {
 public:
  PrecomputeTask(std::shared_ptr<CompiledGrammar> compiled, int num_threads, double budget_ms);
  ~PrecomputeTask();
  PrecomputeTask(const PrecomputeTask&) = delete;
  PrecomputeTask& operator=(const PrecomputeTask&) = delete;
  // Waits up to timeout_ms (< 0: forever); true once the build has finished.
  bool Wait(double timeout_ms);
  bool done() const { return done_.load(); }
  // True if every entry was built (false if the budget ran out or it was cancelled).
  bool completed() const { return completed_.load(); }
  void Cancel() { cancel_ = true; }
  // The exception that stopped the build (std::bad_alloc, say), rethrown once it is done.
  void RethrowIfFailed() const;

 private:
  std::shared_ptr<CompiledGrammar> compiled_;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> done_{false};
  std::atomic<bool> completed_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::exception_ptr error_;  // set before done_
  std::thread thread_;
};

// The compiled-grammar cache is bounded in bytes (CompiledGrammar::MemoryBytes, re-measured
// before evicting since a lazy grammar grows as it is used): least recently used grammars are
// dropped beyond cache_limit_bytes (< 0: unbounded, xgrammar's -1; 0 caches nothing).
class GrammarCompiler {
 public:
  GrammarCompiler(std::shared_ptr<const TokenizerInfo> tokenizer, int num_threads, bool cache_enabled,
                  int64_t cache_limit_bytes = cache_registry::kDefaultCompiledCacheBytes);

  std::shared_ptr<CompiledGrammar> Compile(const Grammar& grammar, const CompileOptions& options);
  void ClearCache();
  int64_t cache_size() const;
  CacheStats cache_stats() const;
  int64_t cache_limit_bytes() const;
  void SetCacheLimit(int64_t bytes);
  bool cache_enabled() const { return cache_enabled_; }
  const std::shared_ptr<const TokenizerInfo>& tokenizer() const { return tokenizer_; }
  int num_threads() const { return num_threads_; }

 private:
  struct CacheEntry {
    std::string key;
    std::shared_ptr<CompiledGrammar> compiled;
    int64_t bytes = 0;
  };
  void EvictLocked();

  std::shared_ptr<const TokenizerInfo> tokenizer_;
  int num_threads_;
  bool cache_enabled_;
  int64_t limit_bytes_;  // < 0: unbounded
  mutable std::mutex mu_;
  std::list<CacheEntry> lru_;  // most recent first
  std::unordered_map<std::string, std::list<CacheEntry>::iterator> cache_;
  CacheStats stats_;  // entries/bytes/limit filled in by cache_stats()
  int64_t bytes_ = 0;
  int inserts_since_measure_ = 0;
};

}  // namespace xg2
