#include "support/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <new>

#include "support/thread_state.h"

namespace xg2 {

// One ParallelFor call. Shared by the caller and the tickets in the queue, so a worker that
// picks up a ticket after the job finished only finds no index left to claim.
struct ThreadPool::Job {
  int64_t n = 0;
  const std::function<void(int64_t)>* fn = nullptr;  // valid while done < n
  std::function<void(int64_t)> owned;                // fn's target for a posted job
  std::atomic<int64_t> next{0};                      // next index to claim
  std::atomic<bool> failed{false};                   // skip the remaining calls
  std::mutex mu;
  std::condition_variable cv;
  int64_t done = 0;  // finished (or skipped) indices, under mu
  std::exception_ptr error;
};

void ThreadPool::RunIndices(Job& job) {
  int64_t finished = 0;
  std::exception_ptr error;
  for (;;) {
    int64_t i = job.next.fetch_add(1, std::memory_order_relaxed);
    if (i >= job.n) break;
    if (!job.failed.load(std::memory_order_relaxed)) {
      try {
        (*job.fn)(i);
      } catch (...) {
        if (!error) error = std::current_exception();
        job.failed.store(true, std::memory_order_relaxed);
      }
    }
    ++finished;
  }
  if (finished == 0 && !error) return;
  std::lock_guard<std::mutex> lock(job.mu);
  if (error && !job.error) job.error = error;
  job.done += finished;
  if (job.done == job.n) job.cv.notify_all();
}

ThreadPool::ThreadPool(int num_threads, bool batch) : batch_(batch) {
  num_threads = std::max(0, num_threads);
  try {
    workers_.reserve(static_cast<size_t>(num_threads));
    for (int i = 0; i < num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  } catch (const std::exception&) {
    // std::system_error (no thread could start) or std::bad_alloc: keep the workers that
    // started; unwinding would destroy joinable threads, which ends the process.
  }
  // Each worker's thread-local setup happens now, while memory is plentiful, not on its first
  // job (see WorkerLoop): a caller may lower the memory limit right after this returns.
  std::unique_lock<std::mutex> lock(mu_);
  started_cv_.wait(lock, [this] { return started_ == workers_.size(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::WorkerLoop() {
  PrepareThreadForExceptions();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++started_;
  }
  started_cv_.notify_all();
#ifdef __linux__
  if (batch_) {
    // Best effort. Not a lower nice value: a background build takes the shared caches'
    // locks, and a starved holder would stall the caller's fills (priority inversion).
    sched_param param{};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
  }
#endif
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !tickets_.empty(); });
      if (stop_) return;
      job = std::move(tickets_.front());
      tickets_.pop_front();
    }
    RunIndices(*job);
  }
}

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t)>& fn, int max_parallelism) {
  if (n <= 0) return;
  int64_t threads = static_cast<int64_t>(workers_.size()) + 1;
  if (max_parallelism > 0) threads = std::min<int64_t>(threads, max_parallelism);
  threads = std::min(threads, n);
  if (threads <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  auto job = std::make_shared<Job>();
  job->n = n;
  job->fn = &fn;
  {
    std::lock_guard<std::mutex> lock(mu_);
    try {
      for (int64_t k = 1; k < threads; ++k) tickets_.push_back(job);
    } catch (const std::bad_alloc&) {
      // Out of memory for the queue: fewer helpers (the tickets queued may already run, so
      // this call must still wait for every index below rather than unwind past fn).
    }
  }
  if (threads == 2) {
    cv_.notify_one();
  } else {
    cv_.notify_all();
  }
  RunIndices(*job);
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(job->mu);
    job->cv.wait(lock, [&] { return job->done == job->n; });
    error = job->error;
  }
  // Tickets of this job still queued would find nothing to do; drop them now so they do not
  // wake workers for nothing.
  {
    std::lock_guard<std::mutex> lock(mu_);
    tickets_.erase(std::remove(tickets_.begin(), tickets_.end(), job), tickets_.end());
  }
  if (error) std::rethrow_exception(error);
}

bool ThreadPool::Post(std::function<void()> fn) {
  if (workers_.empty()) return false;
  try {
    auto job = std::make_shared<Job>();
    job->n = 1;
    job->owned = [f = std::move(fn)](int64_t) { f(); };
    job->fn = &job->owned;
    {
      std::lock_guard<std::mutex> lock(mu_);
      tickets_.push_back(std::move(job));
    }
  } catch (const std::bad_alloc&) {
    return false;
  }
  cv_.notify_one();
  return true;
}

ThreadPool& ThreadPool::Default() {
  // Intentionally leaked: see the header.
  static ThreadPool* pool = new ThreadPool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return *pool;
}

ThreadPool& ThreadPool::Background() {
  static ThreadPool* pool =
      new ThreadPool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())), /*batch=*/true);
  return *pool;
}

}  // namespace xg2
