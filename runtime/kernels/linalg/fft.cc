// Discrete Fourier transforms: aten::_fft_r2c (torch.fft.rfft, rfftn,
// torch.stft), aten::_fft_c2r (irfft, irfftn) and aten::_fft_c2c (fft and
// ifft of complex input).
//
// One engine for every length: an iterative radix-2 transform for powers
// of two, and Bluestein's chirp-z algorithm (the length-n transform as a
// convolution, done with radix-2 transforms of a power-of-two length
// m >= 2n - 1) for the others. The engine works in double and rounds to
// float once at the end, so every result is within a few float ulps of the
// exact transform whatever the length (torch's pocketfft works in float);
// tests compare with torch's float64 transforms.
//
// A transform over several dims is a sequence of 1-d transforms along
// each dim, on a contiguous complex64 copy (r2c: the last listed dim first,
// as a real-input transform keeping n / 2 + 1 bins when `onesided`; c2r:
// the complex dims first, the last dim last, reading the Hermitian half).
// `normalization` is torch's fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by
// 1/n, n the product of the transformed signal lengths.
//
// Complex64 only: float64 input would need complex128, which Pare lacks
// (the error says to convert to float32).

#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/math.h"

namespace pare {
namespace kernels {

namespace {

constexpr double kPi = 3.14159265358979323846;

// A complex double, the engine's working type.
struct Cd {
  double re;
  double im;
};

PARE_ALWAYS_INLINE Cd mul(Cd a, Cd b) { return Cd{a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }

// e^(-i pi num / den), with num reduced modulo 2 den first so the angle
// stays accurate for the chirp's k^2.
Cd unit(int64_t num, int64_t den) {
  const double angle = -kPi * static_cast<double>(num % (2 * den)) / static_cast<double>(den);
  return Cd{math::cos(angle), math::sin(angle)};
}

bool is_power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// The forward transform of one length, with its tables in scratch memory.
class Fft {
 public:
  Error init(KernelContext& ctx, int64_t n) {
    n_ = n;
    m_ = n;
    if (!is_power_of_two(n)) {
      m_ = 1;
      while (m_ < 2 * n - 1) m_ *= 2;
    }
    // twiddles (m/2), work (m), and for Bluestein the chirp (n) and the
    // transformed conjugate chirp (m).
    const size_t count = static_cast<size_t>(m_ / 2 + m_ + (bluestein() ? n_ + m_ : 0));
    PARE_TRY_ASSIGN(void* p, ctx.allocate_scratch(count * sizeof(Cd)));
    twiddles_ = static_cast<Cd*>(p);
    work_ = twiddles_ + m_ / 2;
    for (int64_t k = 0; k < m_ / 2; ++k) twiddles_[k] = unit(2 * k, m_);
    if (bluestein()) {
      chirp_ = work_ + m_;
      kernel_ = chirp_ + n_;
      for (int64_t k = 0; k < n_; ++k) chirp_[k] = unit(k * k, n_);  // e^(-i pi k^2 / n)
      for (int64_t k = 0; k < m_; ++k) kernel_[k] = Cd{0, 0};
      kernel_[0] = Cd{chirp_[0].re, -chirp_[0].im};
      for (int64_t k = 1; k < n_; ++k) kernel_[k] = kernel_[m_ - k] = Cd{chirp_[k].re, -chirp_[k].im};
      radix2(kernel_);
    }
    return Error::Ok;
  }

  // work()[0, n) -> its forward DFT, in place.
  Cd* work() { return work_; }
  void forward() {
    if (!bluestein()) return radix2(work_);
    // X_k = w_k sum_j (x_j w_j) conj(w_(k-j)), w_k = e^(-i pi k^2 / n): a
    // circular convolution of length m with the conjugate chirp.
    for (int64_t j = 0; j < n_; ++j) work_[j] = mul(work_[j], chirp_[j]);
    for (int64_t j = n_; j < m_; ++j) work_[j] = Cd{0, 0};
    radix2(work_);
    for (int64_t j = 0; j < m_; ++j) {
      const Cd p = mul(work_[j], kernel_[j]);
      work_[j] = Cd{p.re, -p.im};  // conjugated: the inverse as a forward transform
    }
    radix2(work_);
    const double scale = 1.0 / static_cast<double>(m_);
    for (int64_t k = 0; k < n_; ++k) {
      const Cd y{work_[k].re * scale, -work_[k].im * scale};
      work_[k] = mul(y, chirp_[k]);
    }
  }
  // The inverse (unnormalised) DFT in place: conj(F(conj(x))).
  void backward() {
    for (int64_t j = 0; j < n_; ++j) work_[j].im = -work_[j].im;
    forward();
    for (int64_t j = 0; j < n_; ++j) work_[j].im = -work_[j].im;
  }

 private:
  bool bluestein() const { return m_ != n_; }

  // In-place iterative radix-2 decimation in time over m_ points.
  void radix2(Cd* x) const {
    for (int64_t i = 1, j = 0; i < m_; ++i) {
      int64_t bit = m_ >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) {
        const Cd t = x[i];
        x[i] = x[j];
        x[j] = t;
      }
    }
    for (int64_t len = 2; len <= m_; len *= 2) {
      const int64_t half = len / 2;
      const int64_t step = m_ / len;
      for (int64_t start = 0; start < m_; start += len) {
        for (int64_t k = 0; k < half; ++k) {
          const Cd t = mul(x[start + k + half], twiddles_[k * step]);
          const Cd u = x[start + k];
          x[start + k] = Cd{u.re + t.re, u.im + t.im};
          x[start + k + half] = Cd{u.re - t.re, u.im - t.im};
        }
      }
    }
  }

  int64_t n_ = 0;
  int64_t m_ = 0;
  Cd* twiddles_ = nullptr;
  Cd* work_ = nullptr;
  Cd* chirp_ = nullptr;
  Cd* kernel_ = nullptr;
};

// The lines along dim `d` of a contiguous tensor: `outer` blocks of `len`
// elements `inner` apart.
struct Lines {
  int64_t outer;
  int64_t len;
  int64_t inner;
};

Lines lines_of(const int64_t* sizes, size_t dim, size_t d) {
  Lines l{1, sizes[d], 1};
  for (size_t i = 0; i < d; ++i) l.outer *= sizes[i];
  for (size_t i = d + 1; i < dim; ++i) l.inner *= sizes[i];
  return l;
}

// An in-place complex transform of `data` (contiguous, `sizes`) along `d`.
Error transform_along(KernelContext& ctx, ComplexFloat* data, const int64_t* sizes, size_t dim, size_t d,
                      bool forward) {
  const Lines l = lines_of(sizes, dim, d);
  if (l.len <= 1) return Error::Ok;
  Fft fft;
  PARE_TRY(fft.init(ctx, l.len));
  Cd* w = fft.work();
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t i = 0; i < l.inner; ++i) {
      ComplexFloat* line = data + o * l.len * l.inner + i;
      for (int64_t k = 0; k < l.len; ++k) w[k] = Cd{line[k * l.inner].re, line[k * l.inner].im};
      forward ? fft.forward() : fft.backward();
      for (int64_t k = 0; k < l.len; ++k) {
        line[k * l.inner] = ComplexFloat{static_cast<float>(w[k].re), static_cast<float>(w[k].im)};
      }
    }
  }
  return Error::Ok;
}

// The transformed dims, in the order given.
struct Dims {
  size_t count;
  size_t d[kMaxDim];
};

// The transformed dims (argument 1: wrapped, distinct) and the
// normalization mode (argument 2).
Error read_transform(KernelArgs& args, const Tensor& self, Dims* out, int64_t* mode) {
  KernelContext& ctx = args.ctx();
  const IntArrayRef dims = args.int_list(1, "dim");
  *mode = args.int64(2, "normalization");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, dims.size() >= 1 && dims.size() <= self.dim, Error::InvalidArgument,
                       "argument 'dim' must list 1 to %u dims of the input, got %zu", static_cast<unsigned>(self.dim),
                       dims.size());
  PARE_CHECK_OR_RETURN(ctx, *mode >= 0 && *mode <= 2, Error::InvalidArgument,
                       "argument 'normalization' must be 0 (none), 1 (1/sqrt(n)) or 2 (1/n), got %lld",
                       static_cast<long long>(*mode));
  bool seen[kMaxDim] = {};
  out->count = dims.size();
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = 0;
    PARE_TRY(wrap_dim(ctx, dims[i], self.dim, "dim", &d));
    PARE_CHECK_OR_RETURN(ctx, !seen[d], Error::InvalidArgument, "argument 'dim': dim %lld is repeated",
                         static_cast<long long>(d));
    seen[d] = true;
    out->d[i] = static_cast<size_t>(d);
  }
  return Error::Ok;
}

