#include "runtime/core/thread_pool.h"

namespace pare {

namespace {

// About 100 µs of polling before sleeping: long enough to bridge the gap
// between two ops, short enough not to burn a core while idle.
constexpr uint32_t kSpins = 4000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

inline uint32_t load_acquire(const uint32_t* word) { return __atomic_load_n(word, __ATOMIC_ACQUIRE); }

}  // namespace

Error ThreadPool::start(uint32_t threads) {
  stop();
  if (threads < 1 || threads > kMaxThreads) return Error::InvalidArgument;
  if (threads == 1) return Error::Ok;
  monitor_ = pare_pal_monitor_create();
  workers_ = static_cast<Worker*>(pare_pal_malloc(sizeof(Worker) * (threads - 1), alignof(Worker)));
  if (monitor_ == nullptr || workers_ == nullptr) {
    stop();
    return Error::OutOfMemory;
  }
  stopping_ = false;
  for (uint32_t i = 0; i + 1 < threads; ++i) {
    workers_[i] = Worker{this, i, nullptr};
    workers_[i].thread = pare_pal_thread_start(&ThreadPool::worker_main, &workers_[i]);
    if (workers_[i].thread == nullptr) {
      stop();
      return Error::OutOfMemory;
    }
    num_workers_ = i + 1;
  }
  return Error::Ok;
}

void ThreadPool::stop() {
  if (num_workers_ > 0) {
    stopping_ = true;
    __atomic_fetch_add(&epoch_, 1, __ATOMIC_RELEASE);
    pare_pal_monitor_wake(monitor_);
    for (uint32_t i = 0; i < num_workers_; ++i) pare_pal_thread_join(workers_[i].thread);
    num_workers_ = 0;
  }
  pare_pal_free(workers_);
  workers_ = nullptr;
  pare_pal_monitor_destroy(monitor_);
  monitor_ = nullptr;
}

void ThreadPool::worker_main(void* arg) {
  Worker* w = static_cast<Worker*>(arg);
  w->pool->work(w->index);
}

void ThreadPool::work(uint32_t index) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t epoch = load_acquire(&epoch_);
    for (uint32_t spin = 0; epoch == seen && spin < kSpins; ++spin) {
      cpu_relax();
      epoch = load_acquire(&epoch_);
    }
    while (epoch == seen) {
      pare_pal_monitor_wait(monitor_, &epoch_, seen);
      epoch = load_acquire(&epoch_);
    }
    seen = epoch;
    if (stopping_) return;
    if (index + 1 < count_) fn_(context_, index + 1, count_);
    if (__atomic_fetch_sub(&pending_, 1, __ATOMIC_ACQ_REL) == 1) pare_pal_monitor_wake(monitor_);
  }
}

void ThreadPool::run(uint32_t count, ChunkFn fn, void* context) {
  if (count <= 1 || num_workers_ == 0) {
    for (uint32_t i = 0; i < count; ++i) fn(context, i, count);
    return;
  }
  fn_ = fn;
  context_ = context;
  count_ = count;
  __atomic_store_n(&pending_, num_workers_, __ATOMIC_RELAXED);
  __atomic_fetch_add(&epoch_, 1, __ATOMIC_RELEASE);  // publishes the fields above
  // Always through the monitor (one uncontended lock, ~100 ns): a worker
  // between its last poll and its sleep must not miss the run.
  pare_pal_monitor_wake(monitor_);
  fn(context, 0, count);
  uint32_t pending = load_acquire(&pending_);
  for (uint32_t spin = 0; pending != 0 && spin < kSpins; ++spin) {
    cpu_relax();
    pending = load_acquire(&pending_);
  }
  while (pending != 0) {
    pare_pal_monitor_wait(monitor_, &pending_, pending);
    pending = load_acquire(&pending_);
  }
}

}  // namespace pare
