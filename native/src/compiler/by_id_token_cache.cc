#include "compiler/by_id_token_cache.h"

namespace xg2 {

ByIdTokenCache::Words ByIdTokenCache::Find(const std::vector<int32_t>& states) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(states);
  return it == entries_.end() ? nullptr : it->second;
}

void ByIdTokenCache::Insert(const std::vector<int32_t>& states, Words words) {
  const size_t bytes = words->size() * sizeof(uint32_t) + states.size() * sizeof(int32_t);
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.size() >= kMaxEntries || bytes_ + bytes > kMaxBytes) return;
  if (entries_.emplace(states, std::move(words)).second) bytes_ += bytes;
}

size_t ByIdTokenCache::MemoryBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sizeof(*this) + bytes_;
}

}  // namespace xg2
