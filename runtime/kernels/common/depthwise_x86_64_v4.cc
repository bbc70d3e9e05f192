// The AVX-512 copy of the depthwise fast path's 3x3 loops (depthwise.h's
// plane<3, 1> and plane<3, 2>) for runtimes at --//runtime:x86_64_isa=auto,
// which run it on a CPU with AVX-512 F, BW, CD, DQ and VL (cpu::kernel_isa();
// depthwise.cc's plane_kernel()). //runtime/kernels:kernels_v4 compiles this
// file with -march=x86-64-v4; elsewhere it is empty. It is kept under the
// 3x3 variants' tags, as the v3 copy is: a runtime without a 3x3 layer
// never references it.
//
// What the v3 copy (depthwise_kernels.inc) does not do: 16-lane vectors
// (simd.h stays 8 lanes wide at v4), a row's last vector loaded and stored
// under a mask, so the plane depthwise.cc pads for 8 lanes is read in
// bounds; four output rows at a time, each input row's tap vectors loaded
// once for every output row of the block that reads it (at stride 1, 18
// loads for 36 multiply-adds rather than 36) and the four rows' sums four
// chains in flight; and at stride 2, plain rows (depthwise.cc copies them
// as they are, a memcpy, rather than deinterleaved), the even and odd
// columns picked out of two vectors by a shuffle. Every output still sums
// its taps in the generic loop's order (bias, then ky, kx; fused as the v3
// copy's are), so both copies give the same bits.
#if defined(PARE_X86_64_DISPATCH) && defined(__AVX512F__)

#include "runtime/kernels/common/depthwise.h"

namespace pare {
namespace depthwise {
namespace x86_64_v4 {
namespace {

typedef float v16 __attribute__((vector_size(16 * sizeof(float))));
typedef unsigned short mask16;  // an AVX-512 opmask of 16 lanes (immintrin.h's mask16)

// Output rows per block of plane's main loop.
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
// 3x3 kernel at stride S whose first input row is `top` (plain rows, at
// stride 2 too).
template <int R, int S>
PARE_ALWAYS_INLINE void block(const float* top, int64_t padded_w, const v16 (&w)[9], v16 b, v16 lo, v16 hi, float* o,
                              int64_t out_w, int64_t ox, int64_t n) {
  // The input floats from column S * ox on that the n outputs read: bit i
  // of `need` for column S * ox + i (n + 2 at stride 1, 2n + 1 at 2).
  const uint64_t need = (uint64_t{1} << ((n - 1) * S + 3)) - 1;
  v16 acc[R];
#pragma clang loop unroll(full)
  for (int r = 0; r < R; ++r) acc[r] = b;  // a -0.0 bias stays -0.0, as in the generic loop
    // Input rows in order, so that each output row meets its ky in order.
#pragma clang loop unroll(full)
  for (int iy = 0; iy < (R - 1) * S + 3; ++iy) {
    const float* row = top + iy * padded_w + S * ox;
    v16 x[3];
    if constexpr (S == 1) {
#pragma clang loop unroll(full)
      for (int kx = 0; kx < 3; ++kx) x[kx] = load(row + kx, need >> kx);
    } else {
      // Tap kx of output j reads column 2j + kx: the even lanes of the 32
      // floats from column 0 (kx 0) or 2 (kx 2), the odd ones from 0 (kx 1).
      const v16 a = load(row, need);
      const v16 a2 = load(row + 16, need >> 16);
      const v16 c = load(row + 2, need >> 2);
      const v16 c2 = load(row + 18, need >> 18);
      x[0] = alternate<0>(a, a2);
      x[1] = alternate<1>(a, a2);
      x[2] = alternate<0>(c, c2);
    }
#pragma clang loop unroll(full)
    for (int r = 0; r < R; ++r) {
      const int ky = iy - r * S;
      if (ky < 0 || ky >= 3) continue;
#pragma clang loop unroll(full)
      for (int kx = 0; kx < 3; ++kx) acc[r] += w[ky * 3 + kx] * x[kx];
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

// Output rows [oy, oy + R) of the plane, every column.
template <int R, int S>
PARE_ALWAYS_INLINE void rows(const float* padded, int64_t padded_w, const v16 (&w)[9], v16 b, v16 lo, v16 hi,
                             float* out, int64_t out_w, int64_t oy) {
  const float* top = padded + oy * S * padded_w;
  float* o = out + oy * out_w;
  int64_t ox = 0;
  for (; ox + 16 <= out_w; ox += 16) block<R, S>(top, padded_w, w, b, lo, hi, o, out_w, ox, 16);
  if (ox < out_w) block<R, S>(top, padded_w, w, b, lo, hi, o, out_w, ox, out_w - ox);
}

}  // namespace

template <int K, int S>
void plane(const float* padded, int64_t padded_w, const float* PARE_RESTRICT wk, int64_t, float b, float lo, float hi,
           float* out, int64_t out_h, int64_t out_w) {
  static_assert(K == 3, "the AVX-512 copy has the 3x3 loops only; 5x5 and 7x7 run the v3 copy's");
  v16 w[9];
  for (int t = 0; t < 9; ++t) w[t] = splat16(wk[t]);
  const v16 bv = splat16(b);
  const v16 lov = splat16(lo);
  const v16 hiv = splat16(hi);
  int64_t oy = 0;
  for (; oy + kRows <= out_h; oy += kRows) rows<kRows, S>(padded, padded_w, w, bv, lov, hiv, out, out_w, oy);
  for (; oy < out_h; ++oy) rows<1, S>(padded, padded_w, w, bv, lov, hiv, out, out_w, oy);
}

template void plane<3, 1>(const float*, int64_t, const float*, int64_t, float, float, float, float*, int64_t, int64_t);
template void plane<3, 2>(const float*, int64_t, const float*, int64_t, float, float, float, float*, int64_t, int64_t);

}  // namespace x86_64_v4
}  // namespace depthwise
}  // namespace pare

#endif
