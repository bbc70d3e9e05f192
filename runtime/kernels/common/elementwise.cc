// Type promotion, broadcasting and operand preparation for elementwise
// kernels (see elementwise.h).

#include "runtime/kernels/common/elementwise.h"

#include "runtime/kernels/common/convert.h"

namespace pare {
namespace {

ScalarType combine_categories(ScalarType higher, ScalarType lower) {
  if (is_floating_type(higher)) return higher;
  if (higher == ScalarType::Bool || is_floating_type(lower)) return promote_types(higher, lower);
  if (higher != ScalarType::Undefined) return higher;
  return lower;
}

}  // namespace

Operand tensor_or_scalar(KernelArgs& args, size_t i, const char* name) {
  if (args.status() == Error::Ok && i < args.num_inputs() && args.value(i).is_scalar()) {
    return Operand::of(args.value(i).to_scalar());
  }
  return Operand::of(args.tensor(i, name));
}

ScalarType result_type(const Operand* operands, size_t n) {
  // PyTorch's ResultTypeState: three priority classes, combined by category.
  ScalarType dim_result = ScalarType::Undefined;
  ScalarType zero_dim_result = ScalarType::Undefined;
  ScalarType wrapped_result = ScalarType::Undefined;
  for (size_t i = 0; i < n; ++i) {
    const Operand& op = operands[i];
    if (op.is_scalar()) {
      wrapped_result = promote_types(wrapped_result, op.scalar.wrapped_dtype());
    } else if (op.tensor->dim > 0) {
      dim_result = promote_types(dim_result, op.tensor->dtype);
    } else {
      zero_dim_result = promote_types(zero_dim_result, op.tensor->dtype);
    }
  }
  return combine_categories(dim_result, combine_categories(zero_dim_result, wrapped_result));
}

bool broadcast_shapes(IntArrayRef a, IntArrayRef b, int64_t* out, size_t* out_dim) {
  const size_t dim = a.size() > b.size() ? a.size() : b.size();
  for (size_t i = 0; i < dim; ++i) {
    // Align from the right.
    const int64_t da = i < dim - a.size() ? 1 : a[i - (dim - a.size())];
    const int64_t db = i < dim - b.size() ? 1 : b[i - (dim - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  *out_dim = dim;
  return true;
}

void ElementwiseBase::add_input(const Operand& operand, const char* name) {
  if (num_inputs_ < capacity_) {
    operands_[num_inputs_] = operand;
    names_[num_inputs_] = name;
  }
  ++num_inputs_;
}

Error ElementwiseBase::prepare(Value& out, ScalarType compute_dtype, ScalarType output_dtype) {
  PARE_CHECK_OR_RETURN(ctx_, num_inputs_ == capacity_, Error::Internal,
                       "elementwise op expects %zu inputs, %zu were added", capacity_, num_inputs_);
  int64_t shape[kMaxDim];
  size_t dim = 0;
  for (size_t k = 0; k < num_inputs_; ++k) {
    if (operands_[k].is_scalar()) continue;
    const Tensor& t = *operands_[k].tensor;
    int64_t next[kMaxDim];
    size_t next_dim = 0;
    if (!broadcast_shapes(IntArrayRef(shape, dim), t.size_span(), next, &next_dim)) {
      return PARE_FAIL(ctx_, Error::InvalidShape, "argument '%s' with sizes %s cannot be broadcast with sizes %s",
                       names_[k], sizes_to_string(t.size_span()).text, sizes_to_string(IntArrayRef(shape, dim)).text);
    }
    for (size_t i = 0; i < next_dim; ++i) shape[i] = next[i];
    dim = next_dim;
  }
  const Tensor* inputs[loops::kMaxInputs] = {};
  for (size_t k = 0; k < num_inputs_; ++k) {
    if (operands_[k].is_scalar()) continue;
    if (operands_[k].tensor->dtype == compute_dtype) {
      prepared_[k] = *operands_[k].tensor;
    } else {
      // Mixed dtypes: convert once up front so the hot loop sees one type.
      PARE_TRY_ASSIGN(prepared_[k], as_contiguous(ctx_, *operands_[k].tensor, compute_dtype));
    }
    inputs[k] = &prepared_[k];
  }
  PARE_TRY_ASSIGN(out_, ctx_.allocate_output(out, output_dtype, IntArrayRef(shape, dim)));
  geometry_ = loops::make_geometry(*out_, inputs, num_inputs_);
  return Error::Ok;
}

}  // namespace pare
