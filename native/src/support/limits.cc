#include "xg2/limits.h"

#include <atomic>

#include "xg2/errors.h"

namespace xg2 {
namespace {
std::atomic<int> g_max_nesting_depth{1000};
}  // namespace

int MaxNestingDepth() { return g_max_nesting_depth.load(std::memory_order_relaxed); }

void SetMaxNestingDepth(int depth) {
  // The parsers recurse once per level; far deeper than this would overflow a thread stack.
  if (depth < 1 || depth > 100000) {
    throw Error(ErrorKind::kInvalidArgument, "max_nesting_depth must be between 1 and 100000");
  }
  g_max_nesting_depth.store(depth, std::memory_order_relaxed);
}

std::string NestingLimitNote() {
  return " (limit max_nesting_depth=" + std::to_string(MaxNestingDepth()) + ", see xg2_jax.set_limits)";
}

}  // namespace xg2
