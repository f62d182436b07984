#include "compiler/grammar_compiler.h"

#include <cstdio>
#include <thread>

#include "grammar/expr_hash.h"

namespace xg2 {
namespace {

// A 128-bit hash of the grammar exactly as stored (every node, rule and the root): the
// compiled-grammar cache's key. Printing the grammar as EBNF for the key cost as much as a
// warm compile's mask lookups.
Hash128 GrammarFingerprint(const Grammar& g) {
  Hasher h;
  h.Add(static_cast<uint64_t>(g.num_exprs()));
  for (ExprId id = 0; id < g.num_exprs(); ++id) {
    const Expr& e = g.expr(id);
    HashExprFields(e, &h);
    if (e.kind == ExprKind::kRuleRef) h.Add(static_cast<uint64_t>(e.rule));
    h.Add(e.children.size());
    for (ExprId c : e.children) h.Add(static_cast<uint64_t>(c));
  }
  h.Add(static_cast<uint64_t>(g.num_rules()));
  for (RuleId r = 0; r < g.num_rules(); ++r) {
    const Rule& rule = g.rule(r);
    HashBytes(rule.name, &h);
    h.Add(static_cast<uint64_t>(rule.body));
    h.Add(static_cast<uint64_t>(rule.lookahead));
  }
  h.Add(static_cast<uint64_t>(g.root()));
  return h.Finish();
}

}  // namespace

CompiledGrammar::CompiledGrammar(Grammar grammar, std::shared_ptr<const GrammarAutomaton> automaton,
                                 std::shared_ptr<const TokenizerInfo> tokenizer)
    : grammar_(std::move(grammar)),
      automaton_(std::move(automaton)),
      tokenizer_(std::move(tokenizer)),
      cache_(new TokenMaskCache(automaton_, tokenizer_)) {}

size_t CompiledGrammar::MemoryBytes() const {
  return automaton_->MemoryBytes() + static_cast<size_t>(cache_->Stats().memory_bytes);
}

PrecomputeTask::PrecomputeTask(std::shared_ptr<CompiledGrammar> compiled, int num_threads,
                               double budget_ms)
    : compiled_(std::move(compiled)) {
  auto deadline = budget_ms < 0 ? std::chrono::steady_clock::time_point::max()
                                 : std::chrono::steady_clock::now() +
                                       std::chrono::microseconds(static_cast<int64_t>(budget_ms * 1000));
  thread_ = std::thread([this, num_threads, deadline]() {
    bool all = compiled_->mask_cache().PrecomputeAll(std::max(1, num_threads), deadline, &cancel_);
    completed_ = all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
  });
}

PrecomputeTask::~PrecomputeTask() {
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
}

bool PrecomputeTask::Wait(double timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  if (timeout_ms < 0) {
    cv_.wait(lock, [this] { return done_.load(); });
    return true;
  }
  return cv_.wait_for(lock, std::chrono::microseconds(static_cast<int64_t>(timeout_ms * 1000)),
                      [this] { return done_.load(); });
}

GrammarCompiler::GrammarCompiler(std::shared_ptr<const TokenizerInfo> tokenizer, int num_threads,
                                 bool cache_enabled)
    : tokenizer_(std::move(tokenizer)), num_threads_(num_threads), cache_enabled_(cache_enabled) {
  if (num_threads_ <= 0) num_threads_ = std::max(1u, std::thread::hardware_concurrency());
}

std::shared_ptr<CompiledGrammar> GrammarCompiler::Compile(const Grammar& grammar,
                                                          const CompileOptions& options) {
  AutomatonLimits limits = options.limits;
  limits.minimize = options.precompute_masks;  // see AutomatonLimits::minimize
  if (options.time_limit_s > 0) {
    limits.time_limit_s = options.time_limit_s;
    limits.deadline = std::chrono::steady_clock::now() +
                      std::chrono::microseconds(static_cast<int64_t>(options.time_limit_s * 1e6));
  }
  std::string key;
  if (cache_enabled_) {
    const Hash128 fingerprint = GrammarFingerprint(grammar);
    char hex[40];
    std::snprintf(hex, sizeof(hex), "%016llx%016llx", static_cast<unsigned long long>(fingerprint.hi),
                  static_cast<unsigned long long>(fingerprint.lo));
    key = hex;
    key.push_back(options.precompute_masks ? 'E' : 'L');
    key += std::to_string(options.limits.max_unrolled_repeat) + "/" + std::to_string(options.limits.max_nfa_states) +
           "/" + std::to_string(options.limits.max_dfa_states);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  limits.CheckDeadline();
  auto automaton = BuildGrammarAutomaton(grammar, limits);
  auto compiled = std::make_shared<CompiledGrammar>(grammar, automaton, tokenizer_);
  if (options.precompute_masks) {
    int threads = options.num_threads > 0 ? options.num_threads : num_threads_;
    if (!compiled->mask_cache().PrecomputeAll(threads, limits.deadline)) limits.CheckDeadline();
  }
  if (cache_enabled_) {
    std::lock_guard<std::mutex> lock(mu_);
    cache_.emplace(key, compiled);
  }
  return compiled;
}

void GrammarCompiler::ClearCache() {
  std::lock_guard<std::mutex> lock(mu_);
  cache_.clear();
}

int64_t GrammarCompiler::cache_size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(cache_.size());
}

}  // namespace xg2
