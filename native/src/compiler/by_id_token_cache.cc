#include "compiler/by_id_token_cache.h"

#include <algorithm>
#include <utility>

namespace xg2 {

ByIdTokens::ByIdTokens(std::vector<uint32_t> bits_in, int32_t num_tokens) : bits(std::move(bits_in)) {
  const int32_t num_words = static_cast<int32_t>(bits.size());
  for (int32_t w = 0; w < num_words; ++w) {
    // Bits past the last token are no ids: they count as set.
    const int32_t ids_here = num_tokens - (w << 5);
    const uint32_t past = ids_here >= 32 ? 0u : ~((1u << ids_here) - 1);
    if ((bits[w] | past) == 0xFFFFFFFFu) continue;
    if (open_words.size() == kMaxOpenWords) {
      open_words.clear();
      many_open = true;
      return;
    }
    open_words.push_back(w);
  }
}

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
  const size_t bytes = words->MemoryBytes() + states.size() * sizeof(int32_t);
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
