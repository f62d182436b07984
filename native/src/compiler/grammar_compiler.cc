#include "compiler/grammar_compiler.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <thread>

#include "grammar/expr_hash.h"
#include "grammar/token_set.h"
#include "matcher/active_temperature.h"
#include "support/thread_pool.h"
#include "support/thread_state.h"
#include "xg2/errors.h"
#include "xg2/limits.h"

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
    // The matcher reads temperatures from the compiled grammar's rules, so they are part of
    // the key (the bits of the float; kNoTemperature when none).
    uint32_t temperature_bits;
    std::memcpy(&temperature_bits, &rule.temperature, sizeof(temperature_bits));
    h.Add(static_cast<uint64_t>(temperature_bits));
    h.Add(static_cast<uint64_t>(rule.max_tokens));  // the matcher enforces budgets too
    h.Add(static_cast<uint64_t>(rule.json_min_chars));
    h.Add(static_cast<uint64_t>(rule.json_max_chars));
    HashBytes(rule.capture, &h);                   // and records captures
    const MarkerSplit& split = rule.marker_split;  // split as the marker says
    h.Add(static_cast<uint64_t>(split.body));
    h.Add(static_cast<uint64_t>(split.marker));
    h.Add(static_cast<uint64_t>(split.hides_marker));
    h.Add(static_cast<uint64_t>(split.whole_capture));
    HashBytes(split.stop_capture, &h);
    h.Add(static_cast<uint64_t>(rule.end_only));              // captures read it
    h.Add(static_cast<uint64_t>(rule.marker_before.length));  // and this
    h.Add(static_cast<uint64_t>(rule.marker_before.hides));
    HashBytes(rule.marker_before.capture, &h);
  }
  h.Add(static_cast<uint64_t>(g.root()));
  return h.Finish();
}

// The grammar's nodes, rules and intern tables, approximately.
size_t GrammarBytes(const Grammar& g) {
  size_t bytes = sizeof(Grammar) + static_cast<size_t>(g.num_exprs()) * (sizeof(Expr) + 16);
  for (ExprId id = 0; id < g.num_exprs(); ++id) {
    const Expr& e = g.expr(id);
    bytes += e.children.capacity() * sizeof(ExprId) + e.ranges.capacity() * sizeof(e.ranges[0]);
  }
  for (RuleId r = 0; r < g.num_rules(); ++r) bytes += sizeof(Rule) + g.rule(r).name.capacity();
  return bytes;
}

// A kept grammar's list node, map node and bucket, and its key.
constexpr int64_t kEntryOverhead = 256;

}  // namespace

CompiledGrammar::CompiledGrammar(Grammar grammar, std::shared_ptr<const GrammarAutomaton> automaton,
                                 std::shared_ptr<const TokenizerInfo> tokenizer)
    : grammar_(std::move(grammar)),
      automaton_(std::move(automaton)),
      tokenizer_(std::move(tokenizer)),
      cache_(new TokenMaskCache(automaton_, tokenizer_)),
      by_id_cache_(new ByIdTokenCache()),
      rule_temperatures_(RuleTemperatures(grammar_, *automaton_)) {}

size_t CompiledGrammar::MemoryBytes() const {
  return sizeof(*this) + GrammarBytes(grammar_) + automaton_->MemoryBytes() +
         static_cast<size_t>(cache_->Stats().memory_bytes) + cache_->OverheadBytes() + by_id_cache_->MemoryBytes();
}

PrecomputeTask::PrecomputeTask(std::shared_ptr<CompiledGrammar> compiled, int num_threads, double budget_ms)
    : state_(std::make_shared<State>()) {
  state_->compiled = std::move(compiled);
  auto deadline = budget_ms < 0 ? std::chrono::steady_clock::time_point::max()
                                : std::chrono::steady_clock::now() +
                                      std::chrono::microseconds(static_cast<int64_t>(budget_ms * 1000));
  bool posted = false;
  try {
    posted = ThreadPool::Background().Post(
        [state = state_, num_threads, deadline]() { Run(*state, num_threads, deadline); });
  } catch (const std::exception&) {
    // No pool (it could not be made): the masks stay lazy.
  }
  if (!posted && !state_->claimed.exchange(true)) state_->Finish();
}

