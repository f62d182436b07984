// GrammarCompiler turns grammars into CompiledGrammars (automaton + token-mask cache) for one
// tokenizer, and keeps compiled grammars keyed by their printed form.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "automata/grammar_automaton.h"
#include "compiler/by_id_token_cache.h"
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
  // The tokens read by id from a row's lead-reading states, shared by the matchers.
  ByIdTokenCache& by_id_cache() const { return *by_id_cache_; }
  // Per automaton rule, its temperature or Rule::kNoTemperature; empty when the grammar sets
  // none (see matcher/active_temperature.h).
  const std::vector<float>& rule_temperatures() const { return rule_temperatures_; }
  // Approximate heap size: the grammar, the automaton, the built mask entries (their pooled
  // cores included), the mask cache's own tables and the kept by-id results.
  size_t MemoryBytes() const;

 private:
  Grammar grammar_;
  std::shared_ptr<const GrammarAutomaton> automaton_;
  std::shared_ptr<const TokenizerInfo> tokenizer_;
  std::unique_ptr<TokenMaskCache> cache_;
  std::unique_ptr<ByIdTokenCache> by_id_cache_;
  std::vector<float> rule_temperatures_;
};

// A background build of a lazily compiled grammar's mask entries (started while the device
// runs the prefill), run on the persistent thread pool: a thread started per build would
// abort the process when memory runs out (see ThreadPool::Post). If it cannot start, or fails,
// the masks just stay lazy (built on first use); the failure is rethrown by Wait. Destroying
// it cancels the build and waits for the entry in progress.
class PrecomputeTask {
 public:
  PrecomputeTask(std::shared_ptr<CompiledGrammar> compiled, int num_threads, double budget_ms);
  ~PrecomputeTask();
  PrecomputeTask(const PrecomputeTask&) = delete;
  PrecomputeTask& operator=(const PrecomputeTask&) = delete;
  // Waits up to timeout_ms (< 0: forever); true once the build has finished.
  bool Wait(double timeout_ms);
  bool done() const { return state_->done.load(); }
  // True if every entry was built (false if the budget ran out, it was cancelled, or it
  // could not start).
  bool completed() const { return state_->completed.load(); }
  void Cancel() { state_->cancel = true; }
  // The exception that stopped the build (std::bad_alloc, say), rethrown once it is done.
  void RethrowIfFailed() const;

 private:
  // Shared with the queued job, which may outlive this handle if it never got to run. The
  // job never touches `compiled` once done (or claimed by the handle).
  struct State {
    std::shared_ptr<CompiledGrammar> compiled;
    std::atomic<bool> cancel{false};
    std::atomic<bool> claimed{false};  // the job started, or the handle gave up on it
    std::atomic<bool> done{false};
    std::atomic<bool> completed{false};
    std::mutex mu;
    std::condition_variable cv;
    std::exception_ptr error;  // set before done
    void Finish();
  };
  static void Run(State& state, int num_threads, std::chrono::steady_clock::time_point deadline);
  std::shared_ptr<State> state_;
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
  // Compile's work, on a thread with the stack its recursive passes need (RunWithDeepStack).
  std::shared_ptr<CompiledGrammar> CompileOnDeepStack(const Grammar& grammar, const CompileOptions& options);

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
