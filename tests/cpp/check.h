// Minimal assertions for the standalone C++ tests: failures are counted, not fatal, so one run
// reports them all; main() returns non-zero when g_failures > 0.
#pragma once

#include <cstdio>

inline int g_failures = 0;

#define CHECK(cond)                                               \
  do {                                                            \
    if (!(cond)) {                                                \
      std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                               \
    }                                                             \
  } while (0)

#define CHECK_EQ(a, b)                                                   \
  do {                                                                   \
    if (!((a) == (b))) {                                                 \
      std::printf("FAIL %s:%d: %s == %s\n", __FILE__, __LINE__, #a, #b); \
      ++g_failures;                                                      \
    }                                                                    \
  } while (0)
