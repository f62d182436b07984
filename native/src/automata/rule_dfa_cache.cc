#include "automata/rule_dfa_cache.h"

#include <algorithm>
#include <list>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/cache_registry.h"
#include "grammar/expr_hash.h"
#include "support/hash.h"

namespace xg2 {
namespace {

// The body's structure with rule references numbered by first appearance (depth first).
class BodyKey {
 public:
  explicit BodyKey(const Grammar& g) : g_(g) {}
  Hash128 Compute(ExprId body, const AutomatonLimits& limits) {
    h_.Add(static_cast<uint64_t>(limits.max_unrolled_repeat));
    h_.Add(static_cast<uint64_t>(limits.max_dfa_states));
    h_.Add(static_cast<uint64_t>(limits.max_nfa_states));
    h_.Add(static_cast<uint64_t>(limits.minimize));
    Visit(body);
    return h_.Finish();
  }
  const std::vector<RuleId>& slots() const { return slots_; }

 private:
  void Visit(ExprId id) {
    const Expr& e = g_.expr(id);
    HashExprFields(e, &h_);
    if (e.kind == ExprKind::kRuleRef) {
      auto it = std::find(slots_.begin(), slots_.end(), e.rule);
      h_.Add(static_cast<uint64_t>(it - slots_.begin()));
      if (it == slots_.end()) slots_.push_back(e.rule);
    }
    h_.Add(e.children.size());
    for (ExprId c : e.children) Visit(c);
  }

  const Grammar& g_;
  Hasher h_;
  std::vector<RuleId> slots_;
};

// The automaton's arrays (by capacity) plus the list node and the map's node and bucket.
size_t DfaBytes(const RuleDfa& d) {
  return sizeof(RuleDfa) + sizeof(Hash128) + 96 + d.is_final.capacity() +
         (d.byte_begin.capacity() + d.rule_begin.capacity()) * sizeof(int32_t) +
         d.byte_list.capacity() * sizeof(DfaByteEdge) + d.rule_list.capacity() * sizeof(DfaRuleEdge);
}

class Cache {
 public:
  bool Find(const Hash128& key, RuleDfa* out) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) {
      ++stats_.misses;
      return false;
    }
    ++stats_.hits;
    lru_.splice(lru_.begin(), lru_, it->second);
    *out = it->second->second;
    return true;
  }
  void Insert(const Hash128& key, const RuleDfa& dfa) {
    std::lock_guard<std::mutex> lock(mu_);
    if (map_.count(key) || limit_ == 0) return;
    lru_.emplace_front(key, dfa);
    map_.emplace(key, lru_.begin());
    bytes_ += DfaBytes(dfa);
    Evict();
  }
  void SetLimit(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    limit_ = bytes;
    Evict();
  }
  void Evict() {
    while (bytes_ > limit_ && !lru_.empty()) {
      bytes_ -= DfaBytes(lru_.back().second);
      cache_registry::NoteEvicted(static_cast<int64_t>(DfaBytes(lru_.back().second)));
      map_.erase(lru_.back().first);
      lru_.pop_back();
      ++stats_.evictions;
    }
  }
  RuleDfaCacheStats Stats() {
    std::lock_guard<std::mutex> lock(mu_);
    RuleDfaCacheStats s = stats_;
    s.entries = static_cast<int64_t>(map_.size());
    s.bytes = static_cast<int64_t>(bytes_);
    s.limit_bytes = static_cast<int64_t>(limit_);
    return s;
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    decltype(map_)().swap(map_);
    lru_.clear();
    bytes_ = 0;
    stats_ = RuleDfaCacheStats();
  }

 private:
  std::mutex mu_;
  std::list<std::pair<Hash128, RuleDfa>> lru_;  // most recent first
  std::unordered_map<Hash128, std::list<std::pair<Hash128, RuleDfa>>::iterator, Hash128Hasher> map_;
  size_t bytes_ = 0;
  size_t limit_ = size_t{48} << 20;  // cache_registry.h's default budget / 8: thousands of automata
  RuleDfaCacheStats stats_;
};

Cache& GlobalCache() {
  static Cache* cache = new Cache();  // never destroyed: safe at exit from any thread
  return *cache;
}

}  // namespace

RuleDfa CachedRuleDfa(const Grammar& g, ExprId body, const AutomatonLimits& limits) {
  BodyKey key_builder(g);
  const Hash128 key = key_builder.Compute(body, limits);
  const std::vector<RuleId>& slots = key_builder.slots();
  RuleDfa dfa;
  if (!GlobalCache().Find(key, &dfa)) {
    dfa = BuildRuleDfa(g, body, limits);
    RuleDfa keyed = dfa;  // rule edges by slot
    for (auto& e : keyed.rule_list) {
      e.rule = static_cast<RuleId>(std::find(slots.begin(), slots.end(), e.rule) - slots.begin());
    }
    GlobalCache().Insert(key, keyed);
    return dfa;
  }
  for (auto& e : dfa.rule_list) e.rule = slots[e.rule];
  for (int32_t s = 0; s < dfa.num_states(); ++s) {
    std::sort(dfa.rule_list.begin() + dfa.rule_begin[s], dfa.rule_list.begin() + dfa.rule_begin[s + 1],
              [](const DfaRuleEdge& a, const DfaRuleEdge& b) { return a.rule < b.rule; });
  }
  return dfa;
}

RuleDfaCacheStats GetRuleDfaCacheStats() { return GlobalCache().Stats(); }
void ClearRuleDfaCache() { GlobalCache().Clear(); }
void SetRuleDfaCacheLimit(int64_t bytes) { GlobalCache().SetLimit(static_cast<size_t>(std::max<int64_t>(bytes, 0))); }

}  // namespace xg2
