// A method's state (build feature state; docs/program_format.md, "State"):
// the buffers a model mutates, kept in the method instance between
// executes, and their entry points. The interpreter (method.cc) places an
// in-place update in its state's memory and writes the others back when a
// run ends.

#include "runtime/executor/method.h"

#include "runtime/core/format.h"

namespace pare {
namespace {

// True when t has this dtype code and these sizes (sizes may be null when
// ndim is 0).
bool has_dtype_and_sizes(const Tensor& t, int32_t dtype_code, const int64_t* sizes, size_t ndim) {
  bool same = dtype_code == static_cast<int32_t>(t.dtype) && ndim == t.dim && (ndim == 0 || sizes != nullptr);
  for (size_t k = 0; same && k < ndim; ++k) same = sizes[k] == t.sizes[k];
  return same;
}

}  // namespace

// Shared by every state entry point of a runtime without the feature.
PARE_NOINLINE Error Method::state_not_selected() { return feature_not_selected(diagnostics_, "state"); }

const char* Method::state_name(size_t index) const {
  if (!feature_selected(FeatureId::state) || desc_ == nullptr || index >= desc_->num_states) return nullptr;
  return desc_->states[index].name;
}

const StateDesc* Method::find_state(const char* name) {
  for (uint32_t k = 0; k < desc_->num_states; ++k) {
    if (name != nullptr && string_equal(desc_->states[k].name, name)) return &desc_->states[k];
  }
  PARE_FAIL(diagnostics_, Error::InvalidArgument, "method '%s' has no state named '%s'%s", desc_->name,
            name != nullptr ? name : "(null)", desc_->num_states == 0 ? " (it has no state)" : "");
  return nullptr;
}

Error Method::reset_state() {
  diagnostics_.clear();
  if (!feature_selected(FeatureId::state)) return state_not_selected();
  if (desc_ == nullptr) return PARE_FAIL(diagnostics_, Error::InvalidState, "the method is not initialised");
  for (uint32_t k = 0; k < desc_->num_states; ++k) {
    const uint32_t id = desc_->states[k].value;
    __builtin_memcpy(values_[id].tensor.data(), desc_->values[id].data, values_[id].tensor.nbytes());
  }
  return Error::Ok;
}

const Tensor* Method::state(const char* name) {
  diagnostics_.clear();
  if (!feature_selected(FeatureId::state)) {
    (void)state_not_selected();
    return nullptr;
  }
  if (desc_ == nullptr) {
    PARE_FAIL(diagnostics_, Error::InvalidState, "the method is not initialised");
    return nullptr;
  }
  const StateDesc* s = find_state(name);
  return s != nullptr ? &values_[s->value].tensor : nullptr;
}

Error Method::set_state(const char* name, int32_t dtype_code, const int64_t* sizes, size_t ndim, const void* data,
                        size_t nbytes) {
  const Tensor* t = state(name);
  if (t == nullptr) return diagnostics_.code();
  PARE_CHECK_OR_RETURN(diagnostics_, has_dtype_and_sizes(*t, dtype_code, sizes, ndim), Error::InvalidShape,
                       "state '%s' of method '%s' is a %s tensor of sizes %s: pass that dtype and those sizes", name,
                       desc_->name, to_string(t->dtype), sizes_to_string(t->size_span()).text);
  PARE_CHECK_OR_RETURN(diagnostics_, nbytes >= t->nbytes() && (data != nullptr || t->nbytes() == 0),
                       Error::InvalidArgument, "state '%s' needs %zu bytes of data but %zu were given", name,
                       t->nbytes(), data != nullptr ? nbytes : 0);
  if (t->nbytes() > 0) __builtin_memcpy(t->data(), data, t->nbytes());
  outputs_valid_ = false;
  return Error::Ok;
}

void* Method::state_storage_for(const Value* value, size_t nbytes) const {
  const uint32_t id = value_id(value);
  for (uint32_t k = 0; id != kNoValue && k < desc_->num_states; ++k) {
    const StateDesc& s = desc_->states[k];
    const Tensor& t = values_[s.value].tensor;
    if (s.in_place && s.update == id && nbytes == t.nbytes()) return t.data();
  }
  return nullptr;
}

// Each state's update, where the run left it, into the state.
Error Method::write_back_state() {
  for (uint32_t k = 0; k < desc_->num_states; ++k) {
    const StateDesc& s = desc_->states[k];
    if (s.update == kNoValue) continue;
    const Tensor& state = values_[s.value].tensor;
    const Tensor& update = values_[s.update].tensor;
    PARE_CHECK_OR_RETURN(diagnostics_,
                         has_dtype_and_sizes(state, static_cast<int32_t>(update.dtype), update.sizes, update.dim),
                         Error::InvalidShape,
                         "state '%s' of method '%s' is a %s tensor of sizes %s but the run updates it with a %s "
                         "tensor of sizes %s: re-export the model",
                         s.name, desc_->name, to_string(state.dtype), sizes_to_string(state.size_span()).text,
                         to_string(update.dtype), sizes_to_string(update.size_span()).text);
    PARE_TRY(copy_contiguous(update, state.data(), state.nbytes()));
  }
  return Error::Ok;
}

}  // namespace pare
