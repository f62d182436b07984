// GrammarCompiler turns grammars into CompiledGrammars (automaton + token-mask cache) for one
// tokenizer, and keeps compiled grammars keyed by their printed form.
#pragma once

#include <memory>
#include <mutex>
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
