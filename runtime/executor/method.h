#pragma once
// Method: one executable instance of a program's method, and the
// interpreter that runs it.
//
// Creating a method allocates its value slots and runs its init section
// once (e.g. packing weights into objects). execute() runs the remaining
// instructions in order. Kernels compute output shapes as they run; memory
// for every activation and scratch buffer comes from one arena laid out by
// the memory planner (runtime/core/memory_planner.h):
//
//  * the first run, and any run whose input signature (the dtype, sizes
//    and strides of every input) matches none of the plans kept, is a
//    planning run: allocations are placed by value lifetime as they happen;
//    anything that does not fit the current arena is served from a
//    temporary block and the arena is resized to the plan before the next
//    run that replays it;
//  * every other run replays the plan made for its signature: each
//    allocation is the next slot, no search, no PAL call. With build
//    feature dynamic_shapes the last kPlanCacheSize signatures' plans are
//    kept (least recently run replaced), so inputs that alternate between
//    a few shapes plan each shape once, and the arena, sized for the
//    largest, is never reallocated; without it one plan is kept.
//
// Method outputs stay valid until the next execute(), set_input() or
// destruction. A method instance is not thread-safe; create one per thread.

#include "runtime/registry/kernel.h"
#include "runtime/core/memory_planner.h"
#include "runtime/executor/program.h"
#include "runtime/core/thread_pool.h"

namespace pare {

struct MethodMemoryStats {
  uint64_t arena_bytes;            // arena currently allocated
  uint64_t planned_arena_bytes;    // what the current plan needs
  uint64_t persistent_bytes;       // value slots, init outputs, objects
  uint64_t num_plans;              // planning runs so far
  uint64_t temporary_blocks;       // blocks served outside the arena by the last run
  uint64_t first_fit_arena_bytes;  // the last plan laid out first fit
  uint64_t greedy_arena_bytes;     // ... and greedy by size (0 when pinned to first fit)
};

class Method {
 public:
  explicit Method(Program& program) : program_(program) {}
  ~Method();
  Method(const Method&) = delete;
  Method& operator=(const Method&) = delete;

  // Builds the instance of method `name` and runs its init section. With
  // `share_state` (an instance of a method of the same program, build
  // feature state), each state named as one of its states is that state's
  // memory (same dtype and sizes): a prefill and a decode method over one
  // KV cache. `share_state` must outlive this instance.
  Error init(const char* name, Method* share_state = nullptr);

  Diagnostics& diagnostics() { return diagnostics_; }
  const Diagnostics& diagnostics() const { return diagnostics_; }
  bool initialized() const { return desc_ != nullptr; }
  const MethodDesc& desc() const { return *desc_; }
  const Program& program() const { return program_; }

  // Borrows `data` (which must stay valid through execute()). `strides` may
  // be null for a contiguous tensor; `nbytes` bounds every element.
  Error set_input(size_t index, int32_t dtype_code, const int64_t* sizes, size_t ndim, const int64_t* strides,
                  const void* data, size_t nbytes);
  Error execute();
  // Null unless a successful execute() produced it.
  const Value* output(size_t index) const;
  // Binds tensor output `index` to caller memory (`data` = null unbinds):
  // every later execute() leaves the output's elements there, contiguous:
  // written in place when the kernel producing it allocates at most
  // `nbytes`, else copied there when the run ends (an error if it does not
  // fit). output() then describes the caller's buffer.
  Error set_output_buffer(size_t index, void* data, size_t nbytes);

  Error set_profiling(bool enabled);
  // Per instruction: calls and ticks since profiling was enabled.
  bool profile(size_t instruction, uint64_t* calls, uint64_t* ticks) const;

  // Build feature threads: runs kernels on `threads` threads (1 to
  // ThreadPool::kMaxThreads; the caller's plus threads - 1 workers this
  // instance owns). Outputs are bitwise identical for every count. The
  // next run plans again (scratch is per chunk).
  Error set_num_threads(uint32_t threads);
  uint32_t num_threads() const { return pool_ != nullptr ? pool_->threads() : 1; }

  // Build feature state (format 1.2): the buffers the method keeps
  // between executes (docs/program_format.md, "State"), each instance its
  // own. reset_state() restores every initial value; state() finds one by
  // name (its storage, updated in place by later executes); set_state()
  // overwrites one with `nbytes` of contiguous data of its dtype and sizes.
  // Without the feature: FeatureNotSelected (state() returns null).
  const char* state_name(size_t index) const;  // null past the end
  Error reset_state();
  const Tensor* state(const char* name);
  Error set_state(const char* name, int32_t dtype_code, const int64_t* sizes, size_t ndim, const void* data,
                  size_t nbytes);