void PrecomputeTask::Run(State& state, int num_threads, std::chrono::steady_clock::time_point deadline) {
  if (state.claimed.exchange(true)) return;  // the handle was dropped before the job started
  // Nothing may escape a pool job: the error waits for the caller.
  try {
    state.completed = state.compiled->mask_cache().PrecomputeAll(std::max(1, num_threads), deadline, &state.cancel);
  } catch (...) {
    state.error = std::current_exception();
  }
  state.Finish();
}

void PrecomputeTask::State::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
}

PrecomputeTask::~PrecomputeTask() {
  state_->cancel = true;
  // Not started yet: it never will (the queued job finds it claimed). Else wait for the
  // entry in progress, so no build outlives its handle.
  if (state_->claimed.exchange(true)) {
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->cv.wait(lock, [this] { return state_->done.load(); });
  }
  // Released here, not by the pool worker that drops the job: the last reference may be
  // Python's, whose release takes the GIL, and a worker that waits for the GIL while the
  // interpreter finalizes is ended by pthread_exit, which unwinds into std::terminate.
  state_->compiled.reset();
}

bool PrecomputeTask::Wait(double timeout_ms) {
  {
    std::unique_lock<std::mutex> lock(state_->mu);
    auto finished = [this] { return state_->done.load(); };
    if (timeout_ms < 0) {
      state_->cv.wait(lock, finished);
    } else if (!state_->cv.wait_for(lock, std::chrono::microseconds(static_cast<int64_t>(timeout_ms * 1000)),
                                    finished)) {
      return false;
    }
  }
  RethrowIfFailed();
  return true;
}

void PrecomputeTask::RethrowIfFailed() const {
  if (state_->done.load() && state_->error) std::rethrow_exception(state_->error);
}

GrammarCompiler::GrammarCompiler(std::shared_ptr<const TokenizerInfo> tokenizer, int num_threads, bool cache_enabled,
                                 int64_t cache_limit_bytes)
    : tokenizer_(std::move(tokenizer)),
      num_threads_(num_threads),
      cache_enabled_(cache_enabled),
      limit_bytes_(cache_limit_bytes < 0 ? -1 : cache_limit_bytes) {
  if (!tokenizer_) throw Error(ErrorKind::kInvalidArgument, "GrammarCompiler needs a tokenizer");
  if (tokenizer_->num_tokens() > 0 && tokenizer_->trie().sorted_tokens.empty() &&
      tokenizer_->stop_token_ids().empty()) {
    // Every mask would be empty: no token could ever be generated. (An empty vocabulary is
    // meant for string-only matching, as xgrammar's TokenizerInfo([]).)
    throw Error(ErrorKind::kInvalidArgument,
                "the vocabulary has neither text tokens nor stop tokens: every mask would be empty");
  }
  if (num_threads_ <= 0) num_threads_ = std::max(1u, std::thread::hardware_concurrency());
  // Start the pools now, while memory is plentiful, rather than in the first compile, which
  // may run out of memory (a thread then fails to start, and the pool has fewer workers).
  ThreadPool::Default();
  ThreadPool::Background();
  // The same for the calling thread, which compiles and fills masks.
  PrepareThreadForExceptions();
}

std::shared_ptr<CompiledGrammar> GrammarCompiler::Compile(const Grammar& grammar, const CompileOptions& options) {
  return WithDeepStack([&] { return CompileOnDeepStack(grammar, options); });
}

