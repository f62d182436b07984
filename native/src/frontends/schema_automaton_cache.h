// Process-wide caches of automata the JSON Schema front end builds from a schema's words alone
// (a set of property names, a pattern's text), not from its place or the converter's options:
// requests that repeat an object shape or a pattern (the same tool wrapper, a family of schemas
// sharing definitions) would otherwise rebuild the same automaton. Each is bounded by entries
// and bytes, and is emptied with the other process-wide caches (compiler/cache_registry.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "support/cache_stats.h"
#include "xg2/grammar.h"

namespace xg2::jsonschema {

class SchemaAutomatonCache {
 public:
  // The automata that keep undeclared keys off the declared names, by excluded-name set.
  static SchemaAutomatonCache& KeyExclusions();
  // The automata of patterns and formats with minLength / maxLength, by their words.
  static SchemaAutomatonCache& Patterns();

  std::shared_ptr<const ByteDfaSpec> Find(const std::string& key);
  // Drops everything first when the entry would pass the entry or byte limit; an entry larger
  // than the whole limit is not kept.
  void Insert(const std::string& key, std::shared_ptr<const ByteDfaSpec> dfa);
  void Clear();
  void SetLimit(int64_t bytes);  // 0 disables the cache
  CacheStats Stats();

 private:
  explicit SchemaAutomatonCache(int64_t limit_bytes) { stats_.limit_bytes = limit_bytes; }
  void Clear(const std::lock_guard<std::mutex>&);

  static constexpr size_t kMaxEntries = 1024;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const ByteDfaSpec>> map_;
  CacheStats stats_;  // objects with thousands of names make large automata: bounded in bytes
};

}  // namespace xg2::jsonschema
