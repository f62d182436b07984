#include "compiler/token_mask_cache.h"

#include "compiler/follow_suffix_cache.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <array>
#include <map>
#include <tuple>
#include <unordered_map>
#include <climits>
#include <thread>

#include "parser/earley_parser.h"
#include "support/sequence_interner.h"
#include "tokenizer/text_slice.h"

namespace xg2 {

// What a walk over (part of) the token trie found: accepted tokens as runs of trie-order
// indices (into trie.sorted_tokens), and the dead subtrees after which the rule may have
// completed inside a token, with those completion offsets.
struct TrieWalkResult {
  std::vector<std::pair<int32_t, int32_t>> runs;  // [begin, end)
  std::vector<int32_t> dead_nodes;
  std::vector<int32_t> dead_offset_begin{0};  // size dead_nodes + 1
  std::vector<int32_t> dead_offsets;
  // Also accepted (not in runs): every text token of at most this many characters
  // (TokenTrie::text_up_to), from a walk that left the text-only subtrees to that set.
  int32_t text_up_to = 0;
  void Accept(int32_t begin, int32_t end) {
    if (begin == end) return;
    if (!runs.empty() && runs.back().second == begin) runs.back().second = end;
    else runs.emplace_back(begin, end);
  }
  // Appends o's runs [run_begin, run_end) and dead nodes [dead_begin, dead_end).
  void AppendPart(const TrieWalkResult& o, size_t run_begin, size_t run_end, size_t dead_begin, size_t dead_end) {
    for (size_t r = run_begin; r < run_end; ++r) Accept(o.runs[r].first, o.runs[r].second);
    for (size_t n = dead_begin; n < dead_end; ++n) {
      dead_nodes.push_back(o.dead_nodes[n]);
      dead_offsets.insert(dead_offsets.end(), o.dead_offsets.begin() + o.dead_offset_begin[n],
                          o.dead_offsets.begin() + o.dead_offset_begin[n + 1]);
      dead_offset_begin.push_back(static_cast<int32_t>(dead_offsets.size()));
    }
  }
  void Append(const TrieWalkResult& o) { AppendPart(o, 0, o.runs.size(), 0, o.dead_nodes.size()); }
  void Clear() {
    runs.clear();
    dead_nodes.clear();
    dead_offset_begin.assign(1, 0);
    dead_offsets.clear();
  }
  size_t CapacityBytes() const {
    return 8 * runs.capacity() + 4 * (dead_nodes.capacity() + dead_offset_begin.capacity() + dead_offsets.capacity());
  }
};

// Walks of one depth-1 trie subtree from one automaton state, shared by the states of a
// grammar: text-like states (free text, JSON string bodies) mostly reach the same state
// after their first byte, and from there their subtrees' results are identical.
// The walks are stored back to back in one set of arrays: a grammar memoises thousands of
// them, and a few blocks per walk were most of what a lazily compiled grammar allocated
// (and what freeing it handed back to the allocator).
class SubtreeMemo {
 public:
  explicit SubtreeMemo(int32_t num_states) : text_bound_(static_cast<size_t>(num_states), -1) {}
  // Walker::TextBound of a state, once per grammar: an unbounded result holds for every state
  // the search reached too (the other states of a property-name automaton, say).
  template <class Walker>
  int32_t TextBound(int32_t state, Walker& walker) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (text_bound_[state] >= 0) return text_bound_[state];
    }
    std::vector<int32_t> reached;
    const int32_t bound = walker.TextBound(state, &reached);
    std::lock_guard<std::mutex> lock(mu_);
    text_bound_[state] = static_cast<int16_t>(bound);
    if (bound == kTextCharsCap) {
      for (int32_t s : reached) text_bound_[s] = static_cast<int16_t>(bound);
    }
    return bound;
  }

  // Appends the walk memoised for (state, trie node) to out; false if none.
  bool AppendTo(int32_t state, int32_t node, TrieWalkResult* out) {
    std::lock_guard<std::mutex> lock(mu_);
    key_.assign({state, node});
    const int32_t w = walks_.Find(key_);
    if (w < 0) return false;
    const Slice& s = slices_[w];
    out->AppendPart(arena_, s.run_begin, s.run_end, s.dead_begin, s.dead_end);
    return true;
  }
  void Insert(int32_t state, int32_t node, const TrieWalkResult& walk) {
    std::lock_guard<std::mutex> lock(mu_);
    if (arena_.CapacityBytes() + walks_.RetainedBytes() + sizeof(Slice) * slices_.capacity() >= kMaxBytes) return;
    key_.assign({state, node});
    bool inserted = false;
    walks_.Intern(key_, &inserted);  // ids count up with slices_
    if (!inserted) return;  // another thread walked it too
    Slice s;
    s.run_begin = arena_.runs.size();
    s.dead_begin = arena_.dead_nodes.size();
    // Raw runs (Accept would merge the first one into the previous walk's last).
    arena_.runs.insert(arena_.runs.end(), walk.runs.begin(), walk.runs.end());
    arena_.AppendPart(walk, 0, 0, 0, walk.dead_nodes.size());
    s.run_end = arena_.runs.size();
    s.dead_end = arena_.dead_nodes.size();
    slices_.push_back(s);
  }

 private:
  static constexpr size_t kMaxBytes = size_t{64} << 20;
  struct Slice {
    size_t run_begin, run_end, dead_begin, dead_end;
  };

  std::mutex mu_;
  TrieWalkResult arena_;      // every memoised walk, back to back
  std::vector<Slice> slices_;
  SequenceInterner walks_;    // (state, trie node) -> index into slices_
  std::vector<int32_t> key_;  // the key being looked up
  std::vector<int16_t> text_bound_;  // per state, -1 until known
};