std::shared_ptr<CompiledGrammar> GrammarCompiler::CompileOnDeepStack(const Grammar& grammar,
                                                                     const CompileOptions& options) {
  AutomatonLimits limits = options.limits;
  limits.minimize = options.precompute_masks;  // see AutomatonLimits::minimize
  if (options.time_limit_s > 0) {
    limits.time_limit_s = options.time_limit_s;
    limits.deadline =
        std::chrono::steady_clock::now() + std::chrono::microseconds(static_cast<int64_t>(options.time_limit_s * 1e6));
  }
  ThrowIfUnbuilt(grammar);
  const int64_t max_token_id = MaxNamedTokenId(grammar);
  if (max_token_id >= tokenizer_->vocab_size()) {
    throw Error(ErrorKind::kGrammarSemantic, "the grammar names token id " + std::to_string(max_token_id) +
                                                 ", which is out of the vocabulary range [0, " +
                                                 std::to_string(tokenizer_->vocab_size()) + ")");
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
           "/" + std::to_string(options.limits.max_dfa_states) + "/" + std::to_string(options.limits.max_counted_span);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      ++stats_.hits;
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->compiled;
    }
    ++stats_.misses;
  }
  limits.CheckDeadline();
  auto automaton = BuildGrammarAutomaton(grammar, limits);
  if (options.max_memory_bytes > 0 && static_cast<int64_t>(automaton->MemoryBytes()) > options.max_memory_bytes) {
    throw BudgetExceeded("max_memory_bytes",
                         "compile exceeded its memory budget of " + std::to_string(options.max_memory_bytes) +
                             " bytes in its automaton (" + std::to_string(automaton->MemoryBytes()) +
                             " bytes; limit max_memory_bytes, a GrammarCompiler option)");
  }
  auto compiled = std::make_shared<CompiledGrammar>(grammar, automaton, tokenizer_);
  if (options.precompute_masks) {
    int threads = options.num_threads > 0 ? options.num_threads : num_threads_;
    const int64_t mask_budget =
        options.max_memory_bytes > 0
            ? std::max<int64_t>(1, options.max_memory_bytes - static_cast<int64_t>(automaton->MemoryBytes()))
            : 0;
    if (!compiled->mask_cache().PrecomputeAll(threads, limits.deadline, nullptr, mask_budget)) limits.CheckDeadline();
  }
  if (cache_enabled_) {
    const int64_t bytes = static_cast<int64_t>(compiled->MemoryBytes() + kEntryOverhead);
    std::lock_guard<std::mutex> lock(mu_);
    if ((limit_bytes_ < 0 || bytes <= limit_bytes_) && !cache_.count(key)) {
      lru_.push_front(CacheEntry{key, compiled, bytes});
      cache_.emplace(key, lru_.begin());
      bytes_ += bytes;
      EvictLocked();
    }
  }
  cache_registry::MaybeReleaseFreedMemory();
  return compiled;
}

void GrammarCompiler::EvictLocked() {
  if (limit_bytes_ < 0) return;
  // Lazy grammars grow as their masks are built: re-measure them all before evicting, and
  // every 32 inserts (a pass over every kept grammar's states).
  if (bytes_ <= limit_bytes_ && ++inserts_since_measure_ < 32) return;
  inserts_since_measure_ = 0;
  bytes_ = 0;
  for (CacheEntry& e : lru_) bytes_ += (e.bytes = static_cast<int64_t>(e.compiled->MemoryBytes() + kEntryOverhead));
  while (bytes_ > limit_bytes_ && !lru_.empty()) {
    bytes_ -= lru_.back().bytes;
    cache_registry::NoteEvicted(lru_.back().bytes);
    cache_.erase(lru_.back().key);
    lru_.pop_back();
    ++stats_.evictions;
  }
}

void GrammarCompiler::ClearCache() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cache_.clear();
    lru_.clear();
    bytes_ = 0;
  }
  cache_registry::ReleaseFreedMemory();
}

int64_t GrammarCompiler::cache_size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(cache_.size());
}

CacheStats GrammarCompiler::cache_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  CacheStats s = stats_;
  s.entries = static_cast<int64_t>(cache_.size());
  // Measured now: lazy grammars may have grown since the last compile re-measured them.
  for (const CacheEntry& e : lru_) s.bytes += static_cast<int64_t>(e.compiled->MemoryBytes() + kEntryOverhead);
  s.limit_bytes = cache_enabled_ ? limit_bytes_ : 0;
  return s;
}

int64_t GrammarCompiler::cache_limit_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return limit_bytes_;
}

void GrammarCompiler::SetCacheLimit(int64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    limit_bytes_ = bytes < 0 ? -1 : bytes;
    EvictLocked();
  }
  cache_registry::MaybeReleaseFreedMemory();
}

}  // namespace xg2
