#include "xg2/limits.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <limits>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "support/thread_state.h"
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

namespace {

// What an 8 MiB thread has left once its caller's frames are in (the deepest input a front end
// takes, 10,000 EBNF groups, needs under 6 MiB).
constexpr size_t kInlineStackBytes = size_t{7} << 20;

struct DeepStackCall {
  const std::function<void()>* f;
  int64_t deadline_ns;
  double limit_s;
  std::exception_ptr error;
};

void* RunDeepStackCall(void* arg) {
  PrepareThreadForExceptions();
  auto* call = static_cast<DeepStackCall*>(arg);
  t_deadline_ns = call->deadline_ns;
  t_limit_s = call->limit_s;
  try {
    (*call->f)();
  } catch (...) {
    call->error = std::current_exception();
  }
  return nullptr;
}

}  // namespace

size_t StackBytesLeft() {
  const auto sp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
#if defined(__linux__)
  if (getpid() == static_cast<pid_t>(syscall(SYS_gettid))) {
    // The main thread's stack grows on demand up to RLIMIT_STACK. Its top is known only from
    // /proc/self/maps (what pthread_getattr_np reads for it), so the limit less 1 MiB in use
    // is taken.
    rlimit rl{};
    if (getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
    const size_t limit = static_cast<size_t>(rl.rlim_cur);
    return limit > (size_t{1} << 20) ? limit - (size_t{1} << 20) : 0;
  }
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return SIZE_MAX;
  void* low = nullptr;
  size_t size = 0;
  const int got = pthread_attr_getstack(&attr, &low, &size);
  pthread_attr_destroy(&attr);
  if (got != 0) return SIZE_MAX;
  const auto bottom = reinterpret_cast<uintptr_t>(low);
  return sp > bottom ? sp - bottom : 0;
#elif defined(__APPLE__)
  const auto top = reinterpret_cast<uintptr_t>(pthread_get_stackaddr_np(pthread_self()));
  const size_t size = pthread_get_stacksize_np(pthread_self());
  const uintptr_t bottom = top - size;
  return sp > bottom ? sp - bottom : 0;
#else
  (void)sp;
  return SIZE_MAX;
#endif
}

int StackBoundedNestingDepth() {
  constexpr size_t kReserve = size_t{128} << 10, kPerLevel = size_t{1} << 10;
  const size_t left = StackBytesLeft();
  if (left == SIZE_MAX) return MaxNestingDepth();
  const size_t levels = left > kReserve ? (left - kReserve) / kPerLevel : 0;
  return static_cast<int>(std::min<size_t>(levels, static_cast<size_t>(MaxNestingDepth())));
}

void RunWithDeepStack(const std::function<void()>& f) {
  const size_t left = StackBytesLeft();
  if (left >= kInlineStackBytes) {
    f();
    return;
  }
  DeepStackCall call{&f, t_deadline_ns, t_limit_s, nullptr};
  pthread_attr_t attr;
  int rc = pthread_attr_init(&attr);
  if (rc == 0) {
    rc = pthread_attr_setstacksize(&attr, kDeepStackBytes);
    pthread_t helper;
    if (rc == 0) rc = pthread_create(&helper, &attr, RunDeepStackCall, &call);
    pthread_attr_destroy(&attr);
    if (rc == 0) rc = pthread_join(helper, nullptr);
  }
  if (rc != 0) {
    throw Error(ErrorKind::kLimitExceeded, "this thread has " + std::to_string(left >> 10) +
                                               " KiB of stack left, too little for the grammar front ends, and a "
                                               "helper thread with a deeper stack could not start: " +
                                               std::strerror(rc));
  }
  if (call.error) std::rethrow_exception(call.error);
}

}  // namespace xg2