TokenMaskCache::TokenMaskCache(std::shared_ptr<const GrammarAutomaton> automaton,
                               std::shared_ptr<const TokenizerInfo> tokenizer)
    : automaton_(std::move(automaton)), tokenizer_(std::move(tokenizer)) {
  num_states_ = automaton_->num_states();
  entries_.reset(new std::atomic<TokenMaskEntry*>[num_states_]);
  for (int32_t i = 0; i < num_states_; ++i) entries_[i].store(nullptr);
  num_words_ = (tokenizer_->vocab_size() + 31) / 32;
  max_token_bytes_ = tokenizer_->trie().max_token_bytes;
  memo_ = std::make_unique<SubtreeMemo>(num_states_);
  rule_hashes_ = ComputeRuleHashes(*automaton_);
}

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
  if (recheck >= kMinRecheckLen) return {ctx, static_cast<int32_t>(recheck)};
  return {loop_state, static_cast<int32_t>(kNone)};
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
  if (loop_state >= 0) {
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(loop_state)) << 32) |
                         static_cast<uint32_t>(state);
    {
      std::lock_guard<std::mutex> lock(loop_mu_);
      auto it = loop_entries_.find(key);
      if (it != loop_entries_.end()) return *it->second;
    }
    auto built = std::make_unique<TokenMaskEntry>(BuildEntry(state, loop_state, pooled_suffixes));
    std::lock_guard<std::mutex> lock(loop_mu_);
    auto it = loop_entries_.emplace(key, std::move(built)).first;  // keeps the first if raced
    return *it->second;
  }
  TokenMaskEntry* e = entries_[state].load(std::memory_order_acquire);
  if (e) return *e;
  return Store(state, BuildEntry(state, -1, pooled_suffixes));
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
      if (!e) complete = false;
      else cores->cores[static_cast<size_t>(s - first)] = e->core;
    }
    if (complete) pool.InsertRule(tokenizer, rule_hashes_.rule[r], std::move(cores));
  }
}

