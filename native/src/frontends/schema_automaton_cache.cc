#include "frontends/schema_automaton_cache.h"

#include <algorithm>

namespace xg2::jsonschema {

// Never destroyed: compiles may run during static destruction. Each starts at
// cache_registry.h's default budget / 16.
SchemaAutomatonCache& SchemaAutomatonCache::KeyExclusions() {
  static auto* cache = new SchemaAutomatonCache(int64_t{24} << 20);
  return *cache;
}

SchemaAutomatonCache& SchemaAutomatonCache::Patterns() {
  static auto* cache = new SchemaAutomatonCache(int64_t{24} << 20);
  return *cache;
}

std::shared_ptr<const ByteDfaSpec> SchemaAutomatonCache::Find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  return it->second;
}

void SchemaAutomatonCache::Insert(const std::string& key, std::shared_ptr<const ByteDfaSpec> dfa) {
  // The key, the automaton's arrays, and the map's node, bucket and control block.
  size_t bytes = 2 * key.size() + 128 + dfa->is_final.capacity() + dfa->edges.capacity() * sizeof(dfa->edges[0]);
  for (const auto& edges : dfa->edges) bytes += edges.capacity() * sizeof(ByteDfaEdge);
  std::lock_guard<std::mutex> lock(mu_);
  if (static_cast<int64_t>(bytes) > stats_.limit_bytes) return;
  if (map_.size() >= kMaxEntries || stats_.bytes + static_cast<int64_t>(bytes) > stats_.limit_bytes) {
    stats_.evictions += static_cast<int64_t>(map_.size());
    Clear(lock);
  }
  if (map_.emplace(key, std::move(dfa)).second) stats_.bytes += static_cast<int64_t>(bytes);
  stats_.entries = static_cast<int64_t>(map_.size());
}

void SchemaAutomatonCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  Clear(lock);
}

void SchemaAutomatonCache::SetLimit(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.limit_bytes = std::max<int64_t>(bytes, 0);
  if (stats_.bytes > stats_.limit_bytes) Clear(lock);
}

CacheStats SchemaAutomatonCache::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void SchemaAutomatonCache::Clear(const std::lock_guard<std::mutex>&) {
  std::unordered_map<std::string, std::shared_ptr<const ByteDfaSpec>>().swap(map_);
  stats_.bytes = 0;
  stats_.entries = 0;
}

}  // namespace xg2::jsonschema
