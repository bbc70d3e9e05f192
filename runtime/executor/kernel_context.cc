// The KernelContext services kernels use (runtime/registry/kernel.h):
// errors with the op's name, output, scratch and persistent memory from the
// method's planner, views, nested op calls, selection records and threads.
// Kept apart from the interpreter (method.cc), which only constructs the
// context.

#include "runtime/core/format.h"
#include "runtime/executor/method.h"

namespace pare {

Error KernelContext::fail(Error code, const char* fmt, ...) {
  char prefix[192];
  if (caller_ != nullptr) {
    format_to(prefix, sizeof(prefix), "%s (called from %s)", op_name_, caller_);
  } else {
    format_to(prefix, sizeof(prefix), "%s", op_name_);
  }
  va_list args;
  va_start(args, fmt);
  method_->diagnostics_.vfail(code, prefix, fmt, args);
  va_end(args);
  return code;
}

// The same prefix as fail()'s, without the formatter (which a runtime
// without messages need not carry).
Error KernelContext::fail_packed(Error code, uint32_t id, uint32_t shape, ...) {
  char prefix[192];
  FormatBuffer out(prefix, sizeof(prefix));
  out.append(op_name_);
  if (caller_ != nullptr) {
    out.append(" (called from ");
    out.append(caller_);
    out.append_char(')');
  }
  va_list args;
  va_start(args, shape);
  method_->diagnostics_.vfail_packed(code, prefix, id, shape, args);
  va_end(args);
  return code;
}

Result<Tensor*> KernelContext::allocate_output(Value& out, ScalarType dtype, IntArrayRef sizes) {
  PARE_CHECK_OR_RETURN(*this, element_size(dtype) != 0, Error::UnsupportedDtype,
                       "cannot allocate an output of dtype %s", to_string(dtype));
  PARE_CHECK_OR_RETURN(*this, sizes.size() <= kMaxDim, Error::LimitExceeded,
                       "output would have %zu dims; this runtime supports up to %zu", sizes.size(), kMaxDim);
  size_t numel = 0;
  size_t nbytes = 0;
  PARE_CHECK_OR_RETURN(*this,
                       checked_numel(sizes, &numel) && !__builtin_mul_overflow(numel, element_size(dtype), &nbytes),
                       Error::InvalidShape, "invalid output sizes %s", sizes_to_string(sizes).text);
  PARE_TRY_ASSIGN(void* memory, method_->allocate_storage(&out, nbytes));
  const uint32_t slot = out.plan_slot;
  out = Value::make_tensor(make_tensor(memory, dtype, sizes));
  out.plan_slot = slot;
  return &out.tensor;
}

Result<void*> KernelContext::allocate_scratch(size_t nbytes) { return method_->allocate_storage(nullptr, nbytes); }

Error KernelContext::set_output_view(Value& out, const Value& base, IntArrayRef sizes, IntArrayRef strides,
                                     int64_t storage_offset) {
  PARE_CHECK_OR_RETURN(*this, base.is_tensor(), Error::InvalidArgument, "a view needs a tensor base");
  PARE_CHECK_OR_RETURN(*this, sizes.size() == strides.size() && sizes.size() <= kMaxDim, Error::LimitExceeded,
                       "a view of %zu dims is not supported", sizes.size());
  Tensor t = base.tensor;
  t.dim = static_cast<uint8_t>(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    t.sizes[i] = sizes[i];
    t.strides[i] = strides[i];
  }
  t.storage_offset = storage_offset;
  const uint32_t slot = base.plan_slot;
  out = Value::make_tensor(t);
  out.plan_slot = slot;
  Method& m = *method_;
  if (m.planning_ && slot != Value::kNoSlot) {
    const uint32_t id = m.value_id(&out);
    m.planner().extend(slot, id != kNoValue ? m.desc_->last_use[id] : m.current_instruction_);
  }
  return Error::Ok;
}

Result<void*> KernelContext::allocate_persistent(size_t nbytes, size_t alignment) {
  PARE_CHECK_OR_RETURN(*this, method_->phase_ == Method::Phase::Init, Error::InvalidState,
                       "persistent memory and objects can only be created by init instructions");
  void* p = method_->allocator_.allocate(nbytes == 0 ? 1 : nbytes, alignment);
  PARE_CHECK_OR_RETURN(*this, p != nullptr, Error::OutOfMemory, "out of memory allocating %zu persistent bytes",
                       nbytes);
  return p;
}

void KernelContext::adopt_object(Value& out, ObjectBase* object) {
  object->next_owned = method_->objects_;
  method_->objects_ = object;
  out = Value();
  out.kind = ValueKind::Object;
  out.object = object;
  record_class(object->class_id);
}

Error KernelContext::call_op(size_t slot, ValueSpan inputs, ValueSpan outputs) {
  const OpEntry& entry = kOpTable[slot];
  method_->program_.observer().record_op(slot, /*root=*/false);
  KernelContext nested(method_, entry.name, op_name_);
  return entry.fn(nested, inputs, outputs);
}

void KernelContext::record_kernel_dtype(TagId tag, ScalarType t) {
  method_->program_.observer().record_kernel_dtype(tag, t);
}

void KernelContext::record_class(ClassId id) { method_->program_.observer().record_class(id); }

uint32_t KernelContext::threaded_chunks(int64_t n, int64_t grain, int64_t work) const {
  const uint32_t threads = method_->num_threads();
  if (threads <= 1 || n <= grain || work < 2 * kWorkPerChunk) return 1;
  const int64_t by_work = work / kWorkPerChunk;
  const int64_t by_items = (n + grain - 1) / grain;
  int64_t chunks = threads;
  if (by_work < chunks) chunks = by_work;
  if (by_items < chunks) chunks = by_items;
  return static_cast<uint32_t>(chunks);
}

void KernelContext::run_chunks(uint32_t chunks, void (*fn)(void*, uint32_t, uint32_t), void* context) {
  method_->pool_->run(chunks, fn, context);
}

}  // namespace pare
