#include "compiler/token_mask_cache.h"

#include <algorithm>
#include <climits>
#include <exception>
#include <mutex>
#include <thread>

#include "automata/json_decoder.h"
#include "compiler/follow_suffix_cache.h"
#include "compiler/vocab_walk.h"
#include "parser/earley_parser.h"
#include "support/thread_pool.h"
#include "xg2/errors.h"

namespace xg2 {

TokenMaskCache::TokenMaskCache(std::shared_ptr<const GrammarAutomaton> automaton,
                               std::shared_ptr<const TokenizerInfo> tokenizer)
    : automaton_(std::move(automaton)), tokenizer_(std::move(tokenizer)) {
  num_states_ = automaton_->num_states();
  entries_.reset(new std::atomic<TokenMaskEntry*>[num_states_]);
  building_.reset(new std::atomic<bool>[num_states_]);
  for (int32_t i = 0; i < num_states_; ++i) {
    entries_[i].store(nullptr);
    building_[i].store(false);
  }
  num_words_ = (tokenizer_->vocab_size() + 31) / 32;
  max_token_bytes_ = tokenizer_->trie().max_token_bytes;
  memo_ = std::make_unique<SubtreeMemo>(num_states_);
  rule_hashes_ = ComputeRuleHashes(*automaton_);
}

namespace {

// A loop context takes a star form once its bound is more than kLongTokenBytes iterations
// away (LoopContext then re-checks only tokens of at least kLongTokenBytes bytes): star forms
// serve loops whose bounds are at least kStarFormSpan iterations apart.
constexpr int64_t kStarFormSpan = TokenTrie::kLongTokenBytes + 1;
// Exact counts below a loop's minimum that precompute builds (e.g. the first character of a
// minLength-1 string), and the largest bound whose last counts it builds.
constexpr int64_t kExactLeadingCounts = 4;
constexpr int64_t kSmallBoundMax = 64;

uint64_t LoopEntryKey(int32_t state, int32_t loop_state) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(loop_state)) << 32) | static_cast<uint32_t>(state);
}

// Runs `f` when the scope ends, however it ends (a build's exception included).
template <class F>
class ScopeExit {
 public:
  explicit ScopeExit(F f) : f_(std::move(f)) {}
  ~ScopeExit() { f_(); }
  ScopeExit(const ScopeExit&) = delete;
  ScopeExit& operator=(const ScopeExit&) = delete;

 private:
  F f_;
};

}  // namespace

TokenMaskCache::LoopChoice TokenMaskCache::LoopContext(int32_t loop_state) const {
  // Below this too many tokens would need the parser (and only longer ones are listed).
  constexpr int64_t kMinRecheckLen = TokenTrie::kLongTokenBytes;
  constexpr int64_t kNone = INT32_MAX;
  const auto& r = automaton_->RepeatOf(loop_state);
  const int64_t c = loop_state - r.base;
  const int64_t h = max_token_bytes_;
  // After the current iteration completes: iterations still needed before the loop may end,
  // and further iterations allowed.
  const int64_t to_min = r.min - (c + 1);
  const int64_t to_max = r.max == kUnbounded ? kNone : r.max - (c + 1);
  int32_t ctx;
  int64_t recheck;
  if (to_min <= 0) {
    ctx = r.star();
    recheck = to_max == kNone ? kNone : to_max + 1;
  } else {
    ctx = r.star_no_complete();
    recheck = std::min(to_min + 1, to_max == kNone ? kNone : to_max + 1);
  }
  if (recheck > h) return {ctx, static_cast<int32_t>(kNone)};
  // star_no_complete never completes the loop: with the maximum out of reach, what it accepts
  // holds at the real count, and the tokens left to the parser are the few that the star
  // form lets complete it (GrammarMatcher reads the short ones off that entry), so this holds
  // at every count below the minimum instead of building an entry per count.
  const bool refused_only = to_min > 0 && (to_max == kNone || to_max + 1 > h);
  if (recheck >= kMinRecheckLen || refused_only) return {ctx, static_cast<int32_t>(recheck), refused_only};
  return {loop_state, static_cast<int32_t>(kNone)};
}

