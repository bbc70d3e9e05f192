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
  __atomic_store_n(&stopping_, false, __ATOMIC_RELAXED);
  for (uint32_t i = 0; i + 1 < threads; ++i) {
    workers_[i] = Worker{this, nullptr};
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
    __atomic_store_n(&stopping_, true, __ATOMIC_RELEASE);
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

void ThreadPool::worker_main(void* arg) { static_cast<Worker*>(arg)->pool->work(); }

void ThreadPool::work() {
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
    if (__atomic_load_n(&stopping_, __ATOMIC_ACQUIRE)) return;
    run_chunks(epoch);
  }
}

void ThreadPool::run_chunks(uint32_t epoch) {
  for (;;) {
    uint64_t word = __atomic_load_n(&claim_, __ATOMIC_ACQUIRE);
    uint32_t chunk = 0;
    uint32_t count = 0;
    do {
      chunk = static_cast<uint32_t>(word & 0xFFFF);
      count = static_cast<uint32_t>((word >> 16) & 0xFFFF);
      if (static_cast<uint32_t>(word >> 32) != epoch || chunk >= count) return;
    } while (!__atomic_compare_exchange_n(&claim_, &word, word + 1, /*weak=*/true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    // The run cannot end before this chunk returns, so its fields stay.
    fn_(context_, chunk, count);
    if (__atomic_add_fetch(&done_, 1, __ATOMIC_ACQ_REL) == count) pare_pal_monitor_wake(monitor_);
  }
}

void ThreadPool::run(uint32_t count, ChunkFn fn, void* context) {
  if (count <= 1 || num_workers_ == 0) {
    for (uint32_t i = 0; i < count; ++i) fn(context, i, count);
    return;
  }
  fn_ = fn;
  context_ = context;
  __atomic_store_n(&done_, 0, __ATOMIC_RELAXED);
  const uint32_t epoch = epoch_ + 1;  // only this thread writes epoch_
  __atomic_store_n(&claim_, (static_cast<uint64_t>(epoch) << 32) | (static_cast<uint64_t>(count) << 16),
                   __ATOMIC_RELEASE);
  __atomic_store_n(&epoch_, epoch, __ATOMIC_RELEASE);
  // Always through the monitor (one uncontended lock, ~100 ns): a worker
  // between its last poll and its sleep must not miss the run.
  pare_pal_monitor_wake(monitor_);
  run_chunks(epoch);
  // Only chunks a worker claimed can be left, each already running.
  uint32_t done = load_acquire(&done_);
  for (uint32_t spin = 0; done != count && spin < kSpins; ++spin) {
    cpu_relax();
    done = load_acquire(&done_);
  }
  while (done != count) {
    pare_pal_monitor_wait(monitor_, &done_, done);
    done = load_acquire(&done_);
  }
}

}  // namespace pare
