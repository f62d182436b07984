// Process-wide limits of the front ends (set from Python with xg2_jax.set_limits). Errors
// that hit one name it, so a caller can tell a hostile input from a limit set too low.
#pragma once

#include <cstdint>
#include <string>

namespace xg2 {

// Nesting depth of EBNF expressions, regex groups and JSON documents; a tenth of it bounds
// Lark groups and a fortieth (at least 16) JSON Schema subschemas, whose levels take more
// stack. The default
// is also the most (xgrammar's default recursion depth): every front end stays within an
// 8 MiB thread stack there.
constexpr int kMaxNestingDepthLimit = 10000;
int MaxNestingDepth();
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