const std::vector<uint16_t>& TokenMaskCache::TokenJsonChars(int dec) {
  std::lock_guard<std::mutex> lock(token_json_chars_mu_);
  if (token_json_chars_.empty()) token_json_chars_.resize(kNumDec);
  std::vector<uint16_t>& chars = token_json_chars_[static_cast<size_t>(dec)];
  if (!chars.empty()) return chars;
  const int32_t num_tokens = tokenizer_->num_tokens();
  chars.assign(static_cast<size_t>(num_tokens), 0xFFFF);
  for (int32_t t = 0; t < num_tokens; ++t) {
    if (!tokenizer_->is_text_token(t)) continue;
    int u = dec;
    uint32_t n = 0;
    for (char c : tokenizer_->token_bytes(t)) {
      bool starts = false;
      u = JsonDecNext(u, static_cast<uint8_t>(c), &starts);
      if (u < 0) break;
      n += starts ? 1 : 0;
    }
    if (u >= 0) chars[static_cast<size_t>(t)] = static_cast<uint16_t>(std::min<uint32_t>(n, 0xFFFE));
  }
  return chars;
}

void TokenMaskCache::LongTokens(int32_t min_len, std::vector<int32_t>* out) const {
  out->clear();
  for (const auto& [len, index] : tokenizer_->trie().long_tokens) {
    if (len < min_len) break;
    out->push_back(index);
  }
}

TokenMaskCache::~TokenMaskCache() {
  for (int32_t i = 0; i < num_states_; ++i) delete entries_[i].load();
}

const TokenMaskEntry& TokenMaskCache::Get(int32_t state, int32_t loop_state, bool pooled_suffixes) {
  if (loop_state >= 0) return GetLoopEntry(state, loop_state, pooled_suffixes);
  for (;;) {
    if (TokenMaskEntry* e = entries_[state].load(std::memory_order_acquire)) return *e;
    if (!building_[state].exchange(true, std::memory_order_acq_rel)) {
      // Announced however the build ends: a waiter then finds the entry, or builds it itself
      // after a failed build.
      ScopeExit release([this, state] {
        {
          std::lock_guard<std::mutex> lock(build_mu_);
          building_[state].store(false, std::memory_order_release);
        }
        build_cv_.notify_all();
      });
      return Store(state, BuildEntry(state, -1, pooled_suffixes));
    }
    std::unique_lock<std::mutex> lock(build_mu_);
    build_cv_.wait(lock, [&] {
      return entries_[state].load(std::memory_order_acquire) || !building_[state].load(std::memory_order_acquire);
    });
  }
}

const TokenMaskEntry& TokenMaskCache::GetLoopEntry(int32_t state, int32_t loop_state, bool pooled_suffixes) {
  const uint64_t key = LoopEntryKey(state, loop_state);
  {
    std::unique_lock<std::mutex> lock(loop_mu_);
    for (;;) {
      auto it = loop_entries_.find(key);
      if (it != loop_entries_.end()) return *it->second;
      if (loop_building_.insert(key).second) break;  // claimed: this thread builds it
      loop_cv_.wait(lock);
    }
  }
  ScopeExit release([this, key] {
    {
      std::lock_guard<std::mutex> lock(loop_mu_);
      loop_building_.erase(key);
    }
    loop_cv_.notify_all();
  });
  auto built = std::make_unique<TokenMaskEntry>(BuildEntry(state, loop_state, pooled_suffixes));
  std::lock_guard<std::mutex> lock(loop_mu_);
  return *loop_entries_.emplace(key, std::move(built)).first->second;
}

const TokenMaskEntry* TokenMaskCache::GetUnlessBuilding(int32_t state, int32_t loop_state) {
  if (loop_state < 0) {
    if (TokenMaskEntry* e = entries_[state].load(std::memory_order_acquire)) return e;
    if (building_[state].load(std::memory_order_acquire)) return nullptr;
  } else {
    std::lock_guard<std::mutex> lock(loop_mu_);
    const uint64_t key = LoopEntryKey(state, loop_state);
    auto it = loop_entries_.find(key);
    if (it != loop_entries_.end()) return it->second.get();
    if (loop_building_.count(key)) return nullptr;
  }
  return &Get(state, loop_state, /*pooled_suffixes=*/true);
}

