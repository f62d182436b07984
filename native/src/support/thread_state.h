// Per-thread runtime setup done ahead of need, while memory is plentiful.
#pragma once

#include <exception>

namespace xg2 {

// The C++ runtime keeps each thread's exception state in libstdc++'s thread-local storage.
// Loaded with the extension module (dlopen), libstdc++'s block is allocated by glibc on the
// thread's first use, and glibc ends the process when that allocation fails: a first use
// that is the std::bad_alloc of a compile under a memory limit aborts instead of throwing.
// Call this once on every thread that runs core code. The volatile store keeps the call:
// libstdc++ declares std::uncaught_exceptions pure, and a discarded pure call is removed.
inline void PrepareThreadForExceptions() {
  volatile int in_flight = std::uncaught_exceptions();
  (void)in_flight;
}

}  // namespace xg2
