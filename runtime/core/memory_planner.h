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
// When the planning run ends (finish()), every block's size and lifetime is
// known, and the same blocks are laid out a second time greedily by size,
// as TFLite's arena planner and PyTorch's Static Runtime do: largest first,
// each into the tightest gap left by the already placed blocks whose
// lifetimes overlap its own. Neither layout is always the smaller (first
// fit wins when early small blocks sit where large ones end), so by default
// the smaller of the two is kept; a strategy can pin either.
//
// Later runs with the same input shapes replay the slots in order with no
// search at all. The interpreter (runtime/executor/method.cc) decides when to
// plan and where memory comes from; this class only does the arithmetic.

#include "runtime/core/memory.h"

namespace pare {

// Which layout a plan keeps (pare_planner in the C API).
enum class PlannerStrategy : uint8_t {
  kSmaller = 0,       // the smaller of first fit and greedy by size (ties: first fit)
  kFirstFit = 1,      // the planning run's own layout
  kGreedyBySize = 2,  // greedy by size
};

class MemoryPlanner {
 public:
  struct Slot {
    uint64_t offset;
    uint64_t size;
    uint32_t instruction;    // requesting instruction, to validate replays
    uint32_t last_use;       // last instruction reading this block
    uint64_t greedy_offset;  // finish()'s greedy-by-size layout
  };

  // Starts a fresh plan.
  void begin();
  // Places a block of `size` bytes requested by `instruction` that must stay
  // intact through instruction `last_use` (>= instruction). Returns the slot
  // index, or false when out of memory for the plan itself.
  PARE_NODISCARD bool place(uint32_t instruction, uint64_t size, uint32_t last_use, uint32_t* slot_index);
  // A view of the block outlives its base: keep it until `last_use`.
  void extend(uint32_t slot_index, uint32_t last_use);
  // Ends the plan: lays the blocks out greedily by size and keeps the
  // layout the strategy asks for. False when out of memory for the
  // greedy layout's working arrays (the first-fit layout is kept).
  // Without `greedy` (a runtime that does not select build feature
  // greedy_planner passes a constant false, and the greedy layout's code
  // folds away) every plan is first fit, whatever the strategy.
  PARE_NODISCARD bool finish(bool greedy);
  // Whether the last finished plan kept the greedy layout.
  bool kept_greedy() const { return kept_greedy_; }

  void set_strategy(PlannerStrategy strategy) { strategy_ = strategy; }
  PlannerStrategy strategy() const { return strategy_; }

  size_t num_slots() const { return slots_.size(); }
  const Slot& slot(size_t i) const { return slots_[i]; }
  // Arena bytes the plan needs (the highest end of any slot).
  uint64_t arena_size() const { return arena_size_; }
  // Arena bytes of each layout of the last finished plan (0 before one).
  uint64_t first_fit_arena_size() const { return first_fit_arena_size_; }
  uint64_t greedy_arena_size() const { return greedy_arena_size_; }

 private:
  void expire(uint32_t instruction);
  bool lay_out_greedily();

  DynArray<Slot> slots_;
  DynArray<uint32_t> live_;  // slot indices, sorted by offset
  uint64_t arena_size_ = 0;
  PlannerStrategy strategy_ = PlannerStrategy::kSmaller;
  // finish()'s working arrays, kept to avoid reallocating on each plan.
  DynArray<uint32_t> order_;   // slot indices, largest first
  DynArray<uint32_t> placed_;  // placed slot indices, sorted by greedy offset
  uint64_t first_fit_arena_size_ = 0;
  bool kept_greedy_ = false;
  uint64_t greedy_arena_size_ = 0;
};

}  // namespace pare
