#include "compiler/by_id_token_cache.h"

#include <algorithm>

namespace xg2 {

ByIdTokenCache::Words ByIdTokenCache::Find(const std::vector<int32_t>& states) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(states);
  if (it == entries_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  it->second.last_use = ++clock_;
  return it->second.words;
}

void ByIdTokenCache::Insert(const std::vector<int32_t>& states, Words words) {
  const size_t bytes = words->size() * sizeof(uint32_t) + states.size() * sizeof(int32_t);
  if (bytes > kMaxBytes) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.count(states) != 0) return;  // another matcher got there first
  while (!entries_.empty() && (entries_.size() >= kMaxEntries || bytes_ + bytes > kMaxBytes)) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](const auto& a, const auto& b) { return a.second.last_use < b.second.last_use; });
    bytes_ -= oldest->second.bytes;
    entries_.erase(oldest);
    ++stats_.evictions;
  }
  entries_.emplace(states, Entry{std::move(words), bytes, ++clock_});
  bytes_ += bytes;
}

CacheStats ByIdTokenCache::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  CacheStats s = stats_;
  s.entries = static_cast<int64_t>(entries_.size());
  s.bytes = static_cast<int64_t>(bytes_);
  s.limit_bytes = static_cast<int64_t>(kMaxBytes);
  return s;
}

size_t ByIdTokenCache::MemoryBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sizeof(*this) + bytes_;
}

}  // namespace xg2
