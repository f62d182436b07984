#include "compiler/follow_suffix_cache.h"

#include "compiler/cache_registry.h"

namespace xg2 {

FollowSuffixCache& FollowSuffixCache::Global() {
  static FollowSuffixCache* cache = new FollowSuffixCache();  // never destroyed
  return *cache;
}

Hash128 FollowSuffixCache::Combine(uint64_t tokenizer, const Hash128& key) {
  Hasher h;
  h.Add(tokenizer);
  h.Add(key);
  return h.Finish();
}

std::shared_ptr<const FinishedSuffixes> FollowSuffixCache::Find(uint64_t tokenizer, const Hash128& key) {
  const Hash128 k = Combine(tokenizer, key);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(k);
  if (it == map_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  return it->second;
}

void FollowSuffixCache::Insert(uint64_t tokenizer, const Hash128& key, std::shared_ptr<const FinishedSuffixes> value) {
  const Hash128 k = Combine(tokenizer, key);
  // The value, its control block and the map's node and bucket.
  const int64_t bytes = static_cast<int64_t>(sizeof(FinishedSuffixes) + value->trie.MemoryBytes() + 96);
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes > limit_bytes_) return;
  if (stats_.bytes + bytes > limit_bytes_) {
    // Emptied rather than evicted one by one: entries are cheap to rebuild, and a full pool
    // means the workload's shapes changed.
    stats_.evictions += static_cast<int64_t>(map_.size());
    cache_registry::NoteEvicted(stats_.bytes);
    std::unordered_map<Hash128, std::shared_ptr<const FinishedSuffixes>, Hash128Hasher>().swap(map_);
    stats_.bytes = 0;
  }
  if (map_.emplace(k, std::move(value)).second) stats_.bytes += bytes;
  stats_.entries = static_cast<int64_t>(map_.size());
}

FollowSuffixCacheStats FollowSuffixCache::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  FollowSuffixCacheStats s = stats_;
  s.limit_bytes = limit_bytes_;
  return s;
}

void FollowSuffixCache::SetLimit(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  limit_bytes_ = bytes < 0 ? 0 : bytes;
  if (stats_.bytes > limit_bytes_) {
    stats_.evictions += static_cast<int64_t>(map_.size());
    map_.clear();
    stats_.bytes = 0;
    stats_.entries = 0;
  }
}

void FollowSuffixCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  std::unordered_map<Hash128, std::shared_ptr<const FinishedSuffixes>, Hash128Hasher>().swap(map_);
  stats_ = FollowSuffixCacheStats();
}

}  // namespace xg2
