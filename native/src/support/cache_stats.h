// The counters every bounded process-wide cache reports (see compiler/cache_registry.h).
#pragma once

#include <cstdint>

namespace xg2 {

struct CacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t entries = 0;
  int64_t bytes = 0;        // what the cache holds: entries plus its own tables
  int64_t limit_bytes = 0;  // 0: disabled
  int64_t evictions = 0;    // entries dropped to stay under the limit
};

}  // namespace xg2