const TokenMaskEntry& TokenMaskCache::Store(int32_t state, TokenMaskEntry entry) {
  auto* built = new TokenMaskEntry(std::move(entry));
  TokenMaskEntry* expected = nullptr;
  if (entries_[state].compare_exchange_strong(expected, built, std::memory_order_acq_rel)) {
    return *built;
  }
  delete built;  // another thread won the race; its entry is identical
  return *expected;
}

void TokenMaskCache::FillFromRuleBundles(const std::vector<std::pair<int32_t, int32_t>>& todo,
                                         std::vector<uint8_t>* bundled) {
  const uint64_t tokenizer = tokenizer_->fingerprint();
  CrossGrammarCache& pool = CrossGrammarCache::Global();
  bundled->assign(automaton_->num_rules(), 0);
  // todo lists the plain states in state order, so a rule's states are consecutive.
  std::shared_ptr<const RuleCores> bundle;
  RuleId bundle_rule = -1;
  for (const auto& [state, loop_state] : todo) {
    if (loop_state >= 0) continue;
    const RuleId r = automaton_->state_rule[state];
    if (r != bundle_rule) {
      bundle_rule = r;
      bundle = pool.FindRule(tokenizer, rule_hashes_.rule[r]);
      (*bundled)[r] = bundle ? 1 : 0;
    }
    if (!bundle) continue;
    const size_t offset = static_cast<size_t>(state - rule_hashes_.first_state[r]);
    if (offset >= bundle->cores.size() || !bundle->cores[offset] || IsBuilt(state)) continue;
    const Hash128 key = MaskEntryKey(*automaton_, rule_hashes_, state, -1);
    Store(state, FinishFromCore(bundle->cores[offset], key, state, -1, /*pooled_suffixes=*/true));
  }
}

void TokenMaskCache::PoolRuleBundles(const std::vector<std::pair<int32_t, int32_t>>& todo,
                                     const std::vector<uint8_t>& bundled) {
  const uint64_t tokenizer = tokenizer_->fingerprint();
  CrossGrammarCache& pool = CrossGrammarCache::Global();
  std::vector<uint8_t> seen(automaton_->num_rules(), 0);
  for (const auto& [state, loop_state] : todo) {
    if (loop_state >= 0) continue;
    const RuleId r = automaton_->state_rule[state];
    if (bundled[r] || seen[r]) continue;
    seen[r] = 1;
    const int32_t first = rule_hashes_.first_state[r];
    const int32_t end = r + 1 < automaton_->num_rules() ? rule_hashes_.first_state[r + 1] : num_states_;
    auto cores = std::make_shared<RuleCores>();
    cores->cores.resize(static_cast<size_t>(end - first));
    bool complete = true;
    for (int32_t s = first; s < end && complete; ++s) {
      if (!automaton_->state_used[s] || !automaton_->has_byte_edges(s)) continue;
      const TokenMaskEntry* e = entries_[s].load(std::memory_order_acquire);
      if (!e)
        complete = false;
      else
        cores->cores[static_cast<size_t>(s - first)] = e->core;
    }
    if (complete) pool.InsertRule(tokenizer, rule_hashes_.rule[r], std::move(cores));
  }
}

