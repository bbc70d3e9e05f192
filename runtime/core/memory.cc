// Bump and load-time allocators (see memory.h).

#include "runtime/core/memory.h"

namespace pare {

void* BumpArena::allocate(size_t size, size_t alignment) {
  if (!is_power_of_two(alignment)) return nullptr;
  const uintptr_t base = reinterpret_cast<uintptr_t>(base_);
  // Align the absolute address, not the offset, so a base with a weaker
  // alignment than requested still yields aligned blocks.
  const uintptr_t current = base + used_;
  const uintptr_t aligned = (current + alignment - 1) & ~(static_cast<uintptr_t>(alignment) - 1);
  if (aligned < current) return nullptr;  // wrapped
  const size_t start = static_cast<size_t>(aligned - base);
  size_t end = 0;
  if (__builtin_add_overflow(start, size, &end) || end > capacity_) return nullptr;
  used_ = end;
  return base_ + start;
}

void* LoadAllocator::allocate(size_t size, size_t alignment) {
  if (!is_power_of_two(alignment) || alignment > 4096) return nullptr;
  const size_t header = align_up(sizeof(Chunk), 64);
  if (head_ != nullptr) {
    uint8_t* base = reinterpret_cast<uint8_t*>(head_) + header;
    // Align the absolute address: chunks are only 64-aligned.
    const uintptr_t current = reinterpret_cast<uintptr_t>(base) + head_->used;
    const size_t start = head_->used + (align_up(current, alignment) - current);
    size_t end = 0;
    if (!__builtin_add_overflow(start, size, &end) && end <= head_->capacity) {
      head_->used = end;
      return base + start;
    }
  }
  // New chunk: big requests get a chunk of their own, so a huge block does
  // not strand the rest of a standard chunk.
  size_t capacity = kChunkSize;
  size_t needed = 0;
  if (__builtin_add_overflow(size, alignment, &needed)) return nullptr;
  if (needed > capacity) capacity = needed;
  size_t total = 0;
  if (__builtin_add_overflow(capacity, header, &total)) return nullptr;
  void* raw = pare_pal_malloc(total, alignment > 64 ? alignment : 64);
  if (raw == nullptr) return nullptr;
  Chunk* chunk = static_cast<Chunk*>(raw);
  chunk->next = head_;
  chunk->capacity = capacity;
  chunk->used = 0;
  head_ = chunk;
  reserved_ += total;
  return allocate(size, alignment);
}

void LoadAllocator::release() {
  while (head_ != nullptr) {
    Chunk* next = head_->next;
    pare_pal_free(head_);
    head_ = next;
  }
  reserved_ = 0;
}

bool detail::grow_array(void** data, size_t size, size_t* capacity, size_t new_capacity, size_t elem_size,
                        size_t align) {
  size_t bytes = 0;
  if (__builtin_mul_overflow(new_capacity, elem_size, &bytes)) return false;
  void* fresh = pare_pal_malloc(bytes, align);
  if (fresh == nullptr) return false;
  if (size > 0) __builtin_memcpy(fresh, *data, size * elem_size);
  pare_pal_free(*data);
  *data = fresh;
  *capacity = new_capacity;
  return true;
}

}  // namespace pare
