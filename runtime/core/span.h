#pragma once
// Span<T>: a non-owning pointer + length, the runtime's only "container
// view" (the runtime has no C++ library span). IntArrayRef is the PyTorch-familiar name for
// a list of sizes or strides.

#include "runtime/core/compiler.h"

namespace pare {

template <typename T>
class Span {
 public:
  constexpr Span() = default;
  constexpr Span(T* data, size_t size) : data_(data), size_(size) {}
  template <size_t N>
  constexpr Span(T (&array)[N]) : data_(array), size_(N) {}
  // Span<T> converts to Span<const T>.
  template <typename U, typename = decltype(static_cast<T*>(static_cast<U*>(nullptr)))>
  constexpr Span(const Span<U>& other) : data_(other.data()), size_(other.size()) {}

  constexpr T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr T& operator[](size_t i) const { return data_[i]; }
  constexpr T* begin() const { return data_; }
  constexpr T* end() const { return data_ + size_; }
  constexpr Span slice(size_t start, size_t count) const { return Span(data_ + start, count); }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

using IntArrayRef = Span<const int64_t>;

}  // namespace pare