bool TokenMaskCache::PrecomputeAll(int num_threads, std::chrono::steady_clock::time_point deadline,
                                   const std::atomic<bool>* cancel, int64_t max_memory_bytes) {
  // (state, loop context) pairs; inside counted loops, the star forms that are reachable and
  // the exact counts below a small minimum (e.g. the first character of a minLength-1 string).
  std::vector<std::pair<int32_t, int32_t>> todo, later;
  for (int32_t s = 0; s < num_states_; ++s) {
    if (!automaton_->state_used[s] || !automaton_->has_byte_edges(s)) continue;
    int32_t rep = automaton_->child_repeat[automaton_->state_rule[s]];
    if (rep < 0) {
      if (!IsBuilt(s)) todo.emplace_back(s, -1);
      continue;
    }
    const auto& r = automaton_->repeats[rep];
    if (r.max == kUnbounded || r.max - r.min >= kStarFormSpan) todo.emplace_back(s, r.star());
    // Below a minimum whose maximum is out of reach, every count takes star_no_complete.
    const bool no_complete_below_min = r.min >= 2 && LoopContext(r.base).loop_state == r.star_no_complete();
    if (r.min >= kStarFormSpan || no_complete_below_min) todo.emplace_back(s, r.star_no_complete());
    for (int64_t c = 0; c < std::min<int64_t>(r.min, kExactLeadingCounts); ++c) {
      int32_t ctx = LoopContext(r.base + static_cast<int32_t>(c)).loop_state;
      if (ctx == r.base + c) todo.emplace_back(s, ctx);
    }
    // The exact counts near a small finite bound (at most kStarFormSpan of them): a walk each
    // at the first fill there would cost milliseconds (e.g. the last characters of
    // "[a-f0-9]{40}"). Long bounds (maxLength 255) are rarely approached and would cost many
    // walks per compile.
    if (r.max != kUnbounded && r.max <= kSmallBoundMax) {
      for (int64_t c = std::max<int64_t>(std::min<int64_t>(r.min, kExactLeadingCounts), r.max - kStarFormSpan);
           c < r.max; ++c) {
        int32_t ctx = LoopContext(r.base + static_cast<int32_t>(c)).loop_state;
        if (ctx == r.base + c) todo.emplace_back(s, ctx);
      }
    }
    // The exact counts just below a minimum with a near maximum (a minLength-36 maxLength-40
    // string's last characters before it may close), after the rest: every document that
    // enters the loop meets them, but later than the others. (With the maximum out of reach,
    // those counts take star_no_complete.)
    {
      const int64_t near_max = (r.max != kUnbounded && r.max <= kSmallBoundMax) ? r.max - kStarFormSpan : r.min;
      for (int64_t c = std::max<int64_t>(kExactLeadingCounts, r.min - kStarFormSpan); c < std::min(r.min, near_max);
           ++c) {
        int32_t ctx = LoopContext(r.base + static_cast<int32_t>(c)).loop_state;
        if (ctx == r.base + c) later.emplace_back(s, ctx);
      }
    }
  }
  // Broadest first: the number of first bytes a state accepts approximates its walk cost.
  std::vector<int32_t> width(todo.size(), 0);
  for (size_t i = 0; i < todo.size(); ++i) {
    int32_t s = todo[i].first;
    for (int32_t k = automaton_->byte_edge_begin[s]; k < automaton_->byte_edge_begin[s + 1]; ++k) {
      width[i] += automaton_->byte_edges[k].hi - automaton_->byte_edges[k].lo + 1;
    }
  }
  std::vector<size_t> order(todo.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return width[a] > width[b]; });
  for (const auto& key : later) {
    order.push_back(todo.size());
    todo.push_back(key);
  }
  // States whose rule another grammar completed: their cores in one lookup per rule.
  std::vector<uint8_t> bundled;
  FillFromRuleBundles(todo, &bundled);
  std::atomic<size_t> next{0};
  std::atomic<bool> stopped{false};
  std::atomic<bool> failed{false};
  std::atomic<int64_t> built_bytes{0};
  std::mutex error_mu;
  std::exception_ptr error;            // the first exception of any worker, rethrown below
  std::vector<size_t> left_to_others;  // todo indices another thread was building (under error_mu)
  auto work = [&]() {
    try {
      while (true) {
        if (failed.load(std::memory_order_relaxed)) return;
        if ((cancel && cancel->load()) || std::chrono::steady_clock::now() > deadline) {
          stopped = true;
          return;
        }
        size_t i = next.fetch_add(1);
        if (i >= order.size()) return;
        const TokenMaskEntry* e = GetUnlessBuilding(todo[order[i]].first, todo[order[i]].second);
        if (!e) {
          // A fill is building it: the others first, this one waited for at the end.
          std::lock_guard<std::mutex> lock(error_mu);
          left_to_others.push_back(order[i]);
          continue;
        }
        if (max_memory_bytes > 0) {
          const int64_t b = built_bytes.fetch_add(static_cast<int64_t>(e->MemoryBytes() + e->core->MemoryBytes())) +
                            static_cast<int64_t>(e->MemoryBytes() + e->core->MemoryBytes());
          if (b > max_memory_bytes ||
              ((i & 63) == 0 && b + static_cast<int64_t>(memo_->MemoryBytes()) > max_memory_bytes)) {
            throw BudgetExceeded("max_memory_bytes", "compile exceeded its memory budget of " +
                                                         std::to_string(max_memory_bytes) +
                                                         " bytes in its token masks (limit max_memory_bytes, a "
                                                         "GrammarCompiler option)");
          }
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mu);
      if (!error) error = std::current_exception();
      failed = true;
    }
  };
  int n = std::max(1, std::min<int>(num_threads, static_cast<int>(todo.size())));
  if (n <= 1) {
    work();
  } else {
    // On the persistent pool, not on threads started per compile: a thread started when
    // memory has run out cannot even report it (glibc aborts when it cannot allocate a new
    // thread's storage for the C++ runtime's thread-locals).
    ThreadPool::Default().ParallelFor(n, [&](int64_t) { work(); }, n);
  }
  if (error) std::rethrow_exception(error);
  if (stopped) return false;
  for (size_t i : left_to_others) Get(todo[i].first, todo[i].second, /*pooled_suffixes=*/true);
  PoolRuleBundles(todo, bundled);
  return true;
}

