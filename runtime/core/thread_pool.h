#pragma once
// ThreadPool: a method instance's worker threads (build feature threads).
//
// run(count, fn, context) calls fn(context, i, count) once for every chunk
// i in [0, count) and returns when all have returned. The calling thread
// and the workers claim chunks in order from one atomic word until none is
// left, so when a worker is late (descheduled on a machine shared with
// other processes) the caller runs its chunk instead of waiting for it to
// wake, and a worker that wakes after the run finds nothing to claim: the
// caller never waits for a worker that has not started a chunk. Which
// thread runs a chunk does not change what it computes, so a kernel that
// splits its output into chunks by a rule depending only on the shape and
// the thread count computes every element the same way whatever the thread
// count: results are bitwise identical (kernels partition outputs, never a
// reduction).
//
// Workers spin briefly after a run (the next op usually follows within
// microseconds), then sleep on a PAL monitor (pal.h); the caller does the
// same while waiting for the last chunk. Starting a run and finishing its
// last chunk always go through the monitor (wake takes its mutex), so a
// thread between its last poll and its sleep cannot miss either. Threads, monitors and memory all
// come from the PAL, so the runtime stays freestanding.
//
// Only the method that owns a pool runs it (a method instance is used by
// one thread at a time), so run() is never re-entered. fn must not call
// back into the KernelContext (errors, allocation): kernels validate and
// allocate before they split.

#include "runtime/core/error.h"
#include "runtime/pal/pal.h"

namespace pare {

using ChunkFn = void (*)(void* context, uint32_t chunk, uint32_t count);

class ThreadPool {
 public:
  static constexpr uint32_t kMaxThreads = 64;

  ThreadPool() = default;
  ~ThreadPool() { stop(); }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Starts threads - 1 workers (1 <= threads <= kMaxThreads). OutOfMemory
  // when the PAL cannot create a thread or a monitor; the pool then has
  // none.
  Error start(uint32_t threads);
  // Joins every worker.
  void stop();
  uint32_t threads() const { return num_workers_ + 1; }

  // count <= threads().
  void run(uint32_t count, ChunkFn fn, void* context);

 private:
  struct Worker {
    ThreadPool* pool;
    pare_pal_thread* thread;
  };
  static void worker_main(void* arg);
  void work();
  // Claims and runs chunks of run `epoch` until none is left.
  void run_chunks(uint32_t epoch);

  Worker* workers_ = nullptr;
  uint32_t num_workers_ = 0;
  pare_pal_monitor* monitor_ = nullptr;
  // Bumped (release) to start a run: what workers wait on.
  uint32_t epoch_ = 0;
  // The current run's epoch (bits 32-63), chunk count (16-31) and next
  // unclaimed chunk (0-15), published with release after fn_ and
  // context_; a claim is a compare-and-swap that checks the epoch, so a
  // worker waking late cannot claim a chunk of a later run it has not
  // read the fields of.
  uint64_t claim_ = 0;
  uint32_t done_ = 0;  // chunks of the current run that have returned
  ChunkFn fn_ = nullptr;
  void* context_ = nullptr;
  bool stopping_ = false;
};

}  // namespace pare
