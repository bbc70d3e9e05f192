#pragma once
// Scalar: a PyTorch "Scalar" argument (alpha, fill values, clamp bounds):
// an int64, a double or a bool, converted to the kernel's element type at
// the point of use.
//
// A Scalar also stands for a Python number passed where a Tensor is
// expected (`x + 1` exports as aten::add.Tensor(x, 1)); type promotion then
// treats it as a "wrapped number", whose dtype is `wrapped_dtype()`.

#include "runtime/core/scalar_type.h"

namespace pare {

class Scalar {
 public:
  enum class Kind : uint8_t { Int, Double, Bool };

  constexpr Scalar() : kind_(Kind::Int), i_(0) {}
  static constexpr Scalar from_int(int64_t v) { return Scalar(Kind::Int, v, 0.0); }
  static constexpr Scalar from_double(double v) { return Scalar(Kind::Double, 0, v); }
  static constexpr Scalar from_bool(bool v) { return Scalar(Kind::Bool, v ? 1 : 0, 0.0); }

  Kind kind() const { return kind_; }
  bool is_integral(bool include_bool) const { return kind_ == Kind::Int || (include_bool && kind_ == Kind::Bool); }
  bool is_floating_point() const { return kind_ == Kind::Double; }
  bool is_bool() const { return kind_ == Kind::Bool; }

  int64_t as_int() const { return kind_ == Kind::Double ? static_cast<int64_t>(d_) : i_; }
  double as_double() const { return kind_ == Kind::Double ? d_ : static_cast<double>(i_); }
  bool as_bool() const { return kind_ == Kind::Double ? d_ != 0.0 : i_ != 0; }

  // The value in element type T (PyTorch's Scalar::to<T>()).
  template <typename T>
  T to() const {
    if (kind_ == Kind::Double) return convert<T>(d_);
    if (kind_ == Kind::Bool) return convert<T>(i_ != 0);
    return convert<T>(i_);
  }

  // Dtype of this scalar as a wrapped number in type promotion: Python ints
  // are Long, bools Bool, and floats take the default dtype (Float).
  ScalarType wrapped_dtype() const {
    return kind_ == Kind::Double ? ScalarType::Float : kind_ == Kind::Bool ? ScalarType::Bool : ScalarType::Long;
  }

 private:
  constexpr Scalar(Kind k, int64_t i, double d) : kind_(k), i_(i), d_(d) {}
  Kind kind_;
  int64_t i_ = 0;
  double d_ = 0.0;
};

}  // namespace pare
