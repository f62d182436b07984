#include "compiler/cross_grammar_cache.h"

namespace xg2 {

CrossGrammarCache& CrossGrammarCache::Global() {
  // Never destroyed: compiled grammars may outlive static destruction order.
  static CrossGrammarCache* cache = [] {
    auto* c = new CrossGrammarCache();
    c->stats_.limit_bytes = int64_t{512} << 20;
    return c;
  }();
  return *cache;
}

std::shared_ptr<const MaskCore> CrossGrammarCache::Find(uint64_t tokenizer, const Hash128& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(Key{tokenizer, key});
  if (it == map_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.core;
}

std::shared_ptr<const MaskCore> CrossGrammarCache::Insert(uint64_t tokenizer, const Hash128& key,
                                                          std::shared_ptr<const MaskCore> core) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stats_.limit_bytes <= 0) return core;
  Key k{tokenizer, key};
  auto it = map_.find(k);
  if (it != map_.end()) return it->second.core;
  lru_.push_front(k);
  int64_t bytes = static_cast<int64_t>(core->MemoryBytes());
  map_.emplace(k, Slot{core, lru_.begin(), bytes});
  stats_.bytes += bytes;
  stats_.entries = static_cast<int64_t>(map_.size());
  EvictLocked();
  return core;
}

void CrossGrammarCache::EvictLocked() {
  while (stats_.bytes > stats_.limit_bytes && !lru_.empty()) {
    auto it = map_.find(lru_.back());
    stats_.bytes -= it->second.bytes;
    map_.erase(it);
    lru_.pop_back();
    ++stats_.evictions;
  }
  stats_.entries = static_cast<int64_t>(map_.size());
}

CrossGrammarCacheStats CrossGrammarCache::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CrossGrammarCache::SetLimit(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.limit_bytes = bytes < 0 ? 0 : bytes;
  EvictLocked();
}

void CrossGrammarCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  map_.clear();
  lru_.clear();
  stats_.bytes = 0;
  stats_.entries = 0;
}

}  // namespace xg2