// Scales every element by the normalization of a signal of `n` elements.
template <typename T>
void normalize(T* data, int64_t count, int64_t mode, double n) {
  if (mode == 0 || n == 0) return;
  const float scale = static_cast<float>(mode == 1 ? 1.0 / math::sqrt(n) : 1.0 / n);
  for (int64_t i = 0; i < count; ++i) {
    if constexpr (is_same_v<T, ComplexFloat>) {
      data[i].re *= scale;
      data[i].im *= scale;
    } else {
      data[i] *= scale;
    }
  }
}

Error check_complex_input(KernelContext& ctx, const Tensor& self) {
  PARE_CHECK_OR_RETURN(ctx, self.dtype == ScalarType::ComplexFloat, Error::UnsupportedDtype,
                       "argument 'self' must be ComplexFloat (complex64), got %s", to_string(self.dtype));
  return Error::Ok;
}

}  // namespace

// aten::_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor
Error aten__fft_r2c(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 4, 4, 1);
  const Tensor& self = args.tensor(0, "self");
  const bool onesided = args.boolean(3, "onesided");
  PARE_TRY(args.status());
  PARE_CHECK_OR_RETURN(ctx, self.dtype == ScalarType::Float, Error::UnsupportedDtype,
                       "argument 'self' must be Float for a complex64 result, got %s; Pare has no complex128, so "
                       "convert the input to float32",
                       to_string(self.dtype));
  Dims dims{};
  int64_t mode = 0;
  PARE_TRY(read_transform(args, self, &dims, &mode));
  const size_t last = dims.d[dims.count - 1];
  const int64_t n_last = self.sizes[last];
  int64_t sizes[kMaxDim];
  double signal = 1;
  for (size_t i = 0; i < self.dim; ++i) sizes[i] = self.sizes[i];
  for (size_t i = 0; i < dims.count; ++i) signal *= static_cast<double>(self.sizes[dims.d[i]]);
  if (onesided) sizes[last] = n_last / 2 + 1;
  PARE_CHECK_OR_RETURN(ctx, n_last > 0, Error::InvalidShape,
                       "the transformed dim %zu of 'self' (sizes %s) is empty; an FFT needs at least one element", last,
                       sizes_to_string(self.size_span()).text);
  PARE_TRY_ASSIGN(Tensor * out,
                  ctx.allocate_output(args.output(0), ScalarType::ComplexFloat, IntArrayRef(sizes, self.dim)));
  if (out->numel() == 0) return Error::Ok;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, self, ScalarType::Float));
  return PARE_DISPATCH(fft_r2c_kernel, ctx, ScalarType::ComplexFloat, T, {
    // The real transform along the last listed dim, into the kept bins.
    const Lines in = lines_of(self.sizes, self.dim, last);
    const int64_t bins = sizes[last];
    Fft fft;
    PARE_TRY(fft.init(ctx, n_last));
    Cd* w = fft.work();
    const float* src = x.data_as<float>();
    T* dst = out->data_as<T>();
    for (int64_t o = 0; o < in.outer; ++o) {
      for (int64_t i = 0; i < in.inner; ++i) {
        const float* line = src + o * in.len * in.inner + i;
        for (int64_t k = 0; k < in.len; ++k) w[k] = Cd{line[k * in.inner], 0};
        fft.forward();
        T* bin = dst + o * bins * in.inner + i;
        for (int64_t k = 0; k < bins; ++k) {
          bin[k * in.inner] = T{static_cast<float>(w[k].re), static_cast<float>(w[k].im)};
        }
      }
    }
    for (size_t i = 0; i + 1 < dims.count; ++i) {
      PARE_TRY(transform_along(ctx, dst, sizes, self.dim, dims.d[i], true));
    }
    normalize(dst, out->numel(), mode, signal);
    return Error::Ok;
  });
}