size_t TokenMaskCache::OverheadBytes() const {
  size_t bytes = sizeof(*this) + static_cast<size_t>(num_states_) * (sizeof(entries_[0]) + sizeof(building_[0])) +
                 rule_hashes_.rule.capacity() * sizeof(Hash128) +
                 rule_hashes_.first_state.capacity() * sizeof(int32_t) +
                 follow_fingerprints_.capacity() * sizeof(Hash128) + memo_->MemoryBytes();
  {
    std::lock_guard<std::mutex> lock(token_json_chars_mu_);
    for (const auto& chars : token_json_chars_) bytes += chars.capacity() * sizeof(uint16_t);
  }
  std::lock_guard<std::mutex> lock(loop_mu_);
  return bytes + loop_entries_.size() * 48;
}

TokenMaskCacheStats TokenMaskCache::Stats() const {
  TokenMaskCacheStats s;
  std::vector<const TokenMaskEntry*> all;
  for (int32_t i = 0; i < num_states_; ++i) all.push_back(entries_[i].load(std::memory_order_acquire));
  {
    std::lock_guard<std::mutex> lock(loop_mu_);
    for (const auto& kv : loop_entries_) all.push_back(kv.second.get());
  }
  for (const TokenMaskEntry* e : all) {
    if (!e) continue;
    ++s.num_entries;
    s.memory_bytes += static_cast<int64_t>(e->MemoryBytes() + e->core->MemoryBytes());
    s.num_uncertain_suffixes += e->num_uncertain_suffixes;
    s.max_uncertain_suffixes = std::max<int64_t>(s.max_uncertain_suffixes, e->num_uncertain_suffixes);
    switch (e->core->storage) {
      case MaskCore::Storage::kAcceptedIds: ++s.num_accepted_list; break;
      case MaskCore::Storage::kNotAcceptedIds: ++s.num_not_accepted_list; break;
      case MaskCore::Storage::kAcceptedBitset: ++s.num_bitset; break;
    }
  }
  return s;
}

TokenMaskEntry TokenMaskCache::BuildEntry(int32_t state, int32_t loop_state, bool pooled_suffixes) {
  const uint64_t tokenizer = tokenizer_->fingerprint();
  const Hash128 key = MaskEntryKey(*automaton_, rule_hashes_, state, loop_state);
  CrossGrammarCache& pool = CrossGrammarCache::Global();
  std::shared_ptr<const MaskCore> core = pool.Find(tokenizer, key);
  if (!core) {
    core = pool.Insert(
        tokenizer, key,
        std::make_shared<const MaskCore>(ComputeCore(automaton_, *tokenizer_, state, loop_state, memo_.get())));
  }
  return FinishFromCore(std::move(core), key, state, loop_state, pooled_suffixes);
}