  MethodMemoryStats memory_stats() const;
  // Which arena layout plans keep (memory_planner.h); the next run
  // re-plans.
  // FeatureNotSelected for greedy by size in a runtime without build
  // feature greedy_planner (kSmaller is then first fit: the only layout).
  Error set_planner(PlannerStrategy strategy);

 private:
  friend class KernelContext;

  struct Instruction {
    KernelFn fn;
    const char* op_name;
    size_t op_table_index;
    Value** args;  // inputs, then outputs
    uint16_t num_inputs;
    uint16_t num_outputs;
  };
  enum class Phase : uint8_t { Idle, Init, Run };

  Error run_instruction(uint32_t index);
  void resolve_symbolic_lists(const Instruction& ins);
  struct CachedPlan {
    MemoryPlanner planner;
    Tensor* inputs = nullptr;  // the input signature it was made for
    bool valid = false;
    uint64_t last_run = 0;
  };
  // How many plans are kept: kPlanCacheSize with build feature
  // dynamic_shapes, else one (a static model has one input signature).
  static size_t cached_plans() { return feature_selected(FeatureId::dynamic_shapes) ? kPlanCacheSize : 1; }
  bool inputs_match(const CachedPlan& plan) const;
  bool select_plan();
  MemoryPlanner& planner() { return plans_[active_plan_].planner; }
  const MemoryPlanner& planner() const { return plans_[active_plan_].planner; }
  void release_temporaries();
  void release_dead_temporaries(uint32_t instruction);
  // Inline: method.cc and kernel_context.cc both ask, on every run.
  uint32_t value_id(const Value* v) const {
    if (desc_ == nullptr || v < values_ || v >= values_ + desc_->num_values) return kNoValue;
    return static_cast<uint32_t>(v - values_);
  }
  Result<void*> allocate_storage(Value* value, size_t nbytes);
  void release_pool();
  void* output_buffer_for(const Value* value, size_t nbytes) const;
  Error finish_output_buffers();
  // Leaves t's elements in dst, contiguous (nbytes = t.nbytes()), through
  // scratch when they overlap.
  Error copy_contiguous(const Tensor& t, void* dst, size_t nbytes);
  Error state_not_selected();
  const StateDesc* find_state(const char* name);
  void* state_storage_for(const Value* value, size_t nbytes) const;
  Error write_back_state();

  Program& program_;
  const MethodDesc* desc_ = nullptr;
  Diagnostics diagnostics_;
  LoadAllocator allocator_;  // everything that lives as long as the instance
  Value* values_ = nullptr;
  Instruction* instructions_ = nullptr;
  bool* input_set_ = nullptr;
  struct OutputBuffer {
    void* data;
    size_t nbytes;
    // What output() returns for a bound output after a run: the tensor in
    // `data`. Never written to the output's value slot, which may be a
    // constant, an input or an init result that outlives the run and the
    // binding (the slot pointing into a buffer the caller since unbound and
    // freed was a use after free: fuzz/regressions/loader).
    Value result;
  };
  OutputBuffer* output_buffers_ = nullptr;  // per output; data null when unbound
  size_t num_output_buffers_ = 0;           // how many are bound
  ObjectBase* objects_ = nullptr;
  bool outputs_valid_ = false;

  // Execution state.
  Phase phase_ = Phase::Idle;
  uint32_t current_instruction_ = 0;

  // Memory plans, one per recent input signature.
  static constexpr size_t kPlanCacheSize = 4;
  CachedPlan plans_[kPlanCacheSize];
  size_t active_plan_ = 0;
  uint64_t runs_ = 0;
  bool planning_ = false;
  bool replay_broken_ = false;
  size_t replay_cursor_ = 0;
  uint8_t* arena_ = nullptr;
  size_t arena_capacity_ = 0;
  // Blocks served outside the arena this run; a planning run's (slot set)
  // are freed when their slot's last reader has run.
  struct Temporary {
    void* block;
    uint32_t slot;  // the plan's slot, or Value::kNoSlot: kept until the next run
  };
  DynArray<Temporary> temporaries_;
  uint64_t num_plans_ = 0;

  // Build feature threads: null with one thread.
  ThreadPool* pool_ = nullptr;

  // Build feature op_profiling.
  bool profiling_ = false;
  uint64_t* profile_calls_ = nullptr;
  uint64_t* profile_ticks_ = nullptr;
};

}  // namespace pare
