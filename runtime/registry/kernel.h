#pragma once
// The kernel-authoring API: everything a kernel file includes.
//
// A kernel has one signature (KernelFn in inventory.h):
//
//   Error aten_relu(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs);
//
// It reads arguments through KernelArgs (kind-checked, errors name the
// argument), computes its output shape, asks the context for output memory
// (planned into the method's arena), dispatches on dtype through
// pare::dispatch (runtime/registry/dispatch.h) and reports every problem with
// PARE_FAIL / PARE_CHECK_OR_RETURN on the context. It never aborts and
// never allocates on its own. See runtime/kernels/README.md for a walk-
// through.

#include "runtime/core/diagnostics.h"
#include "runtime/registry/custom_class.h"
#include "runtime/registry/inventory.h"

namespace pare {

class Method;

template <typename T>
struct Optional {
  bool has_value;
  T value;
};

class KernelContext {
 public:
  // The operator being run ("aten::add.Tensor"), for messages.
  const char* op_name() const { return op_name_; }
  // False when this kernel was called by another kernel (PARE_CALL_OP).
  bool is_root() const { return caller_ == nullptr; }

  // Records an error whose message is prefixed with the op name (and the
  // calling op for non-root calls) and returns `code`. Prefer PARE_FAIL /
  // PARE_CHECK_OR_RETURN, which pack the text (message_text.h) and check its
  // arguments, or drop it in message-less builds.
  Error fail(Error code, const char* fmt, ...);
  Error fail_packed(Error code, uint32_t id, uint32_t shape, ...);

  // Gives `out` a contiguous tensor of `dtype` and `sizes` with memory from
  // the method's plan: `out` must be one of this kernel's outputs (memory
  // lives as long as the value) or a local Value passed as the output of a
  // PARE_CALL_OP (memory lives until the current root op returns).
  Result<Tensor*> allocate_output(Value& out, ScalarType dtype, IntArrayRef sizes);
  // 64-byte aligned scratch valid until the current root op returns
  // (planned like activations, so it costs nothing in steady state).
  Result<void*> allocate_scratch(size_t nbytes);
  // Makes `out` a view sharing `base`'s storage (view, permute, slice...).
  // The planner keeps the base's memory alive as long as the view.
  Error set_output_view(Value& out, const Value& base, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);

  // Memory that lives as long as the method instance. Only init
  // instructions (which run once) may allocate it.
  Result<void*> allocate_persistent(size_t nbytes, size_t alignment);
  // Creates an object of custom class T owned by the method and stores it
  // in `out`. Init instructions only. T must be default-constructible; the
  // caller then initialises it (and may fail).
  template <typename T>
  Result<T*> create_object(Value& out) {
    PARE_TRY_ASSIGN(void* memory, allocate_persistent(sizeof(T), alignof(T)));
    T* object = PARE_PLACEMENT_NEW(memory) T();
    object->class_id = T::kId;
    object->destroy = &destroy_object<T>;
    adopt_object(out, object);
    return object;
  }

  // Calls kOpTable[slot] as a non-root op; use PARE_CALL_OP.
  Error call_op(size_t slot, ValueSpan inputs, ValueSpan outputs);

  // Observer hooks: out of line (runtime/executor/kernel_context.cc), so a
  // kernel's code is the same in the instrumentation build (PARE_TRACING,
  // runtime/registry/observer.h), which links the plain build's kernels.
  void record_kernel_dtype(TagId tag, ScalarType t);
  void record_class(ClassId id);

  // Build feature threads. How many chunks to split n items into, in
  // multiples of `grain` items, for an op costing `work` multiply-adds (or
  // the like): 1 without the feature, with one thread, or when the work
  // does not pay for starting the method's threads (the cost model:
  // kWorkPerChunk per chunk). Depends only on its arguments and the thread
  // count, so a plan's scratch sizes do too.
  static constexpr int64_t kWorkPerChunk = int64_t{1} << 16;
  uint32_t chunks_for(int64_t n, int64_t grain, int64_t work) const {
    if (!feature_selected(FeatureId::threads)) return 1;
    return threaded_chunks(n, grain, work);
  }
  // The items of chunk c (of `chunks`) of [0, n): a multiple of `grain`
  // long but the last.
  static int64_t chunk_size(int64_t n, int64_t grain, uint32_t chunks) {
    const int64_t per = (n + chunks - 1) / chunks;
    return (per + grain - 1) / grain * grain;
  }
  // Calls fn(chunk, begin, end) for each of `chunks` (from chunks_for)
  // ranges of [0, n), each on whichever of this thread and the method's
  // threads claims it first (ThreadPool::run), and returns when every one
  // has. fn must not use the context
  // (no errors, no allocation): validate and allocate first. Ranges are
  // disjoint parts of the output, so results do not depend on `chunks`.
  template <typename F>
  void parallel(uint32_t chunks, int64_t n, int64_t grain, F&& fn) {
    if (!feature_selected(FeatureId::threads) || chunks <= 1) {
      fn(uint32_t{0}, int64_t{0}, n);
    } else {
      struct Job {
        F* fn;
        int64_t n;
        int64_t per;
      } job{&fn, n, chunk_size(n, grain, chunks)};
      run_chunks(
          chunks,
          [](void* raw, uint32_t c, uint32_t) {
            const Job& j = *static_cast<const Job*>(raw);
            const int64_t begin = c * j.per < j.n ? c * j.per : j.n;
            const int64_t end = begin + j.per < j.n ? begin + j.per : j.n;
            if (begin < end) (*j.fn)(c, begin, end);
          },
          &job);
    }
  }

