// First-fit lifetime planner (see memory_planner.h).

#include "runtime/core/memory_planner.h"

namespace pare {

void MemoryPlanner::begin() {
  slots_.clear();
  live_.clear();
  arena_size_ = 0;
}

void MemoryPlanner::expire(uint32_t instruction) {
  size_t kept = 0;
  for (size_t i = 0; i < live_.size(); ++i) {
    if (slots_[live_[i]].last_use >= instruction) live_[kept++] = live_[i];
  }
  while (live_.size() > kept) live_.erase(live_.size() - 1);
}

bool MemoryPlanner::place(uint32_t instruction, uint64_t size, uint32_t last_use,
                          uint32_t* slot_index) {
  expire(instruction);
  // Every block starts on a tensor-aligned offset; rounding the size keeps
  // neighbours aligned too. Sizes are bounded by allocation checks upstream.
  const uint64_t rounded = align_up(size == 0 ? 1 : size, kTensorAlignment);
  uint64_t candidate = 0;
  size_t insert_at = live_.size();
  for (size_t i = 0; i < live_.size(); ++i) {
    const Slot& s = slots_[live_[i]];
    if (candidate + rounded <= s.offset) {
      insert_at = i;
      break;
    }
    const uint64_t end = s.offset + align_up(s.size == 0 ? 1 : s.size, kTensorAlignment);
    if (end > candidate) candidate = end;
  }
  const Slot slot{candidate, size, instruction, last_use < instruction ? instruction : last_use};
  const uint32_t index = static_cast<uint32_t>(slots_.size());
  if (!slots_.push_back(slot)) return false;
  if (!live_.insert(insert_at, index)) return false;
  if (candidate + rounded > arena_size_) arena_size_ = candidate + rounded;
  *slot_index = index;
  return true;
}

void MemoryPlanner::extend(uint32_t slot_index, uint32_t last_use) {
  if (slot_index < slots_.size() && slots_[slot_index].last_use < last_use) {
    slots_[slot_index].last_use = last_use;
  }
}

}  // namespace pare