// aten::_fft_c2r(Tensor self, int[] dim, int normalization, SymInt last_dim_size) -> Tensor
Error aten__fft_c2r(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 4, 4, 1);
  const Tensor& self = args.tensor(0, "self");
  const int64_t last_size = args.int64(3, "last_dim_size");
  PARE_TRY(args.status());
  PARE_TRY(check_complex_input(ctx, self));
  Dims dims{};
  int64_t mode = 0;
  PARE_TRY(read_transform(args, self, &dims, &mode));
  const size_t last = dims.d[dims.count - 1];
  PARE_CHECK_OR_RETURN(ctx, last_size >= 1, Error::InvalidArgument,
                       "argument 'last_dim_size' must be at least 1, got %lld", static_cast<long long>(last_size));
  PARE_CHECK_OR_RETURN(ctx, self.sizes[last] == last_size / 2 + 1, Error::InvalidShape,
                       "dim %zu of 'self' (sizes %s) must hold last_dim_size / 2 + 1 = %lld bins for a real "
                       "signal of %lld; torch.fft.irfft pads or trims its input to that before this op",
                       last, sizes_to_string(self.size_span()).text, static_cast<long long>(last_size / 2 + 1),
                       static_cast<long long>(last_size));
  int64_t sizes[kMaxDim];
  double signal = static_cast<double>(last_size);
  for (size_t i = 0; i < self.dim; ++i) sizes[i] = self.sizes[i];
  for (size_t i = 0; i + 1 < dims.count; ++i) signal *= static_cast<double>(self.sizes[dims.d[i]]);
  sizes[last] = last_size;
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), ScalarType::Float, IntArrayRef(sizes, self.dim)));
  if (out->numel() == 0) return Error::Ok;
  return PARE_DISPATCH(fft_c2r_kernel, ctx, self.dtype, T, {
    // A contiguous copy, transformed along the complex dims in place (self
    // itself when there are none: it is only read then).
    PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, self, self.dtype));
    T* spectrum = x.data_as<T>();
    if (dims.count > 1 && x.data() == self.data()) {
      PARE_TRY_ASSIGN(void* copy, ctx.allocate_scratch(static_cast<size_t>(self.numel()) * sizeof(T)));
      spectrum = static_cast<T*>(copy);
      for (size_t i = 0; i < self.numel(); ++i) spectrum[i] = x.data_as<T>()[i];
    }
    for (size_t i = 0; i + 1 < dims.count; ++i) {
      PARE_TRY(transform_along(ctx, spectrum, self.sizes, self.dim, dims.d[i], false));
    }
    // The Hermitian half along the last dim -> real lines of last_size:
    // bin k and bin last_size - k are conjugates; the imaginary parts of
    // bin 0 (and of the Nyquist bin for even sizes) are ignored, as torch does.
    const Lines in = lines_of(self.sizes, self.dim, last);
    const int64_t half = last_size / 2 + 1;  // == in.len, checked above
    Fft fft;
    PARE_TRY(fft.init(ctx, last_size));
    Cd* w = fft.work();
    float* dst = out->data_as<float>();
    for (int64_t o = 0; o < in.outer; ++o) {
      for (int64_t i = 0; i < in.inner; ++i) {
        const T* line = spectrum + o * in.len * in.inner + i;
        for (int64_t k = 0; k < half; ++k) w[k] = Cd{line[k * in.inner].re, line[k * in.inner].im};
        w[0].im = 0;
        if (last_size % 2 == 0) w[half - 1].im = 0;
        for (int64_t k = half; k < last_size; ++k) w[k] = Cd{w[last_size - k].re, -w[last_size - k].im};
        fft.backward();
        float* row = dst + o * last_size * in.inner + i;
        for (int64_t k = 0; k < last_size; ++k) row[k * in.inner] = static_cast<float>(w[k].re);
      }
    }
    normalize(dst, out->numel(), mode, signal);
    return Error::Ok;
  });
}

