// GrammarCompiler turns grammars into CompiledGrammars (automaton + token-mask cache) for one
// tokenizer, and keeps compiled grammars keyed by their printed form.
#pragma once

#include <memory>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <string>
#include <unordered_map>

#include "automata/grammar_automaton.h"
#include "compiler/token_mask_cache.h"
#include "xg2/grammar.h"
#include "xg2/tokenizer.h"

namespace xg2 {

struct CompileOptions {
  bool precompute_masks = true;  // false: masks are built on first use (lazy)
  int num_threads = 0;           // 0: hardware concurrency
  AutomatonLimits limits;
  double time_limit_s = 0;  // > 0: automaton and mask building must finish within it
};

class CompiledGrammar {
 public:
  CompiledGrammar(Grammar grammar, std::shared_ptr<const GrammarAutomaton> automaton,
                  std::shared_ptr<const TokenizerInfo> tokenizer);

  const Grammar& grammar() const { return grammar_; }
  const std::shared_ptr<const GrammarAutomaton>& automaton() const { return automaton_; }
  const std::shared_ptr<const TokenizerInfo>& tokenizer() const { return tokenizer_; }
  TokenMaskCache& mask_cache() const { return *cache_; }
  // Approximate heap size (automaton + built mask entries).
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

 private:
  std::shared_ptr<CompiledGrammar> compiled_;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> done_{false};
  std::atomic<bool> completed_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
};

class GrammarCompiler {
 public:
  GrammarCompiler(std::shared_ptr<const TokenizerInfo> tokenizer, int num_threads,
                  bool cache_enabled);

  std::shared_ptr<CompiledGrammar> Compile(const Grammar& grammar, const CompileOptions& options);
  void ClearCache();
  int64_t cache_size() const;
  const std::shared_ptr<const TokenizerInfo>& tokenizer() const { return tokenizer_; }
  int num_threads() const { return num_threads_; }

 private:
  std::shared_ptr<const TokenizerInfo> tokenizer_;
  int num_threads_;
  bool cache_enabled_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<CompiledGrammar>> cache_;
};

}  // namespace xg2