TokenMaskEntry TokenMaskCache::FinishFromCore(std::shared_ptr<const MaskCore> core, const Hash128& key, int32_t state,
                                              int32_t loop_state, bool pooled_suffixes) {
  const uint64_t tokenizer = tokenizer_->fingerprint();
  const RuleId rule = loop_state >= 0 ? automaton_->RepeatOf(loop_state).rule : automaton_->RuleOf(state);
  if (core->dead_nodes.empty() || !pooled_suffixes) return FinishEntry(std::move(core), automaton_, *tokenizer_, rule);
  // The pruned suffixes from the pool when another grammar had this core under the same
  // follow language.
  if (!follow_ready_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(follow_mu_);
    if (!follow_ready_.load(std::memory_order_relaxed)) {
      follow_fingerprints_ = ComputeFollowFingerprints(*automaton_, rule_hashes_);  // may throw: retried next time
      follow_ready_.store(true, std::memory_order_release);
    }
  }
  const Hash128 follow = follow_fingerprints_.empty() ? Hash128{} : follow_fingerprints_[rule];
  if (follow == Hash128{}) return FinishEntry(std::move(core), automaton_, *tokenizer_, rule);
  Hasher h;
  h.Add(key);
  h.Add(follow);
  const Hash128 suffix_key = h.Finish();
  FollowSuffixCache& suffixes = FollowSuffixCache::Global();
  if (auto finished = suffixes.Find(tokenizer, suffix_key)) {
    TokenMaskEntry entry;
    entry.core = std::move(core);
    entry.uncertain_suffixes = finished->trie;
    entry.num_uncertain_suffixes = finished->count;
    return entry;
  }
  TokenMaskEntry entry = FinishEntry(std::move(core), automaton_, *tokenizer_, rule);
  auto finished = std::make_shared<FinishedSuffixes>();
  finished->trie = entry.uncertain_suffixes;
  finished->count = entry.num_uncertain_suffixes;
  suffixes.Insert(tokenizer, suffix_key, std::move(finished));
  return entry;
}
MaskCore TokenMaskCache::ComputeCore(const std::shared_ptr<const GrammarAutomaton>& automaton,
                                     const TokenizerInfo& tokenizer, int32_t state, int32_t loop_state,
                                     SubtreeMemo* memo, bool fast_paths) {
  return FinishCore(WalkVocabulary(automaton, tokenizer, state, loop_state, memo, fast_paths), tokenizer);
}

MaskCore TokenMaskCache::FinishCore(const TrieWalkResult& walk, const TokenizerInfo& tokenizer) {
  const TokenTrie& trie = tokenizer.trie();
  MaskCore core;
  core.dead_nodes = walk.dead_nodes;
  core.dead_offset_begin = walk.dead_offset_begin;
  core.dead_offsets = walk.dead_offsets;
  int32_t vocab_size = tokenizer.vocab_size();
  int32_t num_normal = static_cast<int32_t>(trie.sorted_tokens.size());
  // Smallest storage: a list costs 32 bits per id, the bitset one bit per vocabulary entry.
  // Runs are in trie order; a bitset pass sorts the ids in O(V / 32 + n) (a comparison sort
  // of a vocabulary-sized list dominated broad states' cost). The bitset marks whichever is
  // fewer, the accepted tokens or the rest (each mark is a scattered write).
  int64_t bitset_words = (vocab_size + 31) / 32;
  std::vector<uint32_t> mark(bitset_words, 0);
  auto mark_range = [&](int32_t b, int32_t e) {
    for (int32_t k = b; k < e; ++k) {
      const int32_t t = trie.sorted_tokens[k];
      mark[t >> 5] |= 1u << (t & 31);
    }
  };
  int32_t num_accepted = 0;
  for (const auto& [b, e] : walk.runs) num_accepted += e - b;
  if (walk.text_up_to > 0) {
    // Also every text token of at most text_up_to characters; the runs may hold some of them
    // (text tokens above non-text ones), so the union is counted.
    const uint32_t* text = trie.text_up_to.data() + (walk.text_up_to - 1) * trie.normal_bitset.size();
    for (const auto& [b, e] : walk.runs) mark_range(b, e);
    num_accepted = 0;
    for (int64_t w = 0; w < bitset_words; ++w) num_accepted += __builtin_popcount(mark[w] |= text[w]);
  } else if (num_accepted > num_normal - num_accepted) {
    int32_t next = 0;  // runs are increasing: the gaps between them are the rejected tokens
    for (const auto& [b, e] : walk.runs) {
      mark_range(next, b);
      next = e;
    }
    mark_range(next, num_normal);
    for (int64_t w = 0; w < bitset_words; ++w) mark[w] = trie.normal_bitset[w] & ~mark[w];
  } else {
    for (const auto& [b, e] : walk.runs) mark_range(b, e);
  }
  const int32_t num_not_accepted = num_normal - num_accepted;
  core.num_accepted = num_accepted;
  auto collect = [&](auto word_of) {
    for (int64_t w = 0; w < bitset_words; ++w) {
      for (uint32_t bits = word_of(w); bits; bits &= bits - 1) {
        core.ids.push_back(static_cast<int32_t>(w * 32 + __builtin_ctz(bits)));
      }
    }
  };
  if (num_accepted <= bitset_words && num_accepted <= num_not_accepted) {
    core.storage = MaskCore::Storage::kAcceptedIds;
    core.ids.reserve(num_accepted);
    collect([&](int64_t w) { return mark[w]; });
  } else if (num_not_accepted <= bitset_words) {
    core.storage = MaskCore::Storage::kNotAcceptedIds;
    core.ids.reserve(num_not_accepted);
    collect([&](int64_t w) { return trie.normal_bitset[w] & ~mark[w]; });
  } else {
    core.storage = MaskCore::Storage::kAcceptedBitset;
    core.bitset = std::move(mark);
  }
  core.ids.shrink_to_fit();
  core.dead_offsets.shrink_to_fit();
  core.dead_nodes.shrink_to_fit();
  return core;
}