// aten::_fft_c2c(Tensor self, SymInt[] dim, int normalization, bool forward) -> Tensor
Error aten__fft_c2c(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  KernelArgs args(ctx, inputs, outputs, 4, 4, 1);
  const Tensor& self = args.tensor(0, "self");
  const bool forward = args.boolean(3, "forward");
  PARE_TRY(args.status());
  PARE_TRY(check_complex_input(ctx, self));
  Dims dims{};
  int64_t mode = 0;
  PARE_TRY(read_transform(args, self, &dims, &mode));
  double signal = 1;
  for (size_t i = 0; i < dims.count; ++i) signal *= static_cast<double>(self.sizes[dims.d[i]]);
  PARE_TRY_ASSIGN(Tensor * out, ctx.allocate_output(args.output(0), self.dtype, self.size_span()));
  if (out->numel() == 0) return Error::Ok;
  return PARE_DISPATCH(fft_c2c_kernel, ctx, self.dtype, T, {
    PARE_TRY(convert_into(ctx, self, *out));
    for (size_t i = 0; i < dims.count; ++i) {
      PARE_TRY(transform_along(ctx, out->data_as<T>(), out->sizes, out->dim, dims.d[i], forward));
    }
    normalize(out->data_as<T>(), out->numel(), mode, signal);
    return Error::Ok;
  });
}

}  // namespace kernels
}  // namespace pare
