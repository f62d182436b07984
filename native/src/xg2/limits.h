// Process-wide limits of the front ends (set from Python with xg2_jax.set_limits). Errors
// that hit one name it, so a caller can tell a hostile input from a limit set too low.
#pragma once

#include <cstdint>
#include <string>

namespace xg2 {

// Nesting depth of EBNF expressions, regex groups and JSON documents. The default is also the
// most (xgrammar's default recursion depth): every front end stays within an 8 MiB thread
// stack there.
constexpr int kMaxNestingDepthLimit = 10000;
// Lark groups and JSON Schema subschemas take more stack a level, so they nest to the limit
// but never beyond these caps (a tenth and a fortieth of the most).
constexpr int kMaxLarkGroupDepth = kMaxNestingDepthLimit / 10;
constexpr int kMaxSchemaNestingDepth = kMaxNestingDepthLimit / 40;
int MaxNestingDepth();
// MaxNestingDepth(), at most cap.
int CappedNestingDepth(int cap);
void SetMaxNestingDepth(int depth);  // Error(kInvalidArgument) unless 1 <= depth <= kMaxNestingDepthLimit

// " (limit max_nesting_depth=N, see xg2_jax.set_limits)": the tail of a depth error.
std::string NestingLimitNote();

// A time limit for the work of the current thread (the JSON Schema and structural-tag front
// ends' automaton products, a compile's automaton build): while one is in scope,
// CheckThreadTimeLimit() throws Error(kLimitExceeded) naming time_limit_s once it has passed.
// Scopes nest; the inner one may only shorten the outer one's deadline.
class ScopedTimeLimit {
 public:
  explicit ScopedTimeLimit(double seconds);  // <= 0: no limit (keeps an outer one)
  ~ScopedTimeLimit();
  ScopedTimeLimit(const ScopedTimeLimit&) = delete;
  ScopedTimeLimit& operator=(const ScopedTimeLimit&) = delete;

 private:
  int64_t prev_deadline_ns_;
  double prev_seconds_;
};
// Cheap when no limit is in scope (one thread-local load).
void CheckThreadTimeLimit();

}  // namespace xg2