TokenMaskEntry TokenMaskCache::FinishEntry(std::shared_ptr<const MaskCore> core,
                                           const std::shared_ptr<const GrammarAutomaton>& automaton,
                                           const TokenizerInfo& tokenizer, RuleId rule) {
  TokenMaskEntry entry;
  entry.core = std::move(core);
  const MaskCore& c = *entry.core;
  if (c.dead_nodes.empty()) return entry;
  const TokenTrie& trie = tokenizer.trie();
  // Bytes that may come first after the rule completes (in any context): suffixes starting
  // otherwise are dropped before they are built.
  EarleyParser follow = EarleyParser::AfterRule(automaton, rule);
  uint64_t follow_first[4];
  follow.NextBytes(follow_first);
  std::vector<std::pair<std::string, int32_t>> suffix_pairs;
  for (size_t n = 0; n < c.dead_nodes.size(); ++n) {
    const int32_t node = c.dead_nodes[n];
    const int32_t tb = trie.token_begin[node], te = trie.token_begin[trie.subtree_end[node]];
    // Every token of the subtree shares the node's path, which covers every offset listed.
    const std::string& path = tokenizer.token_bytes(trie.sorted_tokens[tb]);
    for (int32_t o = c.dead_offset_begin[n]; o < c.dead_offset_begin[n + 1]; ++o) {
      const int32_t k = c.dead_offsets[o];
      const uint8_t first = static_cast<uint8_t>(path[k]);
      if (!((follow_first[first >> 6] >> (first & 63)) & 1)) continue;
      for (int32_t t = tb; t < te; ++t) {
        int32_t id = trie.sorted_tokens[t];
        suffix_pairs.emplace_back(tokenizer.token_bytes(id).substr(k), id);
      }
    }
  }
  if (suffix_pairs.empty()) return entry;
  // Keep the suffixes that what may follow the rule (in any context) can take.
  std::sort(suffix_pairs.begin(), suffix_pairs.end());
  suffix_pairs.erase(std::unique(suffix_pairs.begin(), suffix_pairs.end()), suffix_pairs.end());
  std::vector<std::pair<std::string, int32_t>> kept;
  const std::string* prev = nullptr;
  size_t dead_at = std::string::npos;  // prev's prefix of this length + 1 was rejected
  for (const auto& pair : suffix_pairs) {
    const std::string& s = pair.first;
    size_t common = 0;
    if (prev) {
      while (common < s.size() && common < prev->size() && s[common] == (*prev)[common]) ++common;
    }
    if (dead_at != std::string::npos && common > dead_at) continue;  // same dead prefix
    dead_at = std::string::npos;
    size_t have = static_cast<size_t>(follow.num_rows() - 1);
    if (have > common) follow.TruncateRows(static_cast<int32_t>(common) + 1);
    bool alive = true;
    for (size_t b = std::min(have, common); b < s.size(); ++b) {
      if (!follow.Advance(static_cast<uint8_t>(s[b]))) {
        dead_at = b;
        alive = false;
        break;
      }
    }
    prev = &s;
    if (alive) kept.push_back(pair);
  }
  entry.num_uncertain_suffixes = static_cast<int32_t>(kept.size());
  if (!kept.empty()) entry.uncertain_suffixes = BuildSuffixTrie(kept);
  return entry;
}

}  // namespace xg2
