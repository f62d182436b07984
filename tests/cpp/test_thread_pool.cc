// Tests of the persistent thread pool: every index runs exactly once, exceptions reach the
// caller, concurrent and nested callers make progress, parallelism limits hold, shutdown joins.
// A standalone executable: prints each failure and exits non-zero if any check failed.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "support/thread_pool.h"

using xg2::ThreadPool;

namespace {

void TestEveryIndexOnce(ThreadPool& pool) {
  for (int64_t n : {0, 1, 2, 7, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    for (auto& h : hits) h = 0;
    pool.ParallelFor(n, [&](int64_t i) { hits[i].fetch_add(1); });
    for (auto& h : hits) CHECK(h.load() == 1);
  }
}

void TestException(ThreadPool& pool) {
  std::atomic<int> ran{0};
  bool caught = false;
  try {
    pool.ParallelFor(200, [&](int64_t i) {
      ran.fetch_add(1);
      if (i == 17) throw std::runtime_error("index 17");
    });
  } catch (const std::runtime_error& e) {
    caught = std::string(e.what()) == "index 17";
  }
  CHECK(caught);
  CHECK(ran.load() >= 1 && ran.load() <= 200);
  // The pool stays usable.
  std::atomic<int> sum{0};
  pool.ParallelFor(10, [&](int64_t i) { sum.fetch_add(static_cast<int>(i)); });
  CHECK(sum.load() == 45);
}

void TestMaxParallelism(ThreadPool& pool) {
  std::atomic<int> active{0}, peak{0};
  pool.ParallelFor(
      64,
      [&](int64_t) {
        int now = active.fetch_add(1) + 1;
        int p = peak.load();
        while (now > p && !peak.compare_exchange_weak(p, now)) {
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        active.fetch_sub(1);
      },
      2);
  CHECK(peak.load() <= 2);
}

void TestConcurrentAndNestedCallers(ThreadPool& pool) {
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 8; ++t) {
    callers.emplace_back([&] {
      for (int rep = 0; rep < 20; ++rep) {
        pool.ParallelFor(16, [&](int64_t) { pool.ParallelFor(4, [&](int64_t) { total.fetch_add(1); }); });
      }
    });
  }
  for (auto& c : callers) c.join();
  CHECK(total.load() == 8 * 20 * 16 * 4);
}

// Posted jobs run once each, on a worker, alongside ParallelFor callers; one that throws
// leaves the pool usable. A pool without workers refuses them (nothing would run them).
void TestPost(ThreadPool& pool) {
  std::atomic<int> ran{0};
  std::mutex mu;
  std::condition_variable cv;
  const int jobs = 50;
  for (int k = 0; k < jobs; ++k) {
    CHECK(pool.Post([&, k] {
      if (k == 7) throw std::runtime_error("posted job 7");
      pool.ParallelFor(3, [](int64_t) {});
      std::lock_guard<std::mutex> lock(mu);
      ran.fetch_add(1);
      cv.notify_all();
    }));
  }
  std::unique_lock<std::mutex> lock(mu);
  CHECK(cv.wait_for(lock, std::chrono::seconds(30), [&] { return ran.load() == jobs - 1; }));
  lock.unlock();
  TestEveryIndexOnce(pool);
  ThreadPool none(0);
  CHECK(!none.Post([] {}));
}

}  // namespace

int main() {
  {
    ThreadPool pool(4);
    CHECK(pool.num_threads() == 4);
    TestEveryIndexOnce(pool);
    TestException(pool);
    TestMaxParallelism(pool);
    TestConcurrentAndNestedCallers(pool);
    TestPost(pool);
  }  // joins its workers
  {
    ThreadPool batch_pool(2, /*batch=*/true);  // the background pool's kind of workers
    TestEveryIndexOnce(batch_pool);
    TestPost(batch_pool);
  }
  {
    ThreadPool inline_pool(0);  // everything on the caller
    TestEveryIndexOnce(inline_pool);
    TestException(inline_pool);
  }
  TestEveryIndexOnce(ThreadPool::Default());
  TestConcurrentAndNestedCallers(ThreadPool::Default());
  TestPost(ThreadPool::Background());
  if (g_failures) {
    std::printf("%d failure(s)\n", g_failures);
    return 1;
  }
  std::printf("thread pool: all checks passed\n");
  return 0;
}