 private:
  friend class Method;
  KernelContext(Method* method, const char* op_name, const char* caller)
      : method_(method), op_name_(op_name), caller_(caller) {}
  void adopt_object(Value& out, ObjectBase* object);
  uint32_t threaded_chunks(int64_t n, int64_t grain, int64_t work) const;
  void run_chunks(uint32_t chunks, void (*fn)(void*, uint32_t, uint32_t), void* context);

  Method* method_;
  const char* op_name_;
  const char* caller_;
};

namespace detail {
PARE_COLD Error op_not_selected_in_call(KernelContext& ctx, const char* name);
}  // namespace detail

// Calls another operator through the registry, e.g. add.Scalar forwarding
// to add.Tensor. The callee's inventory id is resolved at compile time (a
// name the runtime lacks does not compile); when the app does not select
// it, the call is an error naming it (a link-time constant, selection.h).
template <int kId>
Error call_op(KernelContext& ctx, const char* name, ValueSpan inputs, ValueSpan outputs) {
  static_assert(kId >= 0, "PARE_CALL_OP names an operator no kernel implements (runtime/inventory/*/*.ops.def)");
  const int slot = op_slot(kId);
  if (slot < 0) return detail::op_not_selected_in_call(ctx, name);
  return ctx.call_op(static_cast<size_t>(slot), inputs, outputs);
}
#define PARE_CALL_OP(ctx, name, inputs, outputs) \
  ::pare::call_op<::pare::op_id(name)>((ctx), (name), (inputs), (outputs))

// Wraps a possibly negative dimension index like PyTorch's maybe_wrap_dim
// (a 0-dim tensor accepts dims -1 and 0).
Error wrap_dim(KernelContext& ctx, int64_t dim, int64_t ndim, const char* arg_name, int64_t* out);

// Typed, checked access to a kernel's arguments. Errors are sticky: the
// first problem is reported (naming the argument and what was expected),
// later accessors return harmless defaults, and status() returns the error.
// Typical use:
//
//   KernelArgs args(ctx, inputs, outputs, /*min_inputs=*/2, /*max_inputs=*/3, /*num_outputs=*/1);
//   const Tensor& self = args.tensor(0, "self");
//   Scalar alpha = args.scalar_or(2, "alpha", Scalar::from_int(1));
//   PARE_TRY(args.status());
class KernelArgs {
 public:
  KernelArgs(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs, size_t min_inputs, size_t max_inputs,
             size_t num_outputs);

  Error status() const { return status_; }
  KernelContext& ctx() const { return ctx_; }
  size_t num_inputs() const { return inputs_.size(); }
  bool has(size_t i) const { return i < inputs_.size() && !inputs_[i]->is_none(); }

  // Raw access (for forwarding to PARE_CALL_OP or custom checks).
  const Value& value(size_t i) const;
  Value& output(size_t i);

  const Tensor& tensor(size_t i, const char* name);
  const Tensor* optional_tensor(size_t i, const char* name);
  int64_t int64(size_t i, const char* name);
  int64_t int64_or(size_t i, const char* name, int64_t fallback);
  Optional<int64_t> optional_int64(size_t i, const char* name);
  // A "float" schema argument: accepts int or float values.
  double real(size_t i, const char* name);
  bool boolean(size_t i, const char* name);
  bool boolean_or(size_t i, const char* name, bool fallback);
  Scalar scalar(size_t i, const char* name);
  Scalar scalar_or(size_t i, const char* name, Scalar fallback);
  IntArrayRef int_list(size_t i, const char* name);
  Optional<IntArrayRef> optional_int_list(size_t i, const char* name);
  Span<const double> double_list(size_t i, const char* name);
  // Null when None or absent.
  const char* optional_string(size_t i, const char* name);
  TensorList tensor_list(size_t i, const char* name);
  // A "Tensor?[]" argument: elements are Tensor or None values.
  TensorList optional_tensor_list(size_t i, const char* name);
  // A "ScalarType?" argument (an int holding a PyTorch dtype code).
  Optional<ScalarType> optional_dtype(size_t i, const char* name);
  // A dimension index for a tensor of rank `ndim`, wrapped.
  int64_t dim(size_t i, const char* name, int64_t ndim);
  // An object of custom class T (checked by ClassId; no RTTI).
  template <typename T>
  T* object(size_t i, const char* name) {
    const Value* v = get(i, name, ValueKind::Object);
    if (v == nullptr) return nullptr;
    if (v->object == nullptr || v->object->class_id != T::kId) {
      fail_class(i, name, T::kName);
      return nullptr;
    }
    ctx_.record_class(T::kId);
    return static_cast<T*>(v->object);
  }

  // Scalar results (e.g. aten::sym_size.int).
  void set_output_int(size_t i, int64_t v);
  void set_output_double(size_t i, double v);
  void set_output_bool(size_t i, bool v);
  // The elements of a Tensor[] result (e.g. split), to fill one by one.
  TensorList output_list(size_t i);

 private:
  const Value* get(size_t i, const char* name, ValueKind kind);
  void fail_kind(size_t i, const char* name, const char* expected);
  void fail_class(size_t i, const char* name, const char* expected);

  KernelContext& ctx_;
  ValueSpan inputs_;
  ValueSpan outputs_;
  Error status_ = Error::Ok;
};

// A "class not selected" error for code gated by selective_class_.
PARE_COLD Error class_not_selected(KernelContext& ctx, const char* class_name);

}  // namespace pare
