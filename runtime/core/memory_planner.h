#pragma once
// Memory planner: places every activation of a method into one arena by
// value lifetime.
//
// Output shapes are only known at run time (inputs may change size), so the
// plan is made while running: on a planning run every allocation request
// (an instruction's outputs and scratch, in request order) is placed by
// first-fit into a virtual address space among the blocks still live at
// that instruction. A block lives from the instruction that requests it to
// the last instruction that reads its value (extended when a view of it
// outlives it; scratch lives for one instruction). The result is a list of
// (offset, size) slots and the arena size they need.
//
// Later runs with the same input shapes replay the slots in order with no
// search at all. The interpreter (runtime/core/method.cc) decides when to
// plan and where memory comes from; this class only does the arithmetic.

#include "runtime/core/memory.h"

namespace pare {

class MemoryPlanner {
 public:
  struct Slot {
    uint64_t offset;
    uint64_t size;
    uint32_t instruction;  // requesting instruction, to validate replays
    uint32_t last_use;     // last instruction reading this block
  };

  // Starts a fresh plan.
  void begin();
  // Places a block of `size` bytes requested by `instruction` that must stay
  // intact through instruction `last_use` (>= instruction). Returns the slot
  // index, or false when out of memory for the plan itself.
  PARE_NODISCARD bool place(uint32_t instruction, uint64_t size, uint32_t last_use,
                            uint32_t* slot_index);
  // A view of the block outlives its base: keep it until `last_use`.
  void extend(uint32_t slot_index, uint32_t last_use);

  size_t num_slots() const { return slots_.size(); }
  const Slot& slot(size_t i) const { return slots_[i]; }
  // Arena bytes the plan needs (the highest end of any slot).
  uint64_t arena_size() const { return arena_size_; }

 private:
  void expire(uint32_t instruction);

  DynArray<Slot> slots_;
  DynArray<uint32_t> live_;  // slot indices, sorted by offset
  uint64_t arena_size_ = 0;
};

}  // namespace pare
