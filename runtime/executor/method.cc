// The interpreter: method instances and planned activation memory (see
// method.h); the services kernels use are in kernel_context.cc, the
// entry points of a method's state in method_state.cc.

#include "runtime/executor/method.h"

#include "runtime/core/format.h"

namespace pare {
Method::~Method() {
  // Objects may own resources beyond their memory; run their destructors.
  // Their memory, like every other per-instance structure, belongs to
  // allocator_ and goes with it.
  for (ObjectBase* o = objects_; o != nullptr;) {
    ObjectBase* next = o->next_owned;
    if (o->destroy != nullptr) o->destroy(o);
    o = next;
  }
  release_temporaries();
  pare_pal_free(arena_);
  if (feature_selected(FeatureId::threads)) release_pool();
}

// Joins and frees the thread pool, if any.
void Method::release_pool() {
  if (pool_ == nullptr) return;
  pool_->~ThreadPool();
  pare_pal_free(pool_);
  pool_ = nullptr;
}

Error Method::init(const char* name, Method* share_state) {
  diagnostics_.clear();
  if (desc_ != nullptr) return PARE_FAIL(diagnostics_, Error::InvalidState, "method already initialised");
  if (!program_.loaded()) {
    return PARE_FAIL(diagnostics_, Error::InvalidState, "the program is not loaded");
  }
  const MethodDesc* desc = program_.find_method(name != nullptr ? name : "");
  if (desc == nullptr) {
    return PARE_FAIL(diagnostics_, Error::InvalidArgument, "the program has no method named '%s'",
                     name != nullptr ? name : "(null)");
  }
  const MethodDesc& m = *desc;
  if (share_state != nullptr) {
    if (!feature_selected(FeatureId::state)) return state_not_selected();
    PARE_CHECK_OR_RETURN(diagnostics_, &share_state->program_ == &program_ && share_state->desc_ != nullptr,
                         Error::InvalidArgument,
                         "method '%s' can only share the state of a created method of the same program", m.name);
  }

  values_ = allocator_.allocate_array<Value>(m.num_values);
  instructions_ = allocator_.allocate_array<Instruction>(m.num_instructions);
  input_set_ = allocator_.allocate_array<bool>(m.num_inputs);
  if (feature_selected(FeatureId::output_buffers)) {
    output_buffers_ = allocator_.allocate_array<OutputBuffer>(m.num_outputs);
  }
  bool plans_ok = true;
  for (size_t k = 0; k < cached_plans(); ++k) {
    plans_[k].inputs = allocator_.allocate_array<Tensor>(m.num_inputs);
    plans_ok = plans_ok && (m.num_inputs == 0 || plans_[k].inputs != nullptr);
  }
  if ((m.num_values > 0 && values_ == nullptr) || (m.num_instructions > 0 && instructions_ == nullptr) ||
      (m.num_inputs > 0 && input_set_ == nullptr) || !plans_ok ||
      (feature_selected(FeatureId::output_buffers) && m.num_outputs > 0 && output_buffers_ == nullptr)) {
    return PARE_FAIL(diagnostics_, Error::OutOfMemory, "out of memory creating method '%s'", m.name);
  }

  for (uint32_t i = 0; i < m.num_values; ++i) {
    const ValueDesc& d = m.values[i];
    Value* v = PARE_PLACEMENT_NEW(&values_[i]) Value();
    switch (d.kind) {
      case ValueKind::Tensor:
        if (d.constant) {
          // Constants are read-only; kernels never write their inputs.
          *v = Value::make_tensor(make_tensor(const_cast<void*>(d.data), d.dtype, IntArrayRef(d.sizes, d.dim)));
        }
        break;
      case ValueKind::Int:
        if (d.constant) *v = Value::make_int(d.int_value);
        break;
      case ValueKind::Double:
        if (d.constant) *v = Value::make_double(d.double_value);
        break;
      case ValueKind::Bool:
        if (d.constant) *v = Value::make_bool(d.bool_value);
        break;
      case ValueKind::String: *v = Value::make_string(d.string); break;
      case ValueKind::IntList: {
        const int64_t* ints = d.ints;
        // Only with dynamic_shapes (the loader refuses symbolic lists without it).
        if (feature_selected(FeatureId::dynamic_shapes) && d.int_refs != nullptr) {
          program_.observer().record_feature(FeatureId::dynamic_shapes);
          // Symbolic sizes are resolved into a per-instance copy before each
          // instruction that reads the list.
          int64_t* copy = allocator_.allocate_array<int64_t>(d.count);
          if (copy == nullptr)
            return PARE_FAIL(diagnostics_, Error::OutOfMemory, "out of memory creating method '%s'", m.name);
          for (uint32_t k = 0; k < d.count; ++k) copy[k] = d.ints[k];
          ints = copy;
        }
        *v = Value::make_int_list(IntArrayRef(ints, d.count));
        break;
      }
      case ValueKind::DoubleList:
        v->kind = ValueKind::DoubleList;
        v->double_list = Span<const double>(d.doubles, d.count);
        break;
      case ValueKind::TensorList: {
        Value** items = allocator_.allocate_array<Value*>(d.count);
        if (items == nullptr && d.count > 0)
          return PARE_FAIL(diagnostics_, Error::OutOfMemory, "out of memory creating method '%s'", m.name);
        for (uint32_t k = 0; k < d.count; ++k) items[k] = &values_[d.value_ids[k]];
        v->kind = ValueKind::TensorList;
        v->tensor_list = TensorList{items, d.count};
        break;
      }
      case ValueKind::None:
      case ValueKind::Object: break;
    }
  }

  for (uint32_t i = 0; i < m.num_instructions; ++i) {
    const InstructionDesc& d = m.instructions[i];
    const ProgramOp& op = program_.op(d.op);
    Instruction& ins = instructions_[i];
    const size_t num_args = static_cast<size_t>(d.num_inputs) + d.num_outputs;
    ins.args = allocator_.allocate_array<Value*>(num_args);
    if (ins.args == nullptr && num_args > 0)
      return PARE_FAIL(diagnostics_, Error::OutOfMemory, "out of memory creating method '%s'", m.name);
    for (size_t k = 0; k < num_args; ++k) ins.args[k] = &values_[d.args[k]];
    ins.fn = op.entry->fn;
    ins.op_name = op.name;
    ins.op_table_index = op.table_index;
    ins.num_inputs = d.num_inputs;
    ins.num_outputs = d.num_outputs;
  }
  if (feature_selected(FeatureId::state)) {
    // Each instance's own copy of every state, outside the per-call arena.
    for (uint32_t k = 0; k < m.num_states; ++k) {
      const ValueDesc& d = m.values[m.states[k].value];
      const Tensor initial = make_tensor(const_cast<void*>(d.data), d.dtype, IntArrayRef(d.sizes, d.dim));
      const Tensor* shared = nullptr;
      if (share_state != nullptr) {
        for (uint32_t j = 0; j < share_state->desc_->num_states && shared == nullptr; ++j) {
          const StateDesc& other = share_state->desc_->states[j];
          if (string_equal(other.name, m.states[k].name)) shared = &share_state->values_[other.value].tensor;
        }
      }
      void* storage = nullptr;
      if (shared != nullptr) {
        bool same = shared->dtype == initial.dtype && shared->dim == initial.dim;
        for (size_t i = 0; same && i < initial.dim; ++i) same = shared->sizes[i] == initial.sizes[i];
        PARE_CHECK_OR_RETURN(diagnostics_, same, Error::InvalidArgument,
                             "state '%s' of method '%s' is a %s tensor of sizes %s; method '%s' has one of %s %s: "
                             "they cannot be shared",
                             m.states[k].name, m.name, to_string(initial.dtype),
                             sizes_to_string(initial.size_span()).text, share_state->desc_->name,
                             to_string(shared->dtype), sizes_to_string(shared->size_span()).text);
        storage = shared->data();
      } else {
        storage = allocator_.allocate(initial.nbytes() == 0 ? 1 : initial.nbytes(), kTensorAlignment);
        if (storage == nullptr) {
          return PARE_FAIL(diagnostics_, Error::OutOfMemory, "out of memory creating the state of method '%s'", m.name);
        }
        __builtin_memcpy(storage, initial.data(), initial.nbytes());
      }
      values_[m.states[k].value] = Value::make_tensor(make_tensor(storage, d.dtype, IntArrayRef(d.sizes, d.dim)));
    }
    if (m.num_states > 0) program_.observer().record_feature(FeatureId::state);
  }
  desc_ = desc;

  // The init section: runs once, into persistent memory.
  phase_ = Phase::Init;
  for (uint32_t i = 0; i < m.num_init_instructions; ++i) {
    const Error error = run_instruction(i);
    if (error != Error::Ok) {
      phase_ = Phase::Idle;
      desc_ = nullptr;
      return error;
    }
  }
  phase_ = Phase::Idle;
  return Error::Ok;
}

Error Method::set_input(size_t index, int32_t dtype_code, const int64_t* sizes, size_t ndim, const int64_t* strides,
                        const void* data, size_t nbytes) {
  diagnostics_.clear();
  if (desc_ == nullptr) return PARE_FAIL(diagnostics_, Error::InvalidState, "the method is not initialised");
  const MethodDesc& m = *desc_;
  PARE_CHECK_OR_RETURN(diagnostics_, index < m.num_inputs, Error::IndexOutOfRange,
                       "input index %zu is out of range: method '%s' has %u inputs", index, m.name, m.num_inputs);
  const ValueDesc& d = m.values[m.inputs[index]];
  PARE_CHECK_OR_RETURN(diagnostics_, is_supported_scalar_type_code(dtype_code), Error::UnsupportedDtype,
                       "input %zu: dtype code %d is not supported", index, dtype_code);
  const ScalarType dtype = static_cast<ScalarType>(dtype_code);
  PARE_CHECK_OR_RETURN(diagnostics_, d.dtype == ScalarType::Undefined || d.dtype == dtype, Error::InvalidArgument,
                       "input %zu of method '%s' expects dtype %s, got %s", index, m.name, to_string(d.dtype),
                       to_string(dtype));
  PARE_CHECK_OR_RETURN(diagnostics_, ndim <= kMaxDim, Error::LimitExceeded,
                       "input %zu has %zu dims; this runtime supports up to %zu", index, ndim, kMaxDim);
  PARE_CHECK_OR_RETURN(diagnostics_, ndim == 0 || sizes != nullptr, Error::InvalidArgument, "input %zu: sizes is null",
                       index);
  if (d.dim != ValueDesc::kUnknownRank) {
    PARE_CHECK_OR_RETURN(diagnostics_, ndim == d.dim, Error::InvalidShape,
                         "input %zu of method '%s' expects %u dims, got %zu", index, m.name, d.dim, ndim);
    for (size_t k = 0; k < ndim; ++k) {
      PARE_CHECK_OR_RETURN(diagnostics_, d.sizes[k] < 0 || d.sizes[k] == sizes[k], Error::InvalidShape,
                           "input %zu of method '%s' expects size %lld in dim %zu, got %lld", index, m.name,
                           static_cast<long long>(d.sizes[k]), k, static_cast<long long>(sizes[k]));
    }
  }
  Tensor t{};
  t.dtype = dtype;
  t.dim = static_cast<uint8_t>(ndim);
  size_t numel = 0;
  PARE_CHECK_OR_RETURN(diagnostics_, checked_numel(IntArrayRef(sizes, ndim), &numel), Error::InvalidShape,
                       "input %zu has negative or overflowing sizes %s", index,
                       sizes_to_string(IntArrayRef(sizes, ndim)).text);
  for (size_t k = 0; k < ndim; ++k) t.sizes[k] = sizes[k];
  // Highest element offset reachable, to bound every access by nbytes.
  uint64_t max_offset = 0;
  if (strides == nullptr) {
    (void)contiguous_strides(IntArrayRef(sizes, ndim), t.strides, &numel);
    max_offset = numel > 0 ? numel - 1 : 0;
  } else {
    for (size_t k = 0; k < ndim; ++k) {
      PARE_CHECK_OR_RETURN(diagnostics_, strides[k] >= 0, Error::InvalidArgument,
                           "input %zu: negative stride %lld in dim %zu is not supported", index,
                           static_cast<long long>(strides[k]), k);
      t.strides[k] = strides[k];
      uint64_t term = 0;
      if (numel > 0 &&
          (__builtin_mul_overflow(static_cast<uint64_t>(sizes[k] - 1), static_cast<uint64_t>(strides[k]), &term) ||
           __builtin_add_overflow(max_offset, term, &max_offset))) {
        return PARE_FAIL(diagnostics_, Error::InvalidArgument, "input %zu: strides overflow", index);
      }
    }
  }
  if (numel > 0) {
    uint64_t needed = 0;
    const bool overflow =
        __builtin_add_overflow(max_offset, 1, &needed) || __builtin_mul_overflow(needed, element_size(dtype), &needed);
    PARE_CHECK_OR_RETURN(diagnostics_, !overflow && needed <= nbytes, Error::InvalidArgument,
                         "input %zu: sizes %s and strides need %llu bytes but the buffer has %zu", index,
                         sizes_to_string(IntArrayRef(sizes, ndim)).text, static_cast<unsigned long long>(needed),
                         nbytes);
    PARE_CHECK_OR_RETURN(diagnostics_, data != nullptr, Error::InvalidArgument, "input %zu: data is null", index);
  }
  t.storage = const_cast<void*>(data);
  t.storage_offset = 0;
  Value& v = values_[m.inputs[index]];
  v = Value::make_tensor(t);
  input_set_[index] = true;
  outputs_valid_ = false;
  return Error::Ok;
}

bool Method::inputs_match(const CachedPlan& plan) const {
  if (!plan.valid) return false;
  for (uint32_t k = 0; k < desc_->num_inputs; ++k) {
    const Tensor& now = values_[desc_->inputs[k]].tensor;
    const Tensor& then = plan.inputs[k];
    if (now.dtype != then.dtype || now.dim != then.dim) return false;
    for (size_t d = 0; d < now.dim; ++d) {
      if (now.sizes[d] != then.sizes[d] || now.strides[d] != then.strides[d]) return false;
    }
  }
  return true;
}

// Makes the plan for the current input signature active and returns true,
// or, when none is kept, makes the least recently run plan (or an unused
// one) active, empty, and returns false: this run plans. Planning while
// another signature's plan is kept is what build feature dynamic_shapes
// is for: the trace records it.
bool Method::select_plan() {
  if (inputs_match(plans_[active_plan_])) return true;
  size_t victim = 0;
  bool other_signature = false;
  for (size_t k = 0; k < cached_plans(); ++k) {
    if (inputs_match(plans_[k])) {
      active_plan_ = k;
      return true;
    }
    other_signature = other_signature || plans_[k].valid;
    const CachedPlan& v = plans_[victim];
    if (v.valid && (!plans_[k].valid || plans_[k].last_run < v.last_run)) victim = k;
  }
  if (other_signature) program_.observer().record_feature(FeatureId::dynamic_shapes);
  active_plan_ = victim;
  plans_[victim].valid = false;
  return false;
}

void Method::release_temporaries() {
  for (size_t i = 0; i < temporaries_.size(); ++i) pare_pal_free(temporaries_[i].block);
  temporaries_.clear();
}

// On a planning run every block the arena cannot hold yet is its own
// allocation: each goes when its slot's last reader (views included) has
// run, as the plan reuses its place, so the run holds the plan's live
// blocks at a time, not the sum of all of them (an LLM's 64-token prefill:
// 16 MB of blocks against a 0.7 MB arena).
void Method::release_dead_temporaries(uint32_t instruction) {
  size_t kept = 0;
  for (size_t i = 0; i < temporaries_.size(); ++i) {
    const Temporary t = temporaries_[i];
    if (t.slot != Value::kNoSlot && planner().slot(t.slot).last_use <= instruction) {
      pare_pal_free(t.block);
    } else {
      temporaries_[kept++] = t;
    }
  }
  temporaries_.truncate(kept);
}

Error Method::execute() {
  diagnostics_.clear();
  outputs_valid_ = false;
  if (desc_ == nullptr) return PARE_FAIL(diagnostics_, Error::InvalidState, "the method is not initialised");
  const MethodDesc& m = *desc_;
  for (uint32_t k = 0; k < m.num_inputs; ++k) {
    PARE_CHECK_OR_RETURN(diagnostics_, input_set_[k], Error::InvalidState, "input %u of method '%s' is not set", k,
                         m.name);
  }
  // The previous run's outputs die here, so its temporary blocks can go and
  // the arena can be resized to the current plan.
  release_temporaries();
  planning_ = !select_plan();
  CachedPlan& plan = plans_[active_plan_];
  plan.last_run = ++runs_;
  if (planning_) {
    plan.planner.begin();
  } else if (plan.planner.arena_size() > arena_capacity_) {
    pare_pal_free(arena_);
    arena_capacity_ = 0;
    arena_ = static_cast<uint8_t*>(pare_pal_malloc(static_cast<size_t>(plan.planner.arena_size()), kTensorAlignment));
    if (arena_ == nullptr) {
      return PARE_FAIL(diagnostics_, Error::OutOfMemory, "out of memory allocating a %llu-byte arena",
                       static_cast<unsigned long long>(plan.planner.arena_size()));
    }
    arena_capacity_ = static_cast<size_t>(plan.planner.arena_size());
  }
  replay_broken_ = false;
  replay_cursor_ = 0;

  phase_ = Phase::Run;
  for (uint32_t i = m.num_init_instructions; i < m.num_instructions; ++i) {
    const Error error = run_instruction(i);
    if (error != Error::Ok) {
      phase_ = Phase::Idle;
      plan.valid = false;  // a partial plan must not be replayed
      return error;
    }
    if (planning_ && temporaries_.size() > 0) release_dead_temporaries(i);
  }
  phase_ = Phase::Idle;
  if (feature_selected(FeatureId::state)) {
    const Error error = write_back_state();
    if (error != Error::Ok) {
      plan.valid = false;
      return error;
    }
  }
  if (feature_selected(FeatureId::output_buffers)) {
    if (num_output_buffers_ > 0) {
      const Error error = finish_output_buffers();
      if (error != Error::Ok) return error;
    }
  }
  if (planning_) {
    // finish() fails only when out of memory for the greedy layout's
    // working arrays: the first-fit layout this run used then stands.
    (void)plan.planner.finish(feature_selected(FeatureId::greedy_planner));
    if (plan.planner.kept_greedy()) program_.observer().record_feature(FeatureId::greedy_planner);
    plan.valid = true;
    for (uint32_t k = 0; k < m.num_inputs; ++k) plan.inputs[k] = values_[m.inputs[k]].tensor;
    ++num_plans_;
  }
  if (replay_broken_) plan.valid = false;  // re-plan next run
  outputs_valid_ = true;
  return Error::Ok;
}

void Method::resolve_symbolic_lists(const Instruction& ins) {
  const MethodDesc& m = *desc_;
  for (uint16_t k = 0; k < ins.num_inputs; ++k) {
    const uint32_t id = value_id(ins.args[k]);
    const ValueDesc& d = m.values[id];
    if (d.kind != ValueKind::IntList || d.int_refs == nullptr) continue;
    // The per-instance copy init() allocated for this list (never program data).
    int64_t* ints = const_cast<int64_t*>(values_[id].int_list.data());
    for (uint32_t e = 0; e < d.count; ++e) {
      if (d.int_refs[e] != kNoValue) ints[e] = values_[d.int_refs[e]].int_value;
    }
  }
}

Error Method::run_instruction(uint32_t index) {
  const Instruction& ins = instructions_[index];
  const MethodDesc& m = *desc_;
  current_instruction_ = index;
  if (feature_selected(FeatureId::dynamic_shapes)) resolve_symbolic_lists(ins);

  // Outputs start empty so a kernel that fails to produce one is caught
  // below instead of leaving a stale tensor from the previous run.
  Value** outputs = ins.args + ins.num_inputs;
  for (uint16_t k = 0; k < ins.num_outputs; ++k) {
    Value* out = outputs[k];
    if (out->kind == ValueKind::TensorList) {
      for (size_t e = 0; e < out->tensor_list.size; ++e) *out->tensor_list.items[e] = Value();
    } else {
      *out = Value();
    }
  }

  program_.observer().record_op(ins.op_table_index, /*root=*/true);
  KernelContext ctx(this, ins.op_name, nullptr);
  uint64_t start = 0;
  if (feature_selected(FeatureId::op_profiling)) {
    if (profiling_) start = pare_pal_ticks();
  }
  Error error = ins.fn(ctx, ValueSpan(ins.args, ins.num_inputs), ValueSpan(outputs, ins.num_outputs));
  if (feature_selected(FeatureId::op_profiling)) {
    if (profiling_) {
      profile_ticks_[index] += pare_pal_ticks() - start;
      profile_calls_[index] += 1;
    }
  }

  if (error == Error::Ok) {
    for (uint16_t k = 0; k < ins.num_outputs; ++k) {
      const ValueDesc& d = m.values[value_id(outputs[k])];
      bool produced = outputs[k]->kind == d.kind;
      if (d.kind == ValueKind::TensorList) {
        for (size_t e = 0; e < outputs[k]->tensor_list.size; ++e) {
          produced = produced && outputs[k]->tensor_list.items[e]->kind == ValueKind::Tensor;
        }
      }
      if (!produced) {
        error = PARE_FAIL(diagnostics_, Error::Internal, "%s: kernel did not produce output %u as a %s value",
                          ins.op_name, k, to_string(d.kind));
        break;
      }
    }
  }
  if (error != Error::Ok) {
    if (diagnostics_.code() == Error::Ok) {
      PARE_FAIL(diagnostics_, error, "%s: %s", ins.op_name, to_string(error));
    }
    PARE_APPEND(diagnostics_, " (method '%s', instruction %u)", m.name, index);
  }
  return error;
}

const Value* Method::output(size_t index) const {
  if (desc_ == nullptr || !outputs_valid_ || index >= desc_->num_outputs) return nullptr;
  if (feature_selected(FeatureId::output_buffers)) {
    if (output_buffers_[index].data != nullptr) return &output_buffers_[index].result;
  }
  return &values_[desc_->outputs[index]];
}

Result<void*> Method::allocate_storage(Value* value, size_t nbytes) {
  if (feature_selected(FeatureId::state)) {
    // A state's update written in place: its storage, outside the plan.
    if (void* storage = state_storage_for(value, nbytes)) {
      if (value != nullptr) value->plan_slot = Value::kNoSlot;
      return storage;
    }
  }
  if (phase_ == Phase::Init) {
    void* p = allocator_.allocate(nbytes == 0 ? 1 : nbytes, kTensorAlignment);
    if (p == nullptr) {
      return PARE_FAIL(diagnostics_, Error::OutOfMemory, "out of memory allocating %zu persistent bytes", nbytes);
    }
    if (value != nullptr) value->plan_slot = Value::kNoSlot;
    return p;
  }
  const uint32_t id = value_id(value);
  const uint32_t last_use = id != kNoValue ? desc_->last_use[id] : current_instruction_;
  uint32_t slot_index = Value::kNoSlot;
  void* p = nullptr;
  if (planning_) {
    if (!planner().place(current_instruction_, nbytes, last_use, &slot_index)) {
      return PARE_FAIL(diagnostics_, Error::OutOfMemory, "out of memory planning method '%s'", desc_->name);
    }
    const MemoryPlanner::Slot& slot = planner().slot(slot_index);
    if (slot.offset + slot.size <= arena_capacity_) p = arena_ + slot.offset;
  } else if (!replay_broken_) {
    if (replay_cursor_ < planner().num_slots()) {
      const MemoryPlanner::Slot& slot = planner().slot(replay_cursor_);
      if (slot.instruction == current_instruction_ && nbytes <= slot.size &&
          slot.offset + slot.size <= arena_capacity_) {
        p = arena_ + slot.offset;
        slot_index = static_cast<uint32_t>(replay_cursor_++);
      }
    }
    // A kernel asked for something the plan did not foresee (data-dependent
    // shapes): finish this run outside the arena and re-plan next time.
    if (p == nullptr) replay_broken_ = true;
  }
  if (p == nullptr) {
    p = pare_pal_malloc(nbytes == 0 ? 1 : nbytes, kTensorAlignment);
    if (p == nullptr || !temporaries_.push_back(Temporary{p, planning_ ? slot_index : Value::kNoSlot})) {
      pare_pal_free(p);
      return PARE_FAIL(diagnostics_, Error::OutOfMemory, "out of memory allocating %zu bytes", nbytes);
    }
  }
  if (value != nullptr) value->plan_slot = slot_index;
  // A bound output is written straight into the caller's buffer. Its slot
  // is still planned, so the plan does not depend on which outputs are
  // bound.
  if (feature_selected(FeatureId::output_buffers)) {
    if (num_output_buffers_ > 0) {
      if (void* buffer = output_buffer_for(value, nbytes)) return buffer;
    }
  }
  return p;
}

void* Method::output_buffer_for(const Value* value, size_t nbytes) const {
  const uint32_t id = value_id(value);
  for (uint32_t k = 0; id != kNoValue && k < desc_->num_outputs; ++k) {
    if (desc_->outputs[k] == id && output_buffers_[k].data != nullptr && nbytes <= output_buffers_[k].nbytes) {
      return output_buffers_[k].data;
    }
  }
  return nullptr;
}

Error Method::set_output_buffer(size_t index, void* data, size_t nbytes) {
  diagnostics_.clear();
  if (desc_ == nullptr) return PARE_FAIL(diagnostics_, Error::InvalidState, "the method is not initialised");
  if (!feature_selected(FeatureId::output_buffers)) {
    (void)index;
    (void)data;
    (void)nbytes;
    return feature_not_selected(diagnostics_, "output_buffers");
  } else {
    PARE_CHECK_OR_RETURN(diagnostics_, index < desc_->num_outputs, Error::IndexOutOfRange,
                         "output index %zu is out of range: method '%s' has %u outputs", index, desc_->name,
                         desc_->num_outputs);
    PARE_CHECK_OR_RETURN(diagnostics_, data == nullptr || reinterpret_cast<uintptr_t>(data) % 16 == 0,
                         Error::InvalidArgument, "the buffer for output %zu must be 16-byte aligned", index);
    OutputBuffer& b = output_buffers_[index];
    if ((b.data != nullptr) != (data != nullptr)) num_output_buffers_ += data != nullptr ? 1 : size_t(-1);
    b.data = data;
    b.nbytes = data != nullptr ? nbytes : 0;
    outputs_valid_ = false;
    if (data != nullptr) program_.observer().record_feature(FeatureId::output_buffers);
    return Error::Ok;
  }
}

// Leaves each bound output's elements in its buffer, contiguous, and makes
// the output describe the buffer (OutputBuffer::result; the value slot is
// left as the run made it).
Error Method::finish_output_buffers() {
  for (uint32_t k = 0; k < desc_->num_outputs; ++k) {
    OutputBuffer& b = output_buffers_[k];
    const Value& v = values_[desc_->outputs[k]];
    if (b.data == nullptr) continue;
    PARE_CHECK_OR_RETURN(diagnostics_, v.is_tensor(), Error::InvalidArgument,
                         "output %u of method '%s' is a %s value, not a tensor: unbind its buffer", k, desc_->name,
                         to_string(v.kind));
    const Tensor& t = v.tensor;
    const size_t nbytes = t.nbytes();
    PARE_CHECK_OR_RETURN(diagnostics_, nbytes <= b.nbytes, Error::InvalidArgument,
                         "output %u of method '%s' has %zu bytes (sizes %s) but its buffer holds %zu: bind a "
                         "larger one",
                         k, desc_->name, nbytes, sizes_to_string(t.size_span()).text, b.nbytes);
    // A view, an input passed through, or a block too large for the
    // buffer when allocated: copy.
    PARE_TRY(copy_contiguous(t, b.data, nbytes));
    b.result = Value::make_tensor(make_tensor(b.data, t.dtype, t.size_span()));
  }
  return Error::Ok;
}

Error Method::copy_contiguous(const Tensor& t, void* dst, size_t nbytes) {
  if (t.data() == dst && t.is_contiguous()) return Error::Ok;
  const char* begin = nullptr;
  const char* end = nullptr;
  element_span(t, &begin, &end);
  const char* d = static_cast<const char*>(dst);
  if (begin < d + nbytes && d < end) {
    void* scratch = pare_pal_malloc(nbytes == 0 ? 1 : nbytes, kTensorAlignment);
    if (scratch == nullptr || !temporaries_.push_back(Temporary{scratch, Value::kNoSlot})) {
      pare_pal_free(scratch);
      return PARE_FAIL(diagnostics_, Error::OutOfMemory, "out of memory copying %zu bytes", nbytes);
    }
    copy_to_contiguous(t, scratch);
    __builtin_memcpy(dst, scratch, nbytes);
  } else {
    copy_to_contiguous(t, dst);
  }
  return Error::Ok;
}

Error Method::set_num_threads(uint32_t threads) {
  diagnostics_.clear();
  if (desc_ == nullptr) return PARE_FAIL(diagnostics_, Error::InvalidState, "the method is not initialised");
  PARE_CHECK_OR_RETURN(diagnostics_, threads >= 1 && threads <= ThreadPool::kMaxThreads, Error::InvalidArgument,
                       "thread count %u must be in [1, %u]", threads, ThreadPool::kMaxThreads);
  if (!feature_selected(FeatureId::threads)) {
    if (threads == 1) return Error::Ok;
    return feature_not_selected(diagnostics_, "threads");
  } else {
    if (threads == num_threads()) return Error::Ok;
    release_pool();
    // Scratch is allocated per chunk: every kept plan is stale.
    for (CachedPlan& plan : plans_) plan.valid = false;
    if (threads == 1) return Error::Ok;
    void* memory = pare_pal_malloc(sizeof(ThreadPool), alignof(ThreadPool));
    if (memory == nullptr) return PARE_FAIL(diagnostics_, Error::OutOfMemory, "out of memory creating a thread pool");
    pool_ = PARE_PLACEMENT_NEW(memory) ThreadPool();
    if (pool_->start(threads) != Error::Ok) {
      release_pool();
      return PARE_FAIL(diagnostics_, Error::OutOfMemory, "the platform could not start %u threads", threads - 1);
    }
    program_.observer().record_feature(FeatureId::threads);
    return Error::Ok;
  }
}

Error Method::set_profiling(bool enabled) {
  diagnostics_.clear();
  if (desc_ == nullptr) return PARE_FAIL(diagnostics_, Error::InvalidState, "the method is not initialised");
  if (!feature_selected(FeatureId::op_profiling)) {
    (void)enabled;
    return feature_not_selected(diagnostics_, "op_profiling");
  } else {
    if (enabled && profile_calls_ == nullptr) {
      profile_calls_ = allocator_.allocate_array<uint64_t>(desc_->num_instructions);
      profile_ticks_ = allocator_.allocate_array<uint64_t>(desc_->num_instructions);
      if (desc_->num_instructions > 0 && (profile_calls_ == nullptr || profile_ticks_ == nullptr)) {
        profile_calls_ = nullptr;
        return PARE_FAIL(diagnostics_, Error::OutOfMemory, "out of memory enabling profiling");
      }
    }
    if (enabled) program_.observer().record_feature(FeatureId::op_profiling);
    profiling_ = enabled;
    return Error::Ok;
  }
}

bool Method::profile(size_t instruction, uint64_t* calls, uint64_t* ticks) const {
  // Without op_profiling there are no counts (set_profiling allocates them
  // only with it): a constant, so the C API's lookup after it folds away.
  if (!feature_selected(FeatureId::op_profiling)) return false;
  if (desc_ == nullptr || profile_calls_ == nullptr || instruction >= desc_->num_instructions) return false;
  *calls = profile_calls_[instruction];
  *ticks = profile_ticks_[instruction];
  return true;
}

MethodMemoryStats Method::memory_stats() const {
  MethodMemoryStats s{};
  s.arena_bytes = arena_capacity_;
  s.planned_arena_bytes = planner().arena_size();
  s.persistent_bytes = allocator_.bytes_reserved();
  s.num_plans = num_plans_;
  s.temporary_blocks = temporaries_.size();
  s.first_fit_arena_bytes = planner().first_fit_arena_size();
  s.greedy_arena_bytes = planner().greedy_arena_size();
  return s;
}

Error Method::set_planner(PlannerStrategy strategy) {
  if (strategy == PlannerStrategy::kGreedyBySize) {
    if (!feature_selected(FeatureId::greedy_planner)) return feature_not_selected(diagnostics_, "greedy_planner");
    program_.observer().record_feature(FeatureId::greedy_planner);
  }
  for (CachedPlan& plan : plans_) {
    if (plan.planner.strategy() != strategy) plan.valid = false;
    plan.planner.set_strategy(strategy);
  }
  return Error::Ok;
}

}  // namespace pare
