// The AVX-512 copy of the depthwise fast path's loops (depthwise.h's
// plane<K, S>: 3x3, and 5x5 and 7x7 in one loop over a size read at run
// time, at strides 1 and 2) for runtimes at --//runtime:x86_64_isa=auto,
// which run it on a CPU with AVX-512 F, BW, CD, DQ and VL (cpu::kernel_isa();
// depthwise.cc's plane_kernel()). //runtime/kernels:kernels_v4 compiles this
// file with -march=x86-64-v4; elsewhere it is empty. Each variant is kept
// under its (K, stride) tag, as the v3 copy's are: a runtime without such a
// layer never references it.
//
// What the v3 copy (depthwise_kernels.inc) does not do: 16-lane vectors
// (simd.h stays 8 lanes wide at v4), a row's last vector loaded and stored
// under a mask, so the plane depthwise.cc pads for 8 lanes is read in
// bounds; for 3x3, four output rows at a time, each input row's tap
// vectors loaded once for every output row of the block that reads it (at
// stride 1, 18 loads for 36 multiply-adds rather than 36) and the four
// rows' sums four chains in flight; and at stride 2, plain rows
// (depthwise.cc copies them as they are, a memcpy, rather than
// deinterleaved), the even and odd columns picked out of two vectors by a
// shuffle. Every output still sums its taps in the generic loop's order
// (bias, then ky, kx; fused as the v3 copy's are), so both copies give the
// same bits.
#if defined(PARE_X86_64_DISPATCH) && defined(__AVX512F__)

#include "runtime/kernels/common/depthwise.h"

