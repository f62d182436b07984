#include "xg2/limits.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>

#include "xg2/errors.h"

namespace xg2 {
namespace {
std::atomic<int> g_max_nesting_depth{kMaxNestingDepthLimit};
constexpr int64_t kNoDeadline = std::numeric_limits<int64_t>::max();
// initial-exec: in the static TLS block, allocated with the thread (glibc would allocate a
// dlopen'ed module's dynamic TLS lazily, and abort the process if that failed).
__attribute__((tls_model("initial-exec"))) thread_local int64_t t_deadline_ns = kNoDeadline;  // steady_clock ns
__attribute__((tls_model("initial-exec"))) thread_local double t_limit_s = 0;
int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

ScopedTimeLimit::ScopedTimeLimit(double seconds) : prev_deadline_ns_(t_deadline_ns), prev_seconds_(t_limit_s) {
  if (!(seconds > 0)) return;
  const double ns = seconds * 1e9;
  const int64_t deadline = ns >= 9e18 ? kNoDeadline : NowNs() + static_cast<int64_t>(ns);
  if (deadline < t_deadline_ns) {
    t_deadline_ns = deadline;
    t_limit_s = seconds;
  }
}

ScopedTimeLimit::~ScopedTimeLimit() {
  t_deadline_ns = prev_deadline_ns_;
  t_limit_s = prev_seconds_;
}

void CheckThreadTimeLimit() {
  if (t_deadline_ns == kNoDeadline || NowNs() <= t_deadline_ns) return;
  throw BudgetExceeded("time_limit_s", "grammar construction exceeded its time limit of " + std::to_string(t_limit_s) +
                                           " s (limit time_limit_s, a GrammarCompiler option)");
}

int MaxNestingDepth() { return g_max_nesting_depth.load(std::memory_order_relaxed); }

int CappedNestingDepth(int cap) { return std::min(MaxNestingDepth(), cap); }

void SetMaxNestingDepth(int depth) {
  // The parsers recurse once per level: deeper limits would let an input overflow an 8 MiB
  // thread stack (the Lark and JSON Schema front ends cap it for their deeper frames).
  if (depth < 1 || depth > kMaxNestingDepthLimit) {
    throw Error(ErrorKind::kInvalidArgument, "max_nesting_depth must be between 1 and " +
                                                 std::to_string(kMaxNestingDepthLimit) + ", got " +
                                                 std::to_string(depth));
  }
  g_max_nesting_depth.store(depth, std::memory_order_relaxed);
}

std::string NestingLimitNote() {
  return " (limit max_nesting_depth=" + std::to_string(MaxNestingDepth()) + ", see xg2_jax.set_limits)";
}

}  // namespace xg2
