#include "compiler/cross_grammar_cache.h"

#include <algorithm>

#include "compiler/cache_registry.h"

namespace xg2 {

CrossGrammarCache& CrossGrammarCache::Global() {
  // Never destroyed: compiled grammars may outlive static destruction order.
  static CrossGrammarCache* cache = [] {
    auto* c = new CrossGrammarCache();
    c->stats_.limit_bytes = int64_t{384} << 20;  // cache_registry.h's default budget
    return c;
  }();
  return *cache;
}

size_t CrossGrammarCache::Probe(uint64_t tokenizer, const Hash128& key) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = (key.lo ^ (tokenizer * 0x9E3779B97F4A7C15ull)) & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (!s.core || (s.key == key && s.tokenizer == tokenizer)) return i;
  }
}

void CrossGrammarCache::Rebuild(size_t capacity) {
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.resize(capacity);
  for (Slot& s : old) {
    if (s.core) slots_[Probe(s.tokenizer, s.key)] = std::move(s);
  }
}

std::shared_ptr<const MaskCore> CrossGrammarCache::Find(uint64_t tokenizer, const Hash128& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!slots_.empty()) {
    Slot& s = slots_[Probe(tokenizer, key)];
    if (s.core) {
      ++stats_.hits;
      s.last_used = ++clock_;
      return s.core;
    }
  }
  ++stats_.misses;
  return nullptr;
}

std::shared_ptr<const MaskCore> CrossGrammarCache::Insert(uint64_t tokenizer, const Hash128& key,
                                                          std::shared_ptr<const MaskCore> core) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stats_.limit_bytes <= 0) return core;
  if (2 * static_cast<size_t>(stats_.entries + 1) > slots_.size()) Rebuild(std::max<size_t>(1024, 2 * slots_.size()));
  Slot& s = slots_[Probe(tokenizer, key)];
  if (s.core) return s.core;
  s.tokenizer = tokenizer;
  s.key = key;
  s.bytes = static_cast<int64_t>(core->MemoryBytes());
  s.last_used = ++clock_;
  s.core = core;
  stats_.bytes += s.bytes;
  ++stats_.entries;
  EvictLocked();
  return core;
}

size_t CrossGrammarCache::TableCapacity(int64_t entries) {
  size_t capacity = 1024;
  while (2 * static_cast<size_t>(entries + 1) > capacity) capacity *= 2;
  return capacity;
}

int64_t CrossGrammarCache::TableBytesLocked() const {
  return static_cast<int64_t>(slots_.capacity() * sizeof(Slot)) + rule_bytes_;
}

void CrossGrammarCache::EvictLocked() {
  if (stats_.bytes + TableBytesLocked() <= stats_.limit_bytes) return;
  rules_.clear();
  rule_bytes_ = 0;
  // Least recently used first, down to 90% of the limit so that eviction (a pass over the
  // table) is not repeated on every insert near the limit.
  std::vector<std::pair<uint64_t, size_t>> order;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].core) order.emplace_back(slots_[i].last_used, i);
  }
  std::sort(order.begin(), order.end());
  const int64_t target = stats_.limit_bytes - stats_.limit_bytes / 10;
  // The table is rebuilt at the size the survivors need: at most 4 slots per entry.
  for (const auto& [used, i] : order) {
    if (stats_.bytes + static_cast<int64_t>(TableCapacity(stats_.entries) * sizeof(Slot)) <= target) break;
    stats_.bytes -= slots_[i].bytes;
    cache_registry::NoteEvicted(slots_[i].bytes);
    slots_[i] = Slot();
    --stats_.entries;
    ++stats_.evictions;
  }
  // Re-place the survivors (probing needs no gaps inside chains), in a table at most half full.
  if (stats_.entries == 0) {
    std::vector<Slot>().swap(slots_);  // a limit below an empty table's size keeps none
    return;
  }
  Rebuild(std::min(TableCapacity(stats_.entries), slots_.size()));
}

std::shared_ptr<const RuleCores> CrossGrammarCache::FindRule(uint64_t tokenizer, const Hash128& rule_hash) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = rules_.find({tokenizer, rule_hash});
  if (it == rules_.end()) return nullptr;
  for (const auto& c : it->second->cores) stats_.hits += c ? 1 : 0;
  return it->second;
}

void CrossGrammarCache::InsertRule(uint64_t tokenizer, const Hash128& rule_hash,
                                   std::shared_ptr<const RuleCores> cores) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stats_.limit_bytes <= 0) return;
  constexpr size_t kMaxRules = 1 << 16;
  const int64_t bytes =
      static_cast<int64_t>(sizeof(RuleCores) + 64 + cores->cores.capacity() * sizeof(cores->cores[0]));
  if (rules_.size() >= kMaxRules || stats_.bytes + TableBytesLocked() + bytes > stats_.limit_bytes) {
    rules_.clear();
    rule_bytes_ = 0;
  }
  if (stats_.bytes + TableBytesLocked() + bytes > stats_.limit_bytes) return;
  if (rules_.emplace(std::make_pair(tokenizer, rule_hash), std::move(cores)).second) rule_bytes_ += bytes;
}

CrossGrammarCacheStats CrossGrammarCache::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  CrossGrammarCacheStats s = stats_;
  s.bytes += TableBytesLocked();
  return s;
}

void CrossGrammarCache::SetLimit(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.limit_bytes = bytes < 0 ? 0 : bytes;
  if (stats_.limit_bytes == 0) {
    std::vector<Slot>().swap(slots_);
    rules_.clear();
    rule_bytes_ = 0;
    stats_.bytes = 0;
    stats_.entries = 0;
    return;
  }
  if (!slots_.empty()) EvictLocked();
}

void CrossGrammarCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Slot>().swap(slots_);
  rules_.clear();
  rule_bytes_ = 0;
  stats_.bytes = 0;
  stats_.entries = 0;
}

}  // namespace xg2