bool TokenMaskCache::PrecomputeAll(int num_threads, std::chrono::steady_clock::time_point deadline,
                                   const std::atomic<bool>* cancel) {
  // (state, loop context) pairs; inside counted loops, the star forms that are reachable and
  // the exact counts below a small minimum (e.g. the first character of a minLength-1 string).
  std::vector<std::pair<int32_t, int32_t>> todo;
  for (int32_t s = 0; s < num_states_; ++s) {
    if (!automaton_->state_used[s] || !automaton_->has_byte_edges(s)) continue;
    int32_t rep = automaton_->child_repeat[automaton_->state_rule[s]];
    if (rep < 0) {
      if (!IsBuilt(s)) todo.emplace_back(s, -1);
      continue;
    }
    const auto& r = automaton_->repeats[rep];
    // (Star forms serve whenever at least 16 iterations remain to a bound; see LoopContext.)
    if (r.max == kUnbounded || r.max - r.min >= 17) todo.emplace_back(s, r.star());
    if (r.min >= 17) todo.emplace_back(s, r.star_no_complete());
    for (int64_t c = 0; c < std::min<int64_t>(r.min, 4); ++c) {
      int32_t ctx = LoopContext(r.base + static_cast<int32_t>(c)).loop_state;
      if (ctx == r.base + c) todo.emplace_back(s, ctx);
    }
    // The exact counts near a small finite bound (at most 17 of them): a walk each at the first
    // fill there would cost milliseconds (e.g. the last characters of "[a-f0-9]{40}"). Long
    // bounds (maxLength 255) are rarely approached and would cost many walks per compile.
    if (r.max != kUnbounded && r.max <= 64) {
      for (int64_t c = std::max<int64_t>(std::min<int64_t>(r.min, 4), r.max - 17); c < r.max; ++c) {
        int32_t ctx = LoopContext(r.base + static_cast<int32_t>(c)).loop_state;
        if (ctx == r.base + c) todo.emplace_back(s, ctx);
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
  // States whose rule another grammar completed: their cores in one lookup per rule.
  std::vector<uint8_t> bundled;
  FillFromRuleBundles(todo, &bundled);
  std::atomic<size_t> next{0};
  std::atomic<bool> stopped{false};
  auto work = [&]() {
    while (true) {
      if ((cancel && cancel->load()) || std::chrono::steady_clock::now() > deadline) {
        stopped = true;
        return;
      }
      size_t i = next.fetch_add(1);
      if (i >= order.size()) return;
      Get(todo[order[i]].first, todo[order[i]].second, /*pooled_suffixes=*/true);
    }
  };
  int n = std::max(1, std::min<int>(num_threads, static_cast<int>(todo.size())));
  if (n <= 1) {
    work();
  } else {
    std::vector<std::thread> threads;
    for (int t = 0; t < n; ++t) threads.emplace_back(work);
    for (auto& t : threads) t.join();
  }
  if (!stopped) PoolRuleBundles(todo, bundled);
  return !stopped;
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
    core = pool.Insert(tokenizer, key,
                       std::make_shared<const MaskCore>(ComputeCore(automaton_, *tokenizer_, state, loop_state, memo_.get())));
  }
  return FinishFromCore(std::move(core), key, state, loop_state, pooled_suffixes);
}

TokenMaskEntry TokenMaskCache::FinishFromCore(std::shared_ptr<const MaskCore> core, const Hash128& key,
                                              int32_t state, int32_t loop_state, bool pooled_suffixes) {
  const uint64_t tokenizer = tokenizer_->fingerprint();
  const RuleId rule = loop_state >= 0 ? automaton_->RepeatOf(loop_state).rule : automaton_->RuleOf(state);
  if (core->dead_nodes.empty() || !pooled_suffixes) return FinishEntry(std::move(core), automaton_, *tokenizer_, rule);
  // The pruned suffixes from the pool when another grammar had this core under the same
  // follow language.
  std::call_once(follow_once_, [this] { follow_fingerprints_ = ComputeFollowFingerprints(*automaton_, rule_hashes_); });
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

namespace {

// A rule DFA with 256-entry transition rows built only for the states a walk
// reaches (few: a walk that leaves the broad states dies within a few bytes). A transition
// is a code: kDead, kUnresolved (not looked up yet) or (local << 2) | flags, so the walk's
// inner loop reads one word per trie node.
//
// Under a counted loop (ForLoop) a local state is a configuration (state of the iteration's
// rule, loop state before the iteration completes, whether the loop may end here): when the
// iteration's rule is plain (no rule edges, final states without byte edges, start not
// final) the loop is a DFA over these, and completing an iteration is forced and
// deterministic: the loop state advances (VirtualNext) and the next iteration starts.
class LazyDfa {
 public:
  static constexpr int32_t kDead = -1;
  static constexpr int32_t kUnresolved = -2;
  static constexpr int32_t kFinal = 1;      // the rule (the loop, under a loop) may complete here
  static constexpr int32_t kRuleEdges = 2;  // the parser must take over here

  // loop_calls: states that call a loop of a plain rule continue as configurations
  // (LoopCall); else they have kRuleEdges like any state with rule edges.
  LazyDfa(const GrammarAutomaton& a, bool loop_calls) : a_(a), loop_calls_(loop_calls) {}
  // Loop mode, when the loop of `loop_state` repeats a plain rule; false otherwise.
  bool ForLoop(int32_t loop_state) {
    const int32_t start = PlainChildStart(a_.RepeatOf(loop_state));
    if (start < 0) return false;
    loop_child_start_ = start;
    loop_mode_ = true;
    return true;
  }
  // Whether a code is a configuration of a loop called from the walk's rule (see LoopCall),
  // not one automaton state.
  bool IsLoopCall(int32_t code) const { return set_index_[code >> 2] >= 0; }
  // The code of a global state (in loop mode: of the state with the loop at loop_state,
  // completing it first if it is final), its row made on first use.
  int32_t Code(int32_t global, int32_t loop_state = 0) {
    if (loop_mode_ && a_.state_final[global]) return Completed(loop_state);
    if (!loop_mode_ && loop_calls_) {
      const int32_t call = LoopCall(global);
      if (call != kNoCall) return call;
    }
    return Config(global, loop_state, 0);
  }
  // The transition rows, 256 per state (valid until the next Resolve or Code).
  const int32_t* rows() const { return next_.data(); }
  const int32_t* Row(int32_t code) const { return next_.data() + 256 * static_cast<size_t>(code >> 2); }
  // Looks up an unresolved transition.
  int32_t Resolve(int32_t code, uint8_t byte) {
    const int32_t local = code >> 2;
    const int32_t t = set_index_[local] >= 0 ? ResolveSet(local, byte) : ResolveState(local, byte);
    next_[256 * static_cast<size_t>(local) + byte] = t;
    return t;
  }
  int32_t Step(int32_t code, uint8_t byte) {
    const int32_t t = Row(code)[byte];
    return t == kUnresolved ? Resolve(code, byte) : t;
  }
  int32_t Global(int32_t code) const { return global_[code >> 2]; }

 private:
  static constexpr int32_t kNoCall = INT32_MIN;

  // The start of a repeat's child if the child is plain (no rule edges, final states without
  // byte edges, start not final), else -1.
  int32_t PlainChildStart(const GrammarAutomaton::CountedRepeat& r) const {
    const int32_t start = a_.rule_start[r.child];
    if (a_.state_final[start]) return -1;
    for (int32_t s = start; s < a_.num_states() && a_.state_rule[s] == r.child; ++s) {
      if (a_.rule_edge_begin[s + 1] > a_.rule_edge_begin[s]) return -1;
      if (a_.state_final[s] && a_.byte_edge_begin[s + 1] > a_.byte_edge_begin[s]) return -1;
    }
    return start;
  }
  int32_t EdgeTarget(int32_t state, uint8_t byte) const {
    for (int32_t k = a_.byte_edge_begin[state]; k < a_.byte_edge_begin[state + 1]; ++k) {
      if (byte >= a_.byte_edges[k].lo && byte <= a_.byte_edges[k].hi) return a_.byte_edges[k].target;
    }
    return -1;
  }
  int32_t ResolveState(int32_t local, uint8_t byte) {
    const int32_t target = EdgeTarget(global_[local], byte);
    return target < 0 ? kDead : Code(target, loop_[local]);
  }

  // Loop calls. A state whose only edge is a call of a counted loop of a plain rule (a long
  // maxLength or {m,n} inside a string, say) continues as a set of elements: the caller's
  // states (loop -1) and iterations in progress (iteration state or -1 when no further one
  // may start, loop state, the caller's state after the loop, at an iteration's start). An
  // iteration runs as in loop mode; where the loop may end, the caller's state after it joins
  // the set, so a loop followed by what an iteration could also read (x{0,61} [a-z]) stays a
  // DFA over sets. A caller's state with other rule edges makes the set kRuleEdges (the parser
  // takes over there). kNoCall for a state that is no such call.
  struct Element {
    int32_t state, loop, after, at_start;
    bool operator<(const Element& o) const {
      return std::tie(state, loop, after, at_start) < std::tie(o.state, o.loop, o.after, o.at_start);
    }
    bool operator==(const Element& o) const {
      return state == o.state && loop == o.loop && after == o.after && at_start == o.at_start;
    }
  };
  int32_t LoopCall(int32_t global) {
    if (CallOf(global) == nullptr) return kNoCall;
    std::vector<Element> set;
    bool parser = false;
    callers_.clear();
    AddCaller(global, &set, &parser);
    return SetCode(std::move(set), parser);
  }
  // The call a caller's state makes (exactly one rule edge, on a repeat of a plain rule), or
  // nullptr.
  const DfaRuleEdge* CallOf(int32_t global) const {
    if (a_.rule_edge_begin[global + 1] - a_.rule_edge_begin[global] != 1) return nullptr;
    const DfaRuleEdge& call = a_.rule_edges[a_.rule_edge_begin[global]];
    const int32_t rep = a_.rule_repeat[call.rule];
    if (rep < 0 || PlainChildStart(a_.repeats[rep]) < 0) return nullptr;
    return &call;
  }
  // Adds a caller's state, entering the loop it calls; *parser if it has other rule edges.
  void AddCaller(int32_t global, std::vector<Element>* set, bool* parser) {
    // Once per set: a loop that may end right away can lead back to its own caller ((x{0,40})*).
    if (std::find(callers_.begin(), callers_.end(), global) != callers_.end()) return;
    callers_.push_back(global);
    if (a_.rule_edge_begin[global + 1] == a_.rule_edge_begin[global]) {
      set->push_back({global, -1, -1, 0});
      return;
    }
    const DfaRuleEdge* call = CallOf(global);
    if (call == nullptr) {
      *parser = true;
      return;
    }
    // Its own byte edges (and final flag) stay with it.
    if (a_.state_final[global] || a_.byte_edge_begin[global + 1] > a_.byte_edge_begin[global]) {
      set->push_back({global, -1, -1, 0});
    }
    const auto& r = a_.repeats[a_.rule_repeat[call->rule]];
    AddIterationStart(r.base, call->target, set, parser);
  }
  // The loop at loop_state, about to start an iteration (or to end, if it may).
  void AddIterationStart(int32_t loop_state, int32_t after, std::vector<Element>* set, bool* parser) {
    const auto& r = a_.RepeatOf(loop_state);
    const int32_t first = a_.VirtualNext(loop_state) >= 0 ? a_.rule_start[r.child] : -1;
    set->push_back({first, loop_state, after, 1});
    if (a_.VirtualIsFinal(loop_state)) AddCaller(after, set, parser);
  }
  int32_t ResolveSet(int32_t local, uint8_t byte) {
    std::vector<Element> next;
    bool parser = false;
    callers_.clear();
    for (const Element& e : sets_[set_index_[local]]) {
      if (e.state < 0) continue;
      const int32_t t = EdgeTarget(e.state, byte);
      if (t < 0) continue;
      if (e.loop < 0) {
        AddCaller(t, &next, &parser);
      } else if (!a_.state_final[t]) {
        next.push_back({t, e.loop, e.after, 0});
      } else {  // the iteration completes
        const int32_t after_iteration = a_.VirtualNext(e.loop);
        if (after_iteration >= 0) AddIterationStart(after_iteration, e.after, &next, &parser);
      }
    }
    if (next.empty() && !parser) return kDead;
    return SetCode(std::move(next), parser);
  }
  int32_t SetCode(std::vector<Element> set, bool parser) {
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    // A set of one caller's state without rule edges is that state.
    if (!parser && set.size() == 1 && set[0].loop < 0) return Config(set[0].state, 0, 0);
    std::vector<int32_t> key;
    key.reserve(4 * set.size() + 1);
    key.push_back(parser ? 1 : 0);
    for (const Element& e : set) key.insert(key.end(), {e.state, e.loop, e.after, e.at_start});
    auto [it, inserted] = set_local_.emplace(std::move(key), static_cast<int32_t>(global_.size()));
    if (inserted) {
      const size_t row = next_.size();
      next_.resize(row + 256, kDead);
      int32_t flags = parser ? kRuleEdges : 0;
      for (const Element& e : set) {
        if (e.state < 0) continue;
        if (e.loop < 0 && a_.state_final[e.state]) flags |= kFinal;
        for (int32_t k = a_.byte_edge_begin[e.state]; k < a_.byte_edge_begin[e.state + 1]; ++k) {
          for (int c = a_.byte_edges[k].lo; c <= a_.byte_edges[k].hi; ++c) next_[row + c] = kUnresolved;
        }
      }
      global_.push_back(-1);
      loop_.push_back(0);
      set_index_.push_back(static_cast<int32_t>(sets_.size()));
      sets_.push_back(std::move(set));
      codes_.push_back((it->second << 2) | flags);
    }
    return codes_[it->second];
  }

  // Loop mode: the iteration just completed with the loop at loop_state.
  int32_t Completed(int32_t loop_state) {
    const int32_t after = a_.VirtualNext(loop_state);
    if (after < 0) return Config(-1, loop_state, 0);  // the loop allowed no such iteration
    const int32_t may_end = a_.VirtualIsFinal(after) ? 1 : 0;
    // No further iteration: a state with no byte edges (alive, but only as an ending).
    const int32_t next = a_.VirtualNext(after) >= 0 ? loop_child_start_ : -1;
    return Config(next, after, may_end);
  }
  // The code of (state or -1, loop state, may end), its row made on first use.
  int32_t Config(int32_t global, int32_t loop_state, int32_t may_end) {
    const uint64_t key = loop_mode_ ? (static_cast<uint64_t>(static_cast<uint32_t>(global + 1)) << 33) |
                                          (static_cast<uint64_t>(static_cast<uint32_t>(loop_state)) << 1) |
                                          static_cast<uint64_t>(may_end)
                                    : static_cast<uint64_t>(static_cast<uint32_t>(global));
    auto [it, inserted] = local_.emplace(key, static_cast<int32_t>(global_.size()));
    if (inserted) {
      const size_t row = next_.size();
      next_.resize(row + 256, kDead);
      int32_t flags = 0;
      if (global >= 0) {
        for (int32_t k = a_.byte_edge_begin[global]; k < a_.byte_edge_begin[global + 1]; ++k) {
          for (int c = a_.byte_edges[k].lo; c <= a_.byte_edges[k].hi; ++c) next_[row + c] = kUnresolved;
        }
        if (!loop_mode_) {
          if (a_.state_final[global]) flags |= kFinal;
          if (a_.rule_edge_begin[global + 1] > a_.rule_edge_begin[global]) flags |= kRuleEdges;
        }
      }
      if (may_end) flags |= kFinal;
      global_.push_back(global);
      loop_.push_back(loop_state);
      set_index_.push_back(-1);
      codes_.push_back((it->second << 2) | flags);
    }
    return codes_[it->second];
  }

  const GrammarAutomaton& a_;
  const bool loop_calls_;
  bool loop_mode_ = false;
  int32_t loop_child_start_ = -1;
  std::unordered_map<uint64_t, int32_t> local_;
  std::vector<int32_t> next_;  // 256 codes per local state
  std::vector<int32_t> global_;  // per local: the rule state (-1: none, in loop mode)
  std::vector<int32_t> loop_;    // per local: the loop state (loop mode, loop calls)
  std::vector<int32_t> set_index_;  // per local: its loop-call set in sets_, else -1
  std::vector<std::vector<Element>> sets_;
  std::map<std::vector<int32_t>, int32_t> set_local_;
  std::vector<int32_t> callers_;  // the callers' states a set being made holds
  std::vector<int32_t> codes_;
};

// The vocabulary walk of one state over the token trie. Along the current path it keeps the
// depths (>= 1) after which the rule may complete; a subtree that dies below such a depth is
// recorded as dead with them (its tokens can only pass through that completion). A
// completion before the token (k = 0) needs nothing: the matcher's row already holds the
// callers' continuations, whose entries cover it.
//
// While the path stays in states without rule edges the Earley row is the one top item, so a
// DFA step replaces the parser (most of a broad state's walk). At a state with rule edges the
// parser takes over for that subtree, replaying the path's bytes once.
class VocabWalker {
 public:
  // Out of line: inlined, its by-reference arguments would keep the walk's run in memory.
  [[gnu::noinline]] static void AcceptRun(TrieWalkResult* out, int32_t begin, int32_t end) { out->Accept(begin, end); }

  // fast_paths: a counted loop of a plain rule is walked as a DFA (from inside it or from a
  // state that calls it), and so are the parser's lexical stretches (else by the parser, node
  // by node: the reference for tests).
  VocabWalker(const std::shared_ptr<const GrammarAutomaton>& automaton, const TokenTrie& trie, int32_t state,
              int32_t loop_state, bool fast_paths)
      : automaton_(automaton),
        trie_(trie),
        state_(state),
        loop_state_(loop_state),
        fast_paths_(fast_paths),
        dfa_(*automaton, fast_paths) {
    const size_t depth = static_cast<size_t>(trie.max_token_bytes) + 2;
    code_.assign(depth, LazyDfa::kDead);
    row_code_.assign(depth, kParserRow);
    has_row_.assign(depth, 0);
    path_.assign(depth, 0);
    ends_.assign(depth, 0);
  }

  // The code of the state a walk starts in, or -1 if the parser walks from the start (the
  // state has rule edges, or runs under a loop context).
  int32_t StartCode() {
    const GrammarAutomaton& a = *automaton_;
    if (loop_state_ >= 0) {
      if (!fast_paths_ || !dfa_.ForLoop(loop_state_)) return -1;
      loop_mode_ = true;
      return dfa_.Code(state_, loop_state_);
    }
    if (a.rule_edge_begin[state_ + 1] > a.rule_edge_begin[state_]) return -1;
    return dfa_.Code(state_);
  }
  // The walk runs a counted loop as a DFA (LazyDfa::ForLoop).
  bool loop_mode() const { return loop_mode_; }
  LazyDfa& dfa() { return dfa_; }

  // The most characters k such that the automaton stays alive from `state` (a character
  // boundary) on every text string (tokenizer/text_slice.h) of up to k characters, at most
  // kTextCharsCap - 1; kTextCharsCap if it does on all text. Every text token of at most k
  // characters is then accepted (none lies in a dead subtree), so WalkDfa may take a subtree
  // whose tokens are all such text whole. A breadth-first search over the states text reaches
  // at character boundaries, by the number of characters first reaching them: a string body
  // reaches one or two, a bounded one (maxLength unrolled) one per length, and a state that
  // rejects some text character fails at once.
  // reached (optional) gets the boundary states the search met (when the bound is
  // kTextCharsCap, it holds for each of them as well).
  int32_t TextBound(int32_t state, std::vector<int32_t>* reached = nullptr) {
    const GrammarAutomaton& a = *automaton_;
    std::vector<uint8_t> seen(static_cast<size_t>(a.num_states()), 0);
    std::vector<int32_t> level{state}, next;
    seen[state] = 1;
    // One character from (s, text state): every byte range text allows must be covered by
    // byte edges of s (DFA edges do not overlap, so covered bytes add up).
    auto expand = [&](auto&& self, int32_t s, int32_t text) -> bool {
      const TextRanges ranges = TextRangesFrom(text);
      for (const TextRange* r = ranges.begin; r != ranges.end; ++r) {
        int32_t covered = 0;
        for (int32_t k = a.byte_edge_begin[s]; k < a.byte_edge_begin[s + 1]; ++k) {
          const DfaByteEdge& e = a.byte_edges[k];
          const int32_t lo = std::max<int32_t>(e.lo, r->lo), hi = std::min<int32_t>(e.hi, r->hi);
          if (lo > hi) continue;
          covered += hi - lo + 1;
          if (r->next != 0) {
            if (!self(self, e.target, r->next)) return false;
          } else if (!seen[e.target]) {
            seen[e.target] = 1;
            next.push_back(e.target);
          }
        }
        if (covered != r->hi - r->lo + 1) return false;
      }
      return true;
    };
    for (int32_t chars = 0; !level.empty(); ++chars) {
      if (chars >= kTextCharsCap - 1) return kTextCharsCap - 1;
      for (int32_t s : level) {
        if (!expand(expand, s, 0)) return chars;
      }
      if (reached != nullptr) reached->insert(reached->end(), level.begin(), level.end());
      level.swap(next);
      next.clear();
    }
    return kTextCharsCap;
  }

  // Whether, from `state`, text of more than k characters always dies (after text of up to k
  // characters, which TextBound(state) = k keeps alive, no byte of a text character has an
  // edge), and no state text reaches is final or has rule edges. Then the accepted text
  // tokens are exactly those of at most k characters, none of the others lies in a dead
  // subtree that matters (nothing completes on the way), and a walk may leave every
  // text-only subtree to TokenTrie::text_up_to. Levels of states by exact character count.
  bool TextExact(int32_t state, int32_t k) {
    const GrammarAutomaton& a = *automaton_;
    auto plain = [&](int32_t s) {
      return !a.state_final[s] && a.rule_edge_begin[s + 1] == a.rule_edge_begin[s];
    };
    std::vector<int32_t> level{state}, next;
    // One character from (s, text state) into `next`; false if a state on the way is not
    // plain, or (when `last`) if any byte of a text character has an edge at all.
    auto expand = [&](auto&& self, int32_t s, int32_t text, bool last) -> bool {
      const TextRanges ranges = TextRangesFrom(text);
      for (const TextRange* r = ranges.begin; r != ranges.end; ++r) {
        for (int32_t e = a.byte_edge_begin[s]; e < a.byte_edge_begin[s + 1]; ++e) {
          const DfaByteEdge& edge = a.byte_edges[e];
          if (std::max<int32_t>(edge.lo, r->lo) > std::min<int32_t>(edge.hi, r->hi)) continue;
          if (last && text == 0) return false;
          if (!plain(edge.target)) return false;
          if (r->next != 0) {
            if (!self(self, edge.target, r->next, last)) return false;
          } else if (std::find(next.begin(), next.end(), edge.target) == next.end()) {
            next.push_back(edge.target);
          }
        }
      }
      return true;
    };
    for (int32_t chars = 0; chars <= k; ++chars) {
      for (int32_t s : level) {
        if (!expand(expand, s, 0, chars == k)) return false;
      }
      level.swap(next);
      next.clear();
    }
    return true;
  }

  // TextBound over the lazy DFA's codes from `start` (loop mode, where a state is a loop
  // configuration): byte by byte, each (state, text state) pair inside a character expanded
  // once.
  int32_t TextBoundOfCode(int32_t start) {
    std::vector<uint8_t> seen;  // per local state: bit 0 at a boundary, bit (1 + text state) inside
    auto mark = [&](int32_t code, int32_t text) {
      const size_t local = static_cast<size_t>(code >> 2);
      if (local >= seen.size()) seen.resize(local + 1, 0);
      const uint8_t bit = static_cast<uint8_t>(1u << (text == 0 ? 0 : text));
      if (seen[local] & bit) return false;
      seen[local] |= bit;
      return true;
    };
    std::vector<int32_t> level{start}, next;
    mark(start, 0);
    auto expand = [&](auto&& self, int32_t code, int32_t text) -> bool {
      const TextRanges ranges = TextRangesFrom(text);
      for (const TextRange* r = ranges.begin; r != ranges.end; ++r) {
        for (int b = r->lo; b <= r->hi; ++b) {
          const int32_t t = dfa_.Step(code, static_cast<uint8_t>(b));
          if (t == LazyDfa::kDead) return false;
          if (r->next == 0) {
            if (mark(t, 0)) next.push_back(t);
          } else if (mark(t, r->next) && !self(self, t, r->next)) {
            return false;
          }
        }
      }
      return true;
    };
    for (int32_t chars = 0; !level.empty(); ++chars) {
      if (chars >= kTextCharsCap - 1) return kTextCharsCap - 1;
      for (int32_t code : level) {
        if (!expand(expand, code, 0)) return chars;
      }
      level.swap(next);
      next.clear();
    }
    return kTextCharsCap;
  }

  // Nodes [begin, end) of whole subtrees whose paths start at depth 1 from `start` (a DFA code).
  // Most of a broad state's walk: kept to locals (the stores into `out` would otherwise make
  // the compiler reload every member per node). kText says what becomes of subtrees whose
  // tokens are all text.
  // What WalkDfa does with a subtree whose tokens are all text.
  enum class TextSubtrees {
    kWalk,
    kAcceptShort,  // its tokens have at most text_bound characters: accepted whole
    kLeave,        // always skipped: the caller accounts for text by length (TextExact)
  };
  template <TextSubtrees kText>
  void WalkDfa(int32_t start, int32_t begin, int32_t end, TrieWalkResult* out, int32_t text_bound = 0) {
    const uint8_t* text_chars = trie_.text_chars.data();
    const uint8_t* byte = trie_.byte.data();
    const int32_t* depth = trie_.depth.data();
    const int32_t* subtree_end = trie_.subtree_end.data();
    const int32_t* token_begin = trie_.token_begin.data();
    int32_t* code_at = code_.data();
    uint8_t* path = path_.data();
    int32_t* ends = ends_.data();
    int32_t num_ends = 0;
    const int32_t* rows = dfa_.rows();
    int32_t run_begin = 0, run_end = 0;  // the accepted run being extended
    code_at[0] = start;
    int32_t i = begin;
    while (i < end) {
      if constexpr (kText == TextSubtrees::kLeave) {
        if (text_chars[i] != 0) {
          i = subtree_end[i];
          continue;
        }
      }
      if constexpr (kText == TextSubtrees::kAcceptShort) {
        // text_chars - 1 wraps 0 (not all text) to 255, above any bound.
        if (static_cast<uint8_t>(text_chars[i] - 1) < text_bound) {
          const int32_t tb = token_begin[i];
          if (tb != run_end) {
            AcceptRun(out, run_begin, run_end);
            run_begin = tb;
          }
          i = subtree_end[i];
          run_end = token_begin[i];
          continue;
        }
      }
      const int32_t d = depth[i];
      while (num_ends > 0 && ends[num_ends - 1] >= d) --num_ends;
      const uint8_t b = byte[i];
      const int32_t from = code_at[d - 1];
      int32_t code = rows[256 * static_cast<size_t>(from >> 2) + b];
      path[d] = b;
      // One test for the common case (alive, not final, no rule edges), so one branch.
      if (__builtin_expect((code & (INT32_MIN | LazyDfa::kFinal | LazyDfa::kRuleEdges)) != 0, 0)) {
        if (code == LazyDfa::kUnresolved) {
          code = dfa_.Resolve(from, b);
          rows = dfa_.rows();
        }
        if (code == LazyDfa::kDead) {
          if (num_ends > 0) Dead(i, ends, num_ends, out);
          i = subtree_end[i];
          continue;
        }
        if (code & LazyDfa::kRuleEdges) {
          AcceptRun(out, run_begin, run_end);
          run_begin = run_end = 0;
          ParserSubtree(i, d, ends, num_ends, out);
          rows = dfa_.rows();
          i = subtree_end[i];
          continue;
        }
        if (code & LazyDfa::kFinal) ends[num_ends++] = d;
      }
      code_at[d] = code;
      // Extends the run (or starts one after a gap). No test for a node without tokens: a
      // data-dependent branch the predictor misses on, and tb == te == run_end there anyway
      // unless a gap precedes it (then an empty run starts).
      const int32_t tb = token_begin[i];
      if (tb != run_end) {
        AcceptRun(out, run_begin, run_end);
        run_begin = tb;
      }
      run_end = token_begin[i + 1];
      ++i;
    }
    AcceptRun(out, run_begin, run_end);
  }

  // The whole trie with the parser.
  void WalkParser(TrieWalkResult* out) {
    parser_ends_.clear();
    EarleyParser& p = Parser();
    p.TruncateRows(rows0_);
    row_code_[0] = kParserRow;
    has_row_[0] = 1;
    WalkParserNodes(1, trie_.num_nodes(), out);
  }

 private:
  static constexpr int32_t kParserRow = -1;  // row_code_: the row needs the parser

  EarleyParser& Parser() {
    if (!parser_) {
      parser_.emplace(loop_state_ >= 0 ? EarleyParser::InLoop(automaton_, state_, loop_state_)
                                       : EarleyParser(automaton_, state_));
      rows0_ = parser_->num_rows();
    }
    return *parser_;
  }

  // Node i died below the completion depths ends[0, num_ends).
  void Dead(int32_t i, const int32_t* ends, int32_t num_ends, TrieWalkResult* out) {
    if (num_ends > 0 && trie_.token_begin[i] < trie_.token_begin[trie_.subtree_end[i]]) {
      out->dead_nodes.push_back(i);
      out->dead_offsets.insert(out->dead_offsets.end(), ends, ends + num_ends);
      out->dead_offset_begin.push_back(static_cast<int32_t>(out->dead_offsets.size()));
    }
  }

  // Node i (depth d, its path's first d - 1 bytes alive in the DFA) and its subtree, with the
  // parser; the completion depths along the path so far carry over.
  void ParserSubtree(int32_t i, int32_t d, const int32_t* ends, int32_t num_ends, TrieWalkResult* out) {
    EarleyParser& p = Parser();
    p.TruncateRows(rows0_);
    for (int32_t k = 1; k < d; ++k) p.Advance(path_[k]);  // alive: the DFA says so
    row_code_[d - 1] = kParserRow;
    for (int32_t k = 0; k < d; ++k) has_row_[k] = 1;
    parser_ends_.assign(ends, ends + num_ends);
    WalkParserNodes(i, trie_.subtree_end[i], out);
  }

  // Nodes [begin, end), whole subtrees, the parser holding the rows of the path before begin.
  // Where a row is one item in a state without rule edges that is not final (a lexical
  // stretch: a string body inside a called rule, say), the children step the lazy DFA from
  // that state instead, for as long as it stays in such states (the parser would make the
  // same one-item rows, and nothing completes); the rows are made, replaying the path, when a
  // node needs the parser again (a final state or one with rule edges).
  void WalkParserNodes(int32_t begin, int32_t end, TrieWalkResult* out) {
    EarleyParser& p = *parser_;
    const GrammarAutomaton& a = *automaton_;
    int32_t i = begin;
    while (i < end) {
      const int32_t d = trie_.depth[i];
      while (!parser_ends_.empty() && parser_ends_.back() >= d) parser_ends_.pop_back();
      const uint8_t b = trie_.byte[i];
      path_[d] = b;
      const int32_t from = row_code_[d - 1];
      if (from != kParserRow) {
        const int32_t code = dfa_.Step(from, b);
        if (code == LazyDfa::kDead) {
          Dead(i, parser_ends_.data(), static_cast<int32_t>(parser_ends_.size()), out);
          i = trie_.subtree_end[i];
          continue;
        }
        if ((code & (LazyDfa::kFinal | LazyDfa::kRuleEdges)) == 0) {
          row_code_[d] = code;
          has_row_[d] = 0;
          out->Accept(trie_.token_begin[i], trie_.token_begin[i + 1]);
          ++i;
          continue;
        }
        // Make the rows up to the parent: from the deepest one the parser holds.
        int32_t held = d - 1;
        while (!has_row_[held]) --held;
        p.TruncateRows(rows0_ + held);
        for (int32_t k = held + 1; k < d; ++k) {
          p.Advance(path_[k]);  // alive: the DFA says so
          has_row_[k] = 1;
        }
      }
      p.TruncateRows(rows0_ + d - 1);
      if (!p.Advance(b)) {
        Dead(i, parser_ends_.data(), static_cast<int32_t>(parser_ends_.size()), out);
        i = trie_.subtree_end[i];
        continue;
      }
      has_row_[d] = 1;
      row_code_[d] = kParserRow;
      if (fast_paths_ && p.last_row_end() - p.last_row_begin() == 1) {
        const int32_t s = p.last_row_begin()->state;
        if (!a.is_virtual(s) && (a.closure_trivial[s] & 2)) row_code_[d] = dfa_.Code(s);
      }
      if (p.CanEnd()) parser_ends_.push_back(d);
      out->Accept(trie_.token_begin[i], trie_.token_begin[i + 1]);
      ++i;
    }
  }

  const std::shared_ptr<const GrammarAutomaton>& automaton_;
  const TokenTrie& trie_;
  const int32_t state_;
  const int32_t loop_state_;
  const bool fast_paths_;
  LazyDfa dfa_;
  bool loop_mode_ = false;
  std::optional<EarleyParser> parser_;  // built on first need: most DFA walks never reach a rule edge
  int32_t rows0_ = 0;                   // the parser's rows before the first byte
  std::vector<int32_t> code_;           // per depth: the DFA code after the path's first d bytes
  std::vector<uint8_t> path_;           // per depth: the path's byte there
  std::vector<int32_t> ends_;           // WalkDfa's depths where the rule may complete, increasing
  std::vector<int32_t> parser_ends_;    // the same for the parser's walks
  std::vector<int32_t> row_code_;       // per depth: the DFA code a lexical stretch is in, or kParserRow
  std::vector<uint8_t> has_row_;        // per depth: the parser holds the path's row
};

}  // namespace

MaskCore TokenMaskCache::ComputeCore(const std::shared_ptr<const GrammarAutomaton>& automaton,
                                     const TokenizerInfo& tokenizer, int32_t state, int32_t loop_state,
                                     SubtreeMemo* memo, bool fast_paths) {
  const TokenTrie& trie = tokenizer.trie();
  TrieWalkResult out;
  // Inside a counted loop the top item is the loop (so iterations chain with exact or star
  // counting and the loop's completion is what may end); elsewhere it is the state itself.
  VocabWalker walker(automaton, trie, state, loop_state, fast_paths);
  const int32_t start = walker.StartCode();
  if (start < 0) {
    walker.WalkParser(&out);
    return FinishCore(out, tokenizer);
  }
  if (walker.loop_mode()) {  // configurations are not states: no memo
    const int32_t text_bound = fast_paths ? walker.TextBoundOfCode(start) : 0;
    if (text_bound > 0) walker.WalkDfa<VocabWalker::TextSubtrees::kAcceptShort>(start, 1, trie.num_nodes(), &out, text_bound);
    else walker.WalkDfa<VocabWalker::TextSubtrees::kWalk>(start, 1, trie.num_nodes(), &out);
    return FinishCore(out, tokenizer);
  }
  int32_t text_bound = 0;
  if (fast_paths) text_bound = memo != nullptr ? memo->TextBound(state, walker) : walker.TextBound(state);
  auto walk_dfa = [&](int32_t begin, int32_t end, TrieWalkResult* result) {
    if (text_bound > 0) walker.WalkDfa<VocabWalker::TextSubtrees::kAcceptShort>(start, begin, end, result, text_bound);
    else walker.WalkDfa<VocabWalker::TextSubtrees::kWalk>(start, begin, end, result);
  };
  // Text up to a length and no longer (a maxLength string body): text by length, the rest of
  // the vocabulary walked (no memo: its walks hold no text).
  if (text_bound > 0 && text_bound <= TokenTrie::kTextLengthSets && walker.TextExact(state, text_bound)) {
    walker.WalkDfa<VocabWalker::TextSubtrees::kLeave>(start, 1, trie.num_nodes(), &out);
    out.text_up_to = text_bound;
    return FinishCore(out, tokenizer);
  }
  if (memo == nullptr) {
    walk_dfa(1, trie.num_nodes(), &out);
    return FinishCore(out, tokenizer);
  }
  // Subtree by subtree below the root, through the memo where the first byte leads to a
  // state without rule edges.
  TrieWalkResult fresh;  // one subtree's walk, before it is memoised
  for (int32_t c = 1; c < trie.num_nodes(); c = trie.subtree_end[c]) {
    const int32_t first = walker.dfa().Step(start, trie.byte[c]);
    if (first == LazyDfa::kDead) continue;  // dead at depth 1: nothing accepted, no completion inside
    if ((first & LazyDfa::kRuleEdges) || walker.dfa().IsLoopCall(first)) {
      walk_dfa(c, trie.subtree_end[c], &out);
      continue;
    }
    const int32_t target = walker.dfa().Global(first);
    if (memo->AppendTo(target, c, &out)) continue;
    fresh.Clear();
    walk_dfa(c, trie.subtree_end[c], &fresh);
    memo->Insert(target, c, fresh);
    out.Append(fresh);
  }
  return FinishCore(out, tokenizer);
}

MaskCore TokenMaskCache::FinishCore(const TrieWalkResult& walk, const TokenizerInfo& tokenizer) {
  const TokenTrie& trie = tokenizer.trie();
  MaskCore core;
  core.dead_nodes = walk.dead_nodes;
  core.dead_offset_begin = walk.dead_offset_begin;
  core.dead_offsets = walk.dead_offsets;
  int32_t vocab_size = tokenizer.vocab_size();
  int32_t num_normal = static_cast<int32_t>(trie.sorted_tokens.size());
  int32_t num_accepted = 0;
  for (const auto& [b, e] : walk.runs) num_accepted += e - b;
  const uint32_t* text = nullptr;  // the text tokens of at most walk.text_up_to characters
  if (walk.text_up_to > 0) {
    const size_t words = trie.normal_bitset.size();
    text = trie.text_up_to.data() + (walk.text_up_to - 1) * words;
    // The runs may hold some of them too (text tokens above non-text ones): count the union.
    std::vector<uint32_t> runs_mark(words, 0);
    for (const auto& [b, e] : walk.runs) {
      for (int32_t k = b; k < e; ++k) runs_mark[trie.sorted_tokens[k] >> 5] |= 1u << (trie.sorted_tokens[k] & 31);
    }
    num_accepted = 0;
    for (size_t w = 0; w < words; ++w) num_accepted += __builtin_popcount(runs_mark[w] | text[w]);
  }
  int32_t num_not_accepted = num_normal - num_accepted;
  core.num_accepted = num_accepted;
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
  const bool mark_rejected = text == nullptr && num_accepted > num_not_accepted;
  if (text != nullptr) {
    for (const auto& [b, e] : walk.runs) mark_range(b, e);
    for (int64_t w = 0; w < bitset_words; ++w) mark[w] |= text[w];
  } else if (mark_rejected) {
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
