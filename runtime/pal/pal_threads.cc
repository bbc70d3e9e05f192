// The PAL's threads and monitors (pal.h) on POSIX threads, for Linux,
// Android and iOS, linked with either PAL (like pal_libm.cc). Memory comes
// from pare_pal_malloc, so the recording PAL counts it. Only the build
// feature threads references these functions; without it the linker drops
// them and the library imports no pthread symbol.

#include "runtime/pal/libc.h"
#include "runtime/pal/pal.h"

struct pare_pal_thread {
  uint64_t id;
  void (*entry)(void*);
  void* arg;
};

struct pare_pal_monitor {
  alignas(16) unsigned char mutex[64];
  alignas(16) unsigned char cond[64];
};

namespace {

void* thread_main(void* raw) {
  pare_pal_thread* thread = static_cast<pare_pal_thread*>(raw);
  thread->entry(thread->arg);
  return nullptr;
}

}  // namespace

extern "C" {

pare_pal_thread* pare_pal_thread_start(void (*entry)(void*), void* arg) {
  pare_pal_thread* thread = static_cast<pare_pal_thread*>(pare_pal_malloc(sizeof(pare_pal_thread), 16));
  if (thread == nullptr) return nullptr;
  thread->entry = entry;
  thread->arg = arg;
  if (pthread_create(&thread->id, nullptr, thread_main, thread) != 0) {
    pare_pal_free(thread);
    return nullptr;
  }
  return thread;
}

void pare_pal_thread_join(pare_pal_thread* thread) {
  if (thread == nullptr) return;
  pthread_join(thread->id, nullptr);
  pare_pal_free(thread);
}

pare_pal_monitor* pare_pal_monitor_create(void) {
  pare_pal_monitor* m = static_cast<pare_pal_monitor*>(pare_pal_malloc(sizeof(pare_pal_monitor), 16));
  if (m == nullptr) return nullptr;
  if (pthread_mutex_init(m->mutex, nullptr) != 0) {
    pare_pal_free(m);
    return nullptr;
  }
  if (pthread_cond_init(m->cond, nullptr) != 0) {
    pthread_mutex_destroy(m->mutex);
    pare_pal_free(m);
    return nullptr;
  }
  return m;
}

void pare_pal_monitor_destroy(pare_pal_monitor* m) {
  if (m == nullptr) return;
  pthread_cond_destroy(m->cond);
  pthread_mutex_destroy(m->mutex);
  pare_pal_free(m);
}

// The word is changed without the mutex, then wake takes the mutex: a
// waiter that saw the old value holds the mutex until pthread_cond_wait
// releases it atomically, so the broadcast cannot fall between its check
// and its sleep.
void pare_pal_monitor_wait(pare_pal_monitor* m, const uint32_t* word, uint32_t expected) {
  pthread_mutex_lock(m->mutex);
  while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == expected) pthread_cond_wait(m->cond, m->mutex);
  pthread_mutex_unlock(m->mutex);
}

void pare_pal_monitor_wake(pare_pal_monitor* m) {
  pthread_mutex_lock(m->mutex);
  pthread_mutex_unlock(m->mutex);
  pthread_cond_broadcast(m->cond);
}

}  // extern "C"
