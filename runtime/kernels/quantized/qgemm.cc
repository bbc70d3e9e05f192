// The int8 GEMM (qgemm.h): this build's copy of its kernels
// (qgemm_kernels.inc, qgemm_dynamic_kernels.inc) and the choice between
// the copies.
//
// Build feature threads: the callers split the work (qconv.cc: output
// channels at whole blocks of the packed weights, columns_channel_block,
// or gemm_image's pixels at whole tiles; qlinear.cc: rows); every output
// is one chunk's, so the bits do not depend on the split.

#include "runtime/kernels/quantized/qgemm.h"

#include "runtime/core/cpu.h"
// arm64's micro-kernels of gemm_rows and gemm_columns (NEON, SDOT) and its
// depthwise plane (NEON); empty elsewhere.
#include "runtime/kernels/quantized/qgemm_arm64.inc"

// This build's copy of the kernels (ISA PARE_SIMD_ISA).
#include "runtime/kernels/quantized/qgemm_kernels.inc"
// pare::qlinear_dynamic's kernels, after qgemm_kernels.inc (they use its round_half_even).
#include "runtime/kernels/quantized/qgemm_dynamic_kernels.inc"

namespace pare {
namespace kernels {
namespace qgemm {

// x86_64: at --//runtime:x86_64_isa=auto the x86-64-v3 copy on a CPU with
// AVX2 and FMA (common/kernels_x86_64_v3.cc), elsewhere the build's own.
#if defined(PARE_X86_64_DISPATCH)
// Whether the AVX-512 VNNI copies run: the one test every VNNI dispatch
// below (and columns_packing, which layers record) makes.
inline bool vnni_runs() { return cpu::kernel_isa() >= cpu::Isa::x86_64_v4 && cpu::x86_64_vnni(); }
#define PARE_QGEMM_X86_64_V3(call) \
  if (cpu::kernel_isa() >= cpu::Isa::x86_64_v3) return x86_64_v3::call
#define PARE_QGEMM_VNNI(call) \
  if (vnni_runs()) return x86_64_v4::call
#else
#define PARE_QGEMM_X86_64_V3(call)
#define PARE_QGEMM_VNNI(call)
#endif

void gemm_rows(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const int8_t* x, const Requantization& rq,
               const Output& out) {
#if defined(__aarch64__)
  // arm64: qgemm_arm64.inc's tiles, SDOT where the CPU has it; the shared
  // epilogue (qgemm_kernels.inc's store_tile).
  const auto store = [&](const auto& acc, int64_t c0, int64_t p0, int nr) {
    PARE_SIMD_ISA::store_tile(acc, c0, p0, static_cast<int>(sizeof(acc) / sizeof(acc[0])), nr, rq, out);
  };
  arm64::gemm_rows(channels, pixels, k, w, x, store);
  return;
#endif
  PARE_QGEMM_VNNI(gemm_rows_vnni(channels, pixels, k, w, x, rq, out));
  PARE_QGEMM_X86_64_V3(gemm_rows(channels, pixels, k, w, x, rq, out));
  PARE_SIMD_ISA::gemm_rows(channels, pixels, k, w, x, rq, out);
}

void gemm_dynamic(int64_t rows, int64_t channels, int64_t k, const uint8_t* u, const int8_t* w,
                  const DynamicEpilogue& e, float* out) {
#if defined(__aarch64__)
  // arm64: qgemm_arm64_dynamic.inc's tiles (SDOT where the CPU has it),
  // sums of the input's signed bytes; the shared epilogue.
  const auto store = [&](const int32_t* acc, int64_t r, int64_t c0, int nc) {
    PARE_SIMD_ISA::dynamic_store(acc, c0, nc, e, 0, out + r * channels);
  };
  arm64::gemm_dynamic(rows, channels, k, u, w, store);
  return;
#endif
  PARE_QGEMM_VNNI(gemm_dynamic_vnni(rows, channels, k, u, w, e, out));
  PARE_QGEMM_X86_64_V3(gemm_dynamic(rows, channels, k, u, w, e, out));
  PARE_SIMD_ISA::gemm_dynamic(rows, channels, k, u, w, e, out);
}

Range dynamic_range(const float* x, int64_t n) {
#if defined(PARE_X86_64_DISPATCH)
  if (vnni_runs()) return x86_64_v4::dynamic_range_v4(x, n);
#endif
  PARE_QGEMM_X86_64_V3(dynamic_range(x, n));
  return PARE_SIMD_ISA::dynamic_range(x, n);
}

void quantize_dynamic(const float* x, int64_t rows, int64_t k, float inv_scale, float zero_point, float qmin,
                      float qmax, uint8_t* u) {
#if defined(PARE_X86_64_DISPATCH)
  if (vnni_runs()) {
    x86_64_v4::quantize_dynamic_v4(x, rows, k, inv_scale, zero_point, qmin, qmax, u);
    return;
  }
#endif
  PARE_QGEMM_X86_64_V3(quantize_dynamic(x, rows, k, inv_scale, zero_point, qmin, qmax, u));
  PARE_SIMD_ISA::quantize_dynamic(x, rows, k, inv_scale, zero_point, qmin, qmax, u);
}

int64_t columns_packed_bytes(int64_t channels, int64_t k) {
#if defined(__aarch64__)
  return arm64::packed_quads_bytes(channels, k);
#endif
  PARE_QGEMM_VNNI(columns_packed_bytes_vnni(channels, k));
  PARE_QGEMM_X86_64_V3(columns_packed_bytes(channels, k));
  return PARE_SIMD_ISA::columns_packed_bytes(channels, k);
}

void pack_columns(int64_t channels, int64_t k, const int8_t* w, void* packed) {
#if defined(__aarch64__)
  arm64::pack_quads(channels, k, w, packed);
  return;
#endif
  PARE_QGEMM_VNNI(pack_columns_vnni(channels, k, w, packed));
  PARE_QGEMM_X86_64_V3(pack_columns(channels, k, w, packed));
  PARE_SIMD_ISA::pack_columns(channels, k, w, packed);
}

int columns_packing() {
#if defined(PARE_X86_64_DISPATCH)
  if (vnni_runs()) return 2;
  if (cpu::kernel_isa() >= cpu::Isa::x86_64_v3) return 1;
  return 0;
#elif defined(__aarch64__)
  return 2;  // both arm64 copies read the VNNI copy's quads
#elif defined(__AVX2__)
  return 1;
#else
  return 0;
#endif
}

int64_t columns_channel_block() {
  switch (columns_packing()) {
    case 2: return kQuadsChannelBlock;
    case 1: return kPairsChannelBlock;
    default: return kPortableChannelBlock;
  }
}

void gemm_columns(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const void* packed, const int8_t* x,
                  const Requantization& rq, const Output& out, void* scratch) {
#if defined(__aarch64__)
  // arm64: qgemm_arm64.inc's 8x12 tiles (SDOT where the CPU has it), the
  // shared epilogue.
  const auto store = [&](const auto& sums, int64_t c0, int64_t p0, int mr, int nr) {
    PARE_SIMD_ISA::store_tile(sums, c0, p0, mr, nr, rq, out);
  };
  arm64::gemm_columns(channels, pixels, k, w, packed, x, scratch, store);
  return;
#endif
  PARE_QGEMM_VNNI(gemm_columns_vnni(channels, pixels, k, w, packed, x, rq, out, scratch));
  PARE_QGEMM_X86_64_V3(gemm_columns(channels, pixels, k, w, packed, x, rq, out, scratch));
  PARE_SIMD_ISA::gemm_columns(channels, pixels, k, w, packed, x, rq, out, scratch);
}

#if defined(PARE_X86_64_DISPATCH)
bool image_gemm_runs(const ImageColumns& x) { return vnni_runs() && x86_64_v4::gemm_image_vnni_runs(x); }

int64_t image_padded_bytes(const ImageColumns& x, int64_t k) {
  int64_t plane = 0, bytes = 0;
  if ((x.sw != 1 && x.sw != 2) || x.out_w < 16 ||
      __builtin_mul_overflow(x.height + 2 * x.ph, x.width + 2 * x.pw, &plane) ||
      __builtin_mul_overflow(k / (x.kh * x.kw), plane, &bytes) || __builtin_add_overflow(bytes, int64_t{64}, &bytes)) {
    return 0;
  }
  return bytes;
}

void gemm_image(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const void* packed, const ImageColumns& x,
                const Requantization& rq, const Output& out, void* scratch) {
  x86_64_v4::gemm_image_vnni(channels, pixels, k, w, packed, x, rq, out, scratch);
}

void pad_image(const ImageColumns& x, int64_t k) { x86_64_v4::pad_image_vnni(x, k); }
#endif

void requantize_channel(const int32_t* acc, int64_t n, int32_t correction, float multiplier, float offset,
                        int32_t output_min, int32_t output_max, int8_t* out) {
  PARE_QGEMM_X86_64_V3(requantize_channel(acc, n, correction, multiplier, offset, output_min, output_max, out));
  PARE_SIMD_ISA::requantize_channel(acc, n, correction, multiplier, offset, output_min, output_max, out);
}

void depthwise_plane(const DepthwisePlane& d, const int8_t* plane, const int8_t* filter, int32_t correction,
                     float multiplier, float offset, int32_t output_min, int32_t output_max, int32_t* acc,
                     int8_t* out) {
#if defined(__aarch64__)
  // arm64: qgemm_arm64_depthwise.inc's NEON rows (one copy, ARMv8.0).
  if (arm64::depthwise_plane_runs(d)) {
    arm64::depthwise_plane(d, plane, filter, correction, multiplier, offset, output_min, output_max, out);
    return;
  }
#endif
#if defined(PARE_X86_64_DISPATCH)
  if (vnni_runs() && x86_64_v4::depthwise_plane_vnni_runs(d)) {
    x86_64_v4::depthwise_plane_vnni(d, plane, filter, correction, multiplier, offset, output_min, output_max, out);
    return;
  }
#endif
  PARE_QGEMM_X86_64_V3(
      depthwise_plane(d, plane, filter, correction, multiplier, offset, output_min, output_max, acc, out));
  PARE_SIMD_ISA::depthwise_plane(d, plane, filter, correction, multiplier, offset, output_min, output_max, acc, out);
}

#if defined(PARE_X86_64_DISPATCH)
// VNNI's copy where it runs, else (AVX2) the x86-64-v3 one; the three
// functions make the same choice.
bool depthwise_channels_runs(const DepthwisePlane& d) {
  if (vnni_runs()) return x86_64_v4::depthwise_channels_vnni_runs(d);
  return cpu::kernel_isa() >= cpu::Isa::x86_64_v3 && x86_64_v3::depthwise_channels_avx2_runs(d);
}

int64_t depthwise_channels_bytes(const DepthwisePlane& d) {
  if (vnni_runs()) return x86_64_v4::depthwise_channels_vnni_bytes(d);
  return x86_64_v3::depthwise_channels_avx2_bytes(d);
}

void depthwise_channels(const DepthwisePlane& d, int64_t channels, const int8_t* x, const int8_t* w, const void* packed,
                        const Requantization& rq, int8_t* out) {
  if (vnni_runs()) {
    x86_64_v4::depthwise_channels_vnni(d, channels, x, w, packed, rq.correction, rq.multiplier, rq.offset,
                                       rq.output_min, rq.output_max, out);
    return;
  }
  x86_64_v3::depthwise_channels_avx2(d, channels, x, w, rq, out);
}

// A filter too deep for the VNNI copy (more than its kMaxChannelQuads)
// never runs across channels there: no packing.
int64_t depthwise_channels_packed_bytes(int64_t channels, int64_t kh, int64_t kw) {
  if (!vnni_runs()) return 0;
  const DepthwisePlane d{1, 1, kh, kw, 1, 1, 0, 0, 1, 1, 1, 1, nullptr, nullptr, 0, nullptr};
  return x86_64_v4::depthwise_channels_vnni_runs(d) ? (channels + 15) / 16 * depthwise_channels_block_bytes(kh, kw) : 0;
}

void pack_depthwise_channels(int64_t channels, int64_t kh, int64_t kw, const int8_t* w, void* packed) {
  x86_64_v4::pack_depthwise_channels_vnni(channels, kh, kw, w, packed);
}
#endif

#undef PARE_QGEMM_X86_64_V3
#undef PARE_QGEMM_VNNI

}  // namespace qgemm
}  // namespace kernels
}  // namespace pare