namespace pare {
namespace depthwise {
namespace x86_64_v4 {
namespace {

typedef float v16 __attribute__((vector_size(16 * sizeof(float))));
typedef unsigned short mask16;  // an AVX-512 opmask of 16 lanes (immintrin.h's mask16)

// Output rows per block of the 3x3 loops' main loop. 5x5 and 7x7 go a row
// at a time, as the v3 copy does (the out-of-order core overlaps the next
// vector's chain): their blocks of four rows, unrolled, were 26 KB of code
// for every runtime with such a layer.
constexpr int kRows = 4;

PARE_ALWAYS_INLINE v16 splat16(float x) { return v16{} + x; }

// The 16 floats at p whose lanes are set in `mask` (the others 0): a
// masked load, which reads nothing past the lanes it keeps.
PARE_ALWAYS_INLINE v16 load(const float* p, uint64_t mask) {
  return __builtin_ia32_loadups512_mask(p, v16{}, static_cast<mask16>(mask));
}

// Lanes 0, 2, ..., 30 (kFirst 0) or 1, 3, ..., 31 (kFirst 1) of a then b.
template <int kFirst>
PARE_ALWAYS_INLINE v16 alternate(v16 a, v16 b) {
  return __builtin_shufflevector(a, b, kFirst, kFirst + 2, kFirst + 4, kFirst + 6, kFirst + 8, kFirst + 10, kFirst + 12,
                                 kFirst + 14, kFirst + 16, kFirst + 18, kFirst + 20, kFirst + 22, kFirst + 24,
                                 kFirst + 26, kFirst + 28, kFirst + 30);
}

// R output rows from `o` (out_w apart), columns [ox, ox + n) (n <= 16), of a
// K x K kernel at stride S whose first input row is `top` (plain rows, at
// stride 2 too). w[ky * K + kx]: tap (ky, kx)'s weight, a vector (3x3: held
// in registers) or a float (5x5, 7x7: broadcast from memory by the
// multiply-add).
template <int R, int S, int K, typename W>
PARE_ALWAYS_INLINE void block(const float* top, int64_t padded_w, W w, v16 b, v16 lo, v16 hi, float* o, int64_t out_w,
                              int64_t ox, int64_t n) {
  // The input floats from column S * ox on that the n outputs read: bit i
  // of `need` for column S * ox + i ((n - 1) * S + K of them).
  const uint64_t need = (uint64_t{1} << ((n - 1) * S + K)) - 1;
  v16 acc[R];
#pragma clang loop unroll(full)
  for (int r = 0; r < R; ++r)
    acc[r] = b;  // a -0.0 bias stays -0.0, as in the generic loop
                 // Input rows in order, so that each output row meets its ky in order.
#pragma clang loop unroll(full)
  for (int iy = 0; iy < (R - 1) * S + K; ++iy) {
    const float* row = top + iy * padded_w + S * ox;
    v16 x[K];
    if constexpr (S == 1) {
#pragma clang loop unroll(full)
      for (int kx = 0; kx < K; ++kx) x[kx] = load(row + kx, need >> kx);
    } else {
      // Tap kx of output j reads column 2j + kx: the even lanes of the 32
      // floats from column kx (kx even), the odd ones of those from column
      // kx - 1 (kx odd).
#pragma clang loop unroll(full)
      for (int kx = 0; kx < K; kx += 2) {
        const v16 lo16 = load(row + kx, need >> kx);
        const v16 hi16 = load(row + kx + 16, need >> (kx + 16));
        x[kx] = alternate<0>(lo16, hi16);
        if (kx + 1 < K) x[kx + 1] = alternate<1>(lo16, hi16);
      }
    }
#pragma clang loop unroll(full)
    for (int r = 0; r < R; ++r) {
      const int ky = iy - r * S;
      if (ky < 0 || ky >= K) continue;
#pragma clang loop unroll(full)
      for (int kx = 0; kx < K; ++kx) acc[r] += w[ky * K + kx] * x[kx];
    }
  }
  const mask16 store_mask = static_cast<mask16>((uint32_t{1} << n) - 1);
#pragma clang loop unroll(full)
  for (int r = 0; r < R; ++r) {
    v16 v = acc[r] < lo ? lo : acc[r];  // simd::clamp: NaN stays NaN
    v = v > hi ? hi : v;
    __builtin_ia32_storeups512_mask(o + r * out_w + ox, v, store_mask);
  }
}

// Output rows [oy, oy + R) of the plane, every column, each vector through
// the masked code (whole vectors too: one copy of the block per height; a
// separate unmasked copy cost the demo's runtime 1 KB and no speed).
template <int R, int S, int K, typename W>
PARE_ALWAYS_INLINE void rows(const float* padded, int64_t padded_w, W w, v16 b, v16 lo, v16 hi, float* out,
                             int64_t out_w, int64_t oy) {
  const float* top = padded + oy * S * padded_w;
  float* o = out + oy * out_w;
  for (int64_t ox = 0; ox < out_w; ox += 16) {
    block<R, S, K>(top, padded_w, w, b, lo, hi, o, out_w, ox, out_w - ox < 16 ? out_w - ox : 16);
  }
}

template <int S, int K, typename W>
PARE_ALWAYS_INLINE void all_rows(const float* padded, int64_t padded_w, W w, float b, float lo, float hi, float* out,
                                 int64_t out_h, int64_t out_w) {
  const v16 bv = splat16(b);
  const v16 lov = splat16(lo);
  const v16 hiv = splat16(hi);
  int64_t oy = 0;
  if constexpr (K == 3) {
    for (; oy + kRows <= out_h; oy += kRows) rows<kRows, S, K>(padded, padded_w, w, bv, lov, hiv, out, out_w, oy);
  }
  for (; oy < out_h; ++oy) rows<1, S, K>(padded, padded_w, w, bv, lov, hiv, out, out_w, oy);
}

}  // namespace

// K = 3: the 3x3 loop; K = 0: 5x5 or 7x7, the size k read at run time.
template <int K, int S>
void plane(const float* padded, int64_t padded_w, const float* PARE_RESTRICT wk, int64_t k, float b, float lo, float hi,
           float* out, int64_t out_h, int64_t out_w) {
  if constexpr (K == 3) {
    v16 w[9];
    for (int t = 0; t < 9; ++t) w[t] = splat16(wk[t]);
    all_rows<S, 3>(padded, padded_w, static_cast<const v16*>(w), b, lo, hi, out, out_h, out_w);
  } else if (k == 5) {
    all_rows<S, 5>(padded, padded_w, wk, b, lo, hi, out, out_h, out_w);
  } else {
    all_rows<S, 7>(padded, padded_w, wk, b, lo, hi, out, out_h, out_w);
  }
}

template void plane<3, 1>(const float*, int64_t, const float*, int64_t, float, float, float, float*, int64_t, int64_t);
template void plane<3, 2>(const float*, int64_t, const float*, int64_t, float, float, float, float*, int64_t, int64_t);
template void plane<0, 1>(const float*, int64_t, const float*, int64_t, float, float, float, float*, int64_t, int64_t);
template void plane<0, 2>(const float*, int64_t, const float*, int64_t, float, float, float, float*, int64_t, int64_t);

}  // namespace x86_64_v4
}  // namespace depthwise
}  // namespace pare

#endif
