// Argument access and the cold error paths of the kernel-authoring API
// (kernel.h, dispatch.h).

#include "runtime/registry/dispatch.h"
#include "runtime/core/format.h"

namespace pare {

namespace {
// The dummy every failed accessor returns: a 0-dim, empty, null tensor that
// no kernel reaches because status() is checked first.
constexpr Tensor kEmptyTensor{};
}  // namespace

namespace detail {

Error dtype_not_selected(KernelContext& ctx, const char* tag_name, ScalarType t) {
  return PARE_FAIL(ctx, Error::DtypeNotSelected,
                   "dtype %s of kernel tag %s is not selected in this build (manifest %s): re-trace "
                   "the model with inputs that reach it, or add %s to kernel_metadata[%s] in the manifest",
                   to_string(t), tag_name, selection::kManifestName, to_string(t), tag_name);
}

void append_dtype_list(FormatBuffer& out, const TagInfo& tag) {
  for (size_t i = 0; i < tag.num_dtypes; ++i) {
    if (i > 0) out.append(", ");
    out.append(to_string(tag.dtypes[i]));
  }
}

Error dtype_not_supported(KernelContext& ctx, const TagInfo& tag, ScalarType t) {
  char list[128];
  FormatBuffer out(list, sizeof(list));
  append_dtype_list(out, tag);
  return PARE_FAIL(ctx, Error::UnsupportedDtype, "dtype %s is not supported (kernel tag %s handles %s)", to_string(t),
                   tag.name, list);
}

Error op_not_selected_in_call(KernelContext& ctx, const char* name) {
  return PARE_FAIL(ctx, Error::OperatorNotSelected,
                   "calls %s, which the manifest (%s) does not select: re-trace the model or add %s "
                   "to the manifest",
                   name, selection::kManifestName, name);
}

}  // namespace detail

Error class_not_selected(KernelContext& ctx, const char* class_name) {
  return PARE_FAIL(ctx, Error::ClassNotSelected,
                   "the manifest does not select custom class %s: re-trace the model or add it to "
                   "custom_classes in the manifest",
                   class_name);
}

Error wrap_dim(KernelContext& ctx, int64_t dim, int64_t ndim, const char* arg_name, int64_t* out) {
  const int64_t n = ndim <= 0 ? 1 : ndim;
  PARE_CHECK_OR_RETURN(ctx, dim >= -n && dim < n, Error::IndexOutOfRange,
                       "argument '%s': dimension %lld is out of range for a %lld-dim tensor (expected "
                       "[%lld, %lld])",
                       arg_name, static_cast<long long>(dim), static_cast<long long>(ndim), static_cast<long long>(-n),
                       static_cast<long long>(n - 1));
  *out = dim < 0 ? dim + n : dim;
  return Error::Ok;
}

KernelArgs::KernelArgs(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs, size_t min_inputs, size_t max_inputs,
                       size_t num_outputs)
    : ctx_(ctx), inputs_(inputs), outputs_(outputs) {
  if (inputs.size() < min_inputs || inputs.size() > max_inputs) {
    status_ = min_inputs == max_inputs
                  ? PARE_FAIL(ctx_, Error::InvalidArgument, "expects %zu inputs, got %zu", min_inputs, inputs.size())
                  : PARE_FAIL(ctx_, Error::InvalidArgument, "expects %zu to %zu inputs, got %zu", min_inputs,
                              max_inputs, inputs.size());
  } else if (outputs.size() != num_outputs) {
    status_ = PARE_FAIL(ctx_, Error::InvalidArgument, "expects %zu outputs, got %zu", num_outputs, outputs.size());
  }
}

void KernelArgs::fail_kind(size_t i, const char* name, const char* expected) {
  if (status_ != Error::Ok) return;
  const char* got = i < inputs_.size() ? to_string(inputs_[i]->kind) : "nothing (argument missing)";
  status_ = PARE_FAIL(ctx_, Error::InvalidArgument, "argument '%s' (#%zu) must be %s, got %s", name, i, expected, got);
}

void KernelArgs::fail_class(size_t i, const char* name, const char* expected) {
  if (status_ != Error::Ok) return;
  status_ = PARE_FAIL(ctx_, Error::InvalidArgument, "argument '%s' (#%zu) must be a %s object", name, i, expected);
}

const Value* KernelArgs::get(size_t i, const char* name, ValueKind kind) {
  if (status_ != Error::Ok) return nullptr;
  if (i >= inputs_.size() || inputs_[i]->kind != kind) {
    fail_kind(i, name, to_string(kind));
    return nullptr;
  }
  return inputs_[i];
}

const Value& KernelArgs::value(size_t i) const { return *inputs_[i]; }

Value& KernelArgs::output(size_t i) { return *outputs_[i]; }

const Tensor& KernelArgs::tensor(size_t i, const char* name) {
  const Value* v = get(i, name, ValueKind::Tensor);
  return v != nullptr ? v->tensor : kEmptyTensor;
}

const Tensor* KernelArgs::optional_tensor(size_t i, const char* name) {
  if (!has(i)) return nullptr;
  const Value* v = get(i, name, ValueKind::Tensor);
  return v != nullptr ? &v->tensor : nullptr;
}

int64_t KernelArgs::int64(size_t i, const char* name) {
  const Value* v = get(i, name, ValueKind::Int);
  return v != nullptr ? v->int_value : 0;
}

int64_t KernelArgs::int64_or(size_t i, const char* name, int64_t fallback) {
  return has(i) ? int64(i, name) : fallback;
}

Optional<int64_t> KernelArgs::optional_int64(size_t i, const char* name) {
  if (!has(i)) return {false, 0};
  return {true, int64(i, name)};
}

double KernelArgs::real(size_t i, const char* name) {
  if (status_ == Error::Ok && i < inputs_.size() && inputs_[i]->kind == ValueKind::Int) {
    return static_cast<double>(inputs_[i]->int_value);
  }
  const Value* v = get(i, name, ValueKind::Double);
  return v != nullptr ? v->double_value : 0.0;
}

bool KernelArgs::boolean(size_t i, const char* name) {
  const Value* v = get(i, name, ValueKind::Bool);
  return v != nullptr ? v->bool_value : false;
}

bool KernelArgs::boolean_or(size_t i, const char* name, bool fallback) { return has(i) ? boolean(i, name) : fallback; }

Scalar KernelArgs::scalar(size_t i, const char* name) {
  if (status_ != Error::Ok) return Scalar();
  if (i >= inputs_.size() || !inputs_[i]->is_scalar()) {
    fail_kind(i, name, "a Scalar (int, float or bool)");
    return Scalar();
  }
  return inputs_[i]->to_scalar();
}

Scalar KernelArgs::scalar_or(size_t i, const char* name, Scalar fallback) {
  return has(i) ? scalar(i, name) : fallback;
}

IntArrayRef KernelArgs::int_list(size_t i, const char* name) {
  const Value* v = get(i, name, ValueKind::IntList);
  return v != nullptr ? v->int_list : IntArrayRef();
}

Optional<IntArrayRef> KernelArgs::optional_int_list(size_t i, const char* name) {
  if (!has(i)) return {false, IntArrayRef()};
  return {true, int_list(i, name)};
}

Span<const double> KernelArgs::double_list(size_t i, const char* name) {
  const Value* v = get(i, name, ValueKind::DoubleList);
  return v != nullptr ? v->double_list : Span<const double>();
}

const char* KernelArgs::optional_string(size_t i, const char* name) {
  if (!has(i)) return nullptr;
  const Value* v = get(i, name, ValueKind::String);
  return v != nullptr ? v->string : nullptr;
}

TensorList KernelArgs::tensor_list(size_t i, const char* name) {
  const TensorList list = optional_tensor_list(i, name);
  for (size_t k = 0; k < list.size; ++k) {
    if (list.items[k]->kind != ValueKind::Tensor) {
      status_ = PARE_FAIL(ctx_, Error::InvalidArgument,
                          "argument '%s' (#%zu) must be Tensor[], but element %zu is None", name, i, k);
      return TensorList{nullptr, 0};
    }
  }
  return list;
}

TensorList KernelArgs::optional_tensor_list(size_t i, const char* name) {
  const Value* v = get(i, name, ValueKind::TensorList);
  return v != nullptr ? v->tensor_list : TensorList{nullptr, 0};
}

Optional<ScalarType> KernelArgs::optional_dtype(size_t i, const char* name) {
  if (!has(i)) return {false, ScalarType::Undefined};
  const int64_t code = int64(i, name);
  if (status_ != Error::Ok) return {false, ScalarType::Undefined};
  if (!is_supported_scalar_type_code(code)) {
    status_ = PARE_FAIL(ctx_, Error::UnsupportedDtype, "argument '%s' (#%zu): dtype code %lld is not supported", name,
                        i, static_cast<long long>(code));
    return {false, ScalarType::Undefined};
  }
  return {true, static_cast<ScalarType>(code)};
}

int64_t KernelArgs::dim(size_t i, const char* name, int64_t ndim) {
  const int64_t raw = int64(i, name);
  if (status_ != Error::Ok) return 0;
  int64_t wrapped = 0;
  const Error error = wrap_dim(ctx_, raw, ndim, name, &wrapped);
  if (error != Error::Ok) status_ = error;
  return wrapped;
}

void KernelArgs::set_output_int(size_t i, int64_t v) { *outputs_[i] = Value::make_int(v); }
void KernelArgs::set_output_double(size_t i, double v) { *outputs_[i] = Value::make_double(v); }
void KernelArgs::set_output_bool(size_t i, bool v) { *outputs_[i] = Value::make_bool(v); }

TensorList KernelArgs::output_list(size_t i) {
  if (status_ == Error::Ok && outputs_[i]->kind != ValueKind::TensorList) {
    status_ = PARE_FAIL(ctx_, Error::InvalidArgument, "output #%zu must be a Tensor[] value, got %s", i,
                        to_string(outputs_[i]->kind));
  }
  return status_ == Error::Ok ? outputs_[i]->tensor_list : TensorList{nullptr, 0};
}

}  // namespace pare
