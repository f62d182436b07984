// Process-wide limits of the front ends (set from Python with xg2_jax.set_limits). Errors
// that hit one name it, so a caller can tell a hostile input from a limit set too low.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

namespace xg2 {

// Nesting depth of EBNF expressions, regex groups and JSON documents. The default is also the
// most (xgrammar's default recursion depth): every front end stays within an 8 MiB thread
// stack there.
constexpr int kMaxNestingDepthLimit = 10000;
// Lark groups and JSON Schema subschemas take more stack a level, so they nest to the limit
// but never beyond these caps (a tenth and a fortieth of the most).
constexpr int kMaxLarkGroupDepth = kMaxNestingDepthLimit / 10;
constexpr int kMaxSchemaNestingDepth = kMaxNestingDepthLimit / 40;
// Structural-tag formats likewise (each level is several frames of the lowering's passes; real
// tags nest a few levels).
constexpr int kMaxFormatNestingDepth = kMaxNestingDepthLimit / 40;
int MaxNestingDepth();
// MaxNestingDepth(), at most cap.
int CappedNestingDepth(int cap);
void SetMaxNestingDepth(int depth);  // Error(kInvalidArgument) unless 1 <= depth <= kMaxNestingDepthLimit

// One more level of a recursive walk while in scope (*depth counts them).
class ScopedDepth {
 public:
  explicit ScopedDepth(int* depth) : depth_(depth) { ++*depth_; }
  ~ScopedDepth() { --*depth_; }
  ScopedDepth(const ScopedDepth&) = delete;
  ScopedDepth& operator=(const ScopedDepth&) = delete;

 private:
  int* depth_;
};

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

// The front ends recurse once per nesting level, and the depth limits above are set for an
// 8 MiB stack. RunWithDeepStack(f) runs f on the calling thread when it has that much left
// (the main thread under the usual 8 MiB limit, glibc's threads), else on a helper thread
// with kDeepStackBytes of stack that the caller waits for: f's exception is rethrown to the
// caller and the time limit in scope carries over. A thread with a small stack (macOS gives
// secondary threads 512 KiB, musl 128 KiB, Python's threading.stack_size sets any) would
// otherwise overflow a few hundred levels down, which ends the process.
constexpr size_t kDeepStackBytes = size_t{64} << 20;
void RunWithDeepStack(const std::function<void()>& f);
template <class F>
auto WithDeepStack(F&& f) -> decltype(f()) {
  std::optional<decltype(f())> result;
  RunWithDeepStack([&] { result.emplace(f()); });
  return std::move(*result);
}
// Bytes of stack left below the caller's frame (SIZE_MAX where the platform does not say).
size_t StackBytesLeft();
// MaxNestingDepth(), at most what this thread's stack holds at 1 KiB a level: for a walk
// that must stay on the calling thread (reading Python objects under the GIL).
int StackBoundedNestingDepth();

}  // namespace xg2
