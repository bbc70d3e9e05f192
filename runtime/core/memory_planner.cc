// Lifetime planner: first fit while planning, greedy by size at the end
// (see memory_planner.h).

#include "runtime/core/memory_planner.h"

namespace pare {

namespace {

// Every block starts on a tensor-aligned offset; rounding the size keeps
// neighbours aligned too. Sizes are bounded by allocation checks upstream.
uint64_t footprint(uint64_t size) { return align_up(size == 0 ? 1 : size, kTensorAlignment); }

bool lifetimes_overlap(const MemoryPlanner::Slot& a, const MemoryPlanner::Slot& b) {
  return a.instruction <= b.last_use && b.instruction <= a.last_use;
}

}  // namespace

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

bool MemoryPlanner::place(uint32_t instruction, uint64_t size, uint32_t last_use, uint32_t* slot_index) {
  expire(instruction);
  const uint64_t rounded = footprint(size);
  uint64_t candidate = 0;
  size_t insert_at = live_.size();
  for (size_t i = 0; i < live_.size(); ++i) {
    const Slot& s = slots_[live_[i]];
    if (candidate + rounded <= s.offset) {
      insert_at = i;
      break;
    }
    const uint64_t end = s.offset + footprint(s.size);
    if (end > candidate) candidate = end;
  }
  const Slot slot{candidate, size, instruction, last_use < instruction ? instruction : last_use, 0};
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

bool MemoryPlanner::finish(bool greedy_selected) {
  first_fit_arena_size_ = arena_size_;
  greedy_arena_size_ = 0;
  kept_greedy_ = false;
  if (!greedy_selected || strategy_ == PlannerStrategy::kFirstFit) return true;
  if (!lay_out_greedily()) return false;
  const bool greedy = strategy_ == PlannerStrategy::kGreedyBySize || greedy_arena_size_ < first_fit_arena_size_;
  kept_greedy_ = greedy;
  if (greedy) {
    for (size_t i = 0; i < slots_.size(); ++i) slots_[i].offset = slots_[i].greedy_offset;
    arena_size_ = greedy_arena_size_;
  }
  return true;
}

bool MemoryPlanner::lay_out_greedily() {
  const size_t n = slots_.size();
  order_.clear();
  placed_.clear();
  if (!order_.reserve(n) || !placed_.reserve(n)) return false;
  // Largest first; equal sizes in request order (an insertion sort: plans
  // are made once per input shape, and n is the method's allocation count).
  for (size_t i = 0; i < n; ++i) {
    const uint64_t size = footprint(slots_[i].size);
    size_t at = order_.size();
    while (at > 0 && footprint(slots_[order_[at - 1]].size) < size) --at;
    if (!order_.insert(at, static_cast<uint32_t>(i))) return false;
  }
  uint64_t arena = 0;
  for (size_t k = 0; k < n; ++k) {
    const uint32_t index = order_[k];
    const Slot& block = slots_[index];
    const uint64_t size = footprint(block.size);
    // The tightest gap between placed blocks that overlap this one in time,
    // else the end of the highest of them.
    uint64_t gap_start = 0, best = 0, best_gap = ~uint64_t{0};
    bool found = false;
    size_t insert_at = placed_.size();
    for (size_t j = 0; j < placed_.size(); ++j) {
      const uint32_t other = placed_[j];
      if (!lifetimes_overlap(block, slots_[other])) continue;
      const uint64_t offset = slots_[other].greedy_offset;
      if (offset >= gap_start + size && offset - gap_start < best_gap) {
        best_gap = offset - gap_start;
        best = gap_start;
        found = true;
      }
      const uint64_t end = offset + footprint(slots_[other].size);
      if (end > gap_start) gap_start = end;
    }
    if (!found) best = gap_start;
    slots_[index].greedy_offset = best;
    for (size_t j = 0; j < placed_.size(); ++j) {
      if (slots_[placed_[j]].greedy_offset > best) {
        insert_at = j;
        break;
      }
    }
    if (!placed_.insert(insert_at, index)) return false;
    if (best + size > arena) arena = best + size;
  }
  greedy_arena_size_ = arena;
  return true;
}

}  // namespace pare
