#pragma once
// Explicit memory: the only ways the runtime obtains memory.
//
//  * BumpArena: a bump allocator over one caller-provided block, with
//    alignment checks and clean failure. Method activations are placed in
//    one by the memory planner.
//  * LoadAllocator: a chunked bump allocator over PAL memory for load-time
//    structures (decoded program tables, value slots, packed weights). It
//    frees everything at once when its owner is destroyed.
//  * DynArray<T>: a growable array of trivially copyable T over PAL memory,
//    used only while planning, never on the steady-state execute path.
//
// There is no operator new/delete and no malloc outside the PAL.

#include "runtime/core/error.h"
#include "runtime/pal/pal.h"

namespace pare {

constexpr size_t kTensorAlignment = 64;  // cache line; enough for any SIMD load

class BumpArena {
 public:
  BumpArena() = default;
  BumpArena(void* base, size_t capacity) { reset(base, capacity); }

  void reset(void* base, size_t capacity) {
    base_ = static_cast<uint8_t*>(base);
    capacity_ = base == nullptr ? 0 : capacity;
    used_ = 0;
  }
  // Returns null when `alignment` is not a power of two or the arena is
  // exhausted; callers turn that into an Error with context.
  void* allocate(size_t size, size_t alignment);
  void release_all() { used_ = 0; }

  uint8_t* base() const { return base_; }
  size_t capacity() const { return capacity_; }
  size_t used() const { return used_; }

 private:
  uint8_t* base_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;
};

class LoadAllocator {
 public:
  LoadAllocator() = default;
  ~LoadAllocator() { release(); }
  LoadAllocator(const LoadAllocator&) = delete;
  LoadAllocator& operator=(const LoadAllocator&) = delete;

  // Null on exhaustion or a bad alignment (power of two, <= 4096).
  void* allocate(size_t size, size_t alignment);

  // Zero-initialised array of n T; null on overflow or exhaustion.
  template <typename T>
  T* allocate_array(size_t n) {
    size_t bytes = 0;
    if (__builtin_mul_overflow(n, sizeof(T), &bytes)) return nullptr;
    void* p = allocate(bytes, alignof(T) < 8 ? 8 : alignof(T));
    if (p != nullptr) __builtin_memset(p, 0, bytes);
    return static_cast<T*>(p);
  }

  void release();
  size_t bytes_reserved() const { return reserved_; }

 private:
  struct Chunk {
    Chunk* next;
    size_t capacity;
    size_t used;
  };
  static constexpr size_t kChunkSize = 16 * 1024;
  Chunk* head_ = nullptr;
  size_t reserved_ = 0;
};

namespace detail {
// DynArray's growth for every element type: a fresh block of `capacity`
// elements of `elem_size` bytes, the `size` live ones copied over. One
// function instead of one copy per DynArray<T> (about 140 B each on arm64).
PARE_NODISCARD bool grow_array(void** data, size_t size, size_t* capacity, size_t new_capacity, size_t elem_size,
                               size_t align);
}  // namespace detail

// A growable array of trivially copyable T (grown by memcpy).
template <typename T>
class DynArray {
 public:
  DynArray() = default;
  ~DynArray() { pare_pal_free(data_); }
  DynArray(const DynArray&) = delete;
  DynArray& operator=(const DynArray&) = delete;

  PARE_NODISCARD bool push_back(const T& v) {
    if (size_ == capacity_ && !reserve(capacity_ == 0 ? 16 : capacity_ * 2)) return false;
    data_[size_++] = v;
    return true;
  }
  PARE_NODISCARD bool insert(size_t index, const T& v) {
    if (size_ == capacity_ && !reserve(capacity_ == 0 ? 16 : capacity_ * 2)) return false;
    for (size_t i = size_; i > index; --i) data_[i] = data_[i - 1];
    data_[index] = v;
    ++size_;
    return true;
  }
  void erase(size_t index) {
    for (size_t i = index; i + 1 < size_; ++i) data_[i] = data_[i + 1];
    --size_;
  }
  PARE_NODISCARD bool reserve(size_t capacity) {
    static_assert(__is_trivially_copyable(T), "DynArray grows by memcpy");
    return capacity <= capacity_ || detail::grow_array(reinterpret_cast<void**>(&data_), size_, &capacity_, capacity,
                                                       sizeof(T), alignof(T) < 8 ? 8 : alignof(T));
  }
  void clear() { size_ = 0; }
  // Keeps the first `size` elements (at most size()).
  void truncate(size_t size) { size_ = size < size_ ? size : size_; }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace pare
