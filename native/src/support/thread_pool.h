// A persistent pool of worker threads for data-parallel loops (batched mask filling, mask-cache
// building). Workers are created once and sleep on a condition variable between jobs.
//
// ParallelFor(n, fn) runs fn(0) .. fn(n - 1) and blocks until every call returned. The calling
// thread works on its own job too, so a call always makes progress even when every worker is
// busy with other callers' jobs (several threads may call ParallelFor on one pool at the same
// time, and fn may itself call ParallelFor). The first exception thrown by fn is rethrown in the
// caller after the loop finished; indices not yet started when it was thrown are skipped.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace xg2 {

class ThreadPool {
 public:
  // num_threads worker threads (0 is allowed: every loop then runs on the caller). Fewer if
  // the system cannot start them all (out of memory or threads): the loops still run.
  // batch: the workers run as batch threads (Linux SCHED_BATCH), which take their share of
  // the CPU but do not preempt the thread that wakes them.
  explicit ThreadPool(int num_threads, bool batch = false);
  // Stops and joins the workers. No ParallelFor may be running on this pool.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()); }

  // Runs fn(i) for every i in [0, n) on at most max_parallelism threads (the caller included;
  // <= 0: the caller and every worker) and returns when all calls finished. Rethrows the first
  // exception thrown by fn.
  void ParallelFor(int64_t n, const std::function<void(int64_t)>& fn, int max_parallelism = 0);

  // Queues fn to run once on a worker and returns at once. False if it cannot run (no
  // workers, or no memory for the queue); nothing then calls fn. An exception from fn is
  // dropped: fn reports its own errors. Background work belongs here rather than on a thread
  // started for it: a thread started when memory has run out aborts the process (glibc
  // cannot allocate its thread-local storage) instead of failing.
  bool Post(std::function<void()> fn);

  // The process-wide pool with std::thread::hardware_concurrency() workers, created on first
  // use. It is never destroyed (its threads sleep until the process exits), so it stays usable
  // from static destructors and at interpreter shutdown.
  static ThreadPool& Default();
  // The process-wide pool for background jobs (Post), as many batch workers as Default has
  // workers, also never destroyed. A compile posts its mask build here: woken on the
  // caller's core, a normal worker would preempt the caller (the sleeper's bonus) and the
  // build, meant to overlap the prefill, would land in the caller's time on a loaded machine.
  static ThreadPool& Background();

 private:
  struct Job;
  void WorkerLoop();
  static void RunIndices(Job& job);

  std::mutex mu_;
  std::condition_variable cv_;
  // One entry per helper a job asked for; a worker takes one and helps with that job.
  std::deque<std::shared_ptr<Job>> tickets_;
  bool stop_ = false;
  bool batch_ = false;
  // Workers that have set up their thread-local state; the constructor waits for all of them.
  size_t started_ = 0;
  std::condition_variable started_cv_;
  std::vector<std::thread> workers_;
};

}  // namespace xg2
