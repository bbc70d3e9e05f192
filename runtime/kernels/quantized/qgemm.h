#pragma once
// The int8 x int8 -> int32 GEMM of the int8 layers (pare::qconv2d_prepacked,
// pare::qlinear_prepacked) and their requantizing epilogue
// (pare/quantized_packing.py has the formulas):
//
//   acc[c, p] = sum_k w[c, k] * x[p, k] + correction[c]               (int32)
//   out[c, p] = clamp(round_half_even(float(acc) * multiplier[c] + offset[c]),
//                     output_min, output_max)                          (int8)
//
// The kernels are qgemm_kernels.inc, compiled once per ISA (this build's,
// and at --//runtime:x86_64_isa=auto the x86-64-v3 copy with its AVX2
// micro-kernel), chosen per call by qgemm.cc (cpu::kernel_isa()). The float
// product is rounded before the addition on every ISA (floating-point
// contraction off), so every machine gives the same bits.
//
// Callers guarantee k <= kMaxDepth: then |sum_k w x| <= 2^30, and the
// exporter's |correction| = |zx sum_k w| <= 2^30 too, so int32 never
// overflows.

#include "runtime/core/compiler.h"
#include "runtime/kernels/common/simd.h"
#include <stddef.h>
#include <stdint.h>

namespace pare {
namespace kernels {
namespace qgemm {

// The deepest reduction the int8 layers take (see above).
constexpr int64_t kMaxDepth = int64_t{1} << 16;

// Per output channel requantization (each array has one entry per output
// channel of the product, already offset to its first) and the output
// range, both within [-128, 127].
struct Requantization {
  const int32_t* correction;
  const float* multiplier;
  const float* offset;
  int32_t output_min;
  int32_t output_max;
  // The requantization of channels [c0, ...) (a split's part).
  Requantization from(int64_t c0) const {
    return {correction + c0, multiplier + c0, offset + c0, output_min, output_max};
  }
};

// Where out[c, p] goes: out + c * channel_stride + p * pixel_stride (a
// convolution's output plane [channels, pixels]: channel_stride = pixels,
// pixel_stride = 1; a linear layer's rows [pixels, channels]: 1 and
// channels). gemm_columns and gemm_image write planes (pixel_stride 1),
// gemm_rows rows (channel_stride 1): the VNNI copies store 16 outputs
// along that stride at a time.
struct Output {
  int8_t* data;
  int64_t channel_stride;
  int64_t pixel_stride;
};

// w [channels, k] and x [pixels, k], both rows contiguous (row strides k):
// every output is a dot product of two contiguous int8 rows.
void gemm_rows(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const int8_t* x, const Requantization& rq,
               const Output& out);

// pare::qlinear_dynamic's product (qlinear_dynamic.cc), float out:
//
//   out[r, c] = float(sum_k u[r, k] w[c, k] - (128 + zero_point) sums[c]) * multiplier[c] (+ bias[c])
//
// u [rows, k] is the input quantized to int8 by quantize_dynamic, stored +
// 128 as unsigned bytes (q ^ 0x80: VNNI's unsigned-by-signed vpdpbusd
// reads it as it is; sums[c] = sum_k w[c, k] takes the 128 back out), rows
// dynamic_row_bytes(k) apart. w is the int8 weight [channels, k] packed at
// export (pare/quantized_packing.py, pack_dynamic_weight) in the layout
// every copy reads: per block of kDynamicBlock output channels, per quad
// of 4 reductions, each channel's 4 weights in 4 bytes (0 past k or the
// last channel). The int32 sums are exact (|u w| <= 255 * 128, k <=
// kMaxDepth: under 2^31); the correction wraps in uint32, and the true
// value fits. Float operations in a fixed order, no contraction: every
// copy gives the same bits.
constexpr int64_t kDynamicBlock = 16;
PARE_ALWAYS_INLINE int64_t dynamic_row_bytes(int64_t k) { return (k + 3) / 4 * 4; }
struct DynamicEpilogue {
  const int32_t* sums;
  const float* multiplier;
  const float* bias;  // or nullptr
  int32_t zero_point;
};
void gemm_dynamic(int64_t rows, int64_t channels, int64_t k, const uint8_t* u, const int8_t* w,
                  const DynamicEpilogue& e, float* out);
// The smallest and largest of x[0, n) (n > 0) and whether one is NaN (then
// lo and hi are meaningless): choose_qparams.tensor's torch.aminmax.
struct Range {
  float lo, hi;
  bool nan;
};
Range dynamic_range(const float* x, int64_t n);
// u[r, i] = q ^ 0x80 for q = quantize_per_tensor's int8 of x[r, i] (x
// [rows, k] contiguous): clamp(round_half_even(x inv_scale) + zero_point,
// qmin, qmax), NaN to 0; each row's bytes past k up to
// dynamic_row_bytes(k) 0x80 (q = 0).
void quantize_dynamic(const float* x, int64_t rows, int64_t k, float inv_scale, float zero_point, float qmin,
                      float qmax, uint8_t* u);

// The most output channels a gemm_columns tile of any copy packs, its
// pixels, and the most bytes of x a panel of its tiles packs (the AVX2
// copy's int16 pairs: 2 bytes per int8).
constexpr int64_t kColumnsScratchChannels = 8;
constexpr int64_t kColumnsTilePixels = 16;
constexpr int64_t kPanelBytes = int64_t{128} << 10;

// The scratch bytes gemm_columns needs for `channels` at depth k (k <=
// kMaxDepth): the weights' packed pairs, 4 bytes per 2 weights of every
// channel block; the columns of under 16 pixels zero-padded to 16; a panel
// of packed tiles of x (at most kPanelBytes or one tile) and a tail tile,
// 32-byte aligned.
// The VNNI copy (qgemm_vnni.cc): its packed weights, 4 bytes per 4 weights
// and 4 per channel, and a panel of at most kPanelBytes or one tile of 48
// pixels x 4 bytes per 4 reductions, 64-byte aligned.
constexpr int64_t columns_scratch_bytes(int64_t channels, int64_t k) {
  const int64_t pairs = (channels + kColumnsScratchChannels) * ((k + 1) / 2) * 4 + (k + 1) * kColumnsTilePixels +
                        kPanelBytes + 2 * (k + 1) * kColumnsTilePixels * 2 + 64;
  const int64_t quads =
      (channels + kColumnsScratchChannels) * ((k + 3) / 4 + 1) * 4 + kPanelBytes + (k + 3) / 4 * 192 + 64;
  return pairs > quads ? pairs : quads;
}

// The bytes of w [channels, k] in the layout gemm_columns' copy for this
// machine reads (the AVX2 copy's int16 pairs), 0 when that copy reads w as
// it is. A layer packs its weights once (pack_columns, at init) and passes
// them to every call.
int64_t columns_packed_bytes(int64_t channels, int64_t k);
// Packs w [channels, k] into `packed` (columns_packed_bytes(channels, k)
// bytes, 4-byte aligned; nothing when that is 0).
void pack_columns(int64_t channels, int64_t k, const int8_t* w, void* packed);
// Which layout pack_columns writes on this machine now: 0 none (w as it
// is), 1 the AVX2 copy's int16 pairs, 2 the VNNI copy's quads. A layer
// keeps the one it packed at init and passes its packed weights only to a
// copy that reads that layout (an ISA cap can change the copy).
int columns_packing();
// The output channels per block of each packed layout (qgemm_quads.inc's
// and qgemm_kernels.inc's kMR assert them), and of the portable tile that
// reads w as it is.
constexpr int64_t kQuadsChannelBlock = 8;
constexpr int64_t kPairsChannelBlock = 6;
constexpr int64_t kPortableChannelBlock = 4;
// The channel block of the copy gemm_columns runs on this machine now
// (columns_packing()'s layout). A split of a layer's output channels at
// multiples of it (qconv.cc's threads) finds the part from channel c0 of
// the layer's packed weights columns_packed_bytes(c0, k) bytes in.
int64_t columns_channel_block();

// w [channels, k] and x [k, pixels] (row stride `pixels`): a 1x1,
// stride-1, unpadded convolution's image as it is in NCHW, no im2col, or
// qconv.cc's channel-major im2col; vectorised across pixels. `packed`:
// pack_columns' copy of w, or nullptr (the AVX2 copy then packs w into
// scratch on every call; the others read w as it is, and ignore `packed`,
// so a cap of the ISA between init and a call stays correct). `scratch`:
// columns_scratch_bytes(channels, k) bytes, 4-byte aligned (the VNNI
// copy's tile over output channels also keeps its channels-last results
// there, and runs only where they fit: qgemm_vnni.cc's channel_tiles_run).
void gemm_columns(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const void* packed, const int8_t* x,
                  const Requantization& rq, const Output& out, void* scratch);

// The im2col matrix of one (image, group) of a convolution, read straight
// from the image (qconv.cc): row (c, ky, kx) at output pixel oy out_w + ox
// is image[c, oy sh - ph + ky dh, ox sw - pw + kx dw], the zero point
// outside the image; lo[kx], hi[kx] (kw entries each): the outputs of a row
// whose tap kx is inside it (conv::valid_range).
struct ImageColumns {
  const int8_t* image;  // [cg, height, width]
  int64_t height, width, kh, kw, sh, sw, ph, pw, dh, dw, out_w;
  const int64_t* lo;
  const int64_t* hi;
  int8_t zero_point;
  // image_padded_bytes(x, k) bytes of scratch holding the image laid out
  // with its padding (the zero point) by pad_image, which gemm_image packs
  // from; nullptr where that is 0 (the tiles are packed from the image).
  int8_t* padded = nullptr;
  // The output pixel (oy out_w + ox) a gemm_image call's pixel 0 is: a
  // split of the pixels over threads runs [first_pixel, first_pixel +
  // pixels), out pointing at first_pixel's outputs.
  int64_t first_pixel = 0;
};
// The pixels of gemm_image's tile (the VNNI copy's 3 vectors of 16): a
// split of its pixels at multiples of it packs no tile twice.
constexpr int64_t kImageTilePixels = 48;

#if defined(PARE_X86_64_DISPATCH)
// Whether gemm_image runs on this machine now for x's layer (the VNNI copy,
// at stride 1 or 2 across); else the caller writes the im2col matrix and
// calls gemm_columns. (x86_64 at --//runtime:x86_64_isa=auto only.)
bool image_gemm_runs(const ImageColumns& x);
// The scratch gemm_image wants for x's padded copy (ImageColumns::padded)
// at a reduction of k = channels kh kw: at stride 1 or 2 across with
// outputs 16 or more wide (a 16-pixel vector in one or two output rows),
// channels (height + 2 ph) x (width + 2 pw) bytes and 64 for the tiles'
// loads past the last row; else (or should that overflow) 0, and the tiles
// are packed from the image in place, each tap's masked loads planned per
// tile (on narrower outputs every vector spans several rows either way,
// and the copy did not pay: ResNet-18's 14x14 and 7x7 layers 2-6% slower).
int64_t image_padded_bytes(const ImageColumns& x, int64_t k);
// gemm_columns on x's im2col matrix without writing it: the tiles of x are
// packed from the image (the same sums, the same bits). Only where
// image_gemm_runs(x).
void gemm_image(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const void* packed, const ImageColumns& x,
                const Requantization& rq, const Output& out, void* scratch);
// x's image laid out with its padding into x.padded (image_padded_bytes(x,
// k) bytes, not 0): once per image and group, before the gemm_image calls
// that read it (qconv.cc's threads share it).
void pad_image(const ImageColumns& x, int64_t k);
#endif

// out[i * out_stride] = requantized acc[i] + correction, for n values of one
// output channel (the depthwise kernel's rows).
void requantize_channel(const int32_t* acc, int64_t n, int32_t correction, float multiplier, float offset,
                        int32_t output_min, int32_t output_max, int8_t* out);

// One output plane of an int8 depthwise convolution (qconv.cc): an input
// plane [height, width] with a kh x kw filter, strides, padding and
// dilation; lo[kx], hi[kx] (kw entries each) the outputs of a row whose
// tap kx is inside the image (conv::valid_range). Padding reads as the
// zero point. `acc`: out_w int32 of scratch; `padded`:
// depthwise_padded_bytes() of scratch, where a copy may lay the plane out
// inside a zero-point border.
struct DepthwisePlane {
  int64_t height, width, kh, kw, sh, sw, ph, pw, dh, dw, out_h, out_w;
  const int64_t* lo;
  const int64_t* hi;
  int32_t zero_point;
  int8_t* padded;
};

// The padded plane's row width and bytes (a row's slack covers a tile's
// reads past the last output; one more row covers the last row's).
constexpr int64_t depthwise_padded_width(int64_t width, int64_t pw) { return width + 2 * pw + 48; }
// The VNNI copy (qgemm_vnni_depthwise.cc) lays the plane out in rows width + 2 pw
// apart, then 128 bytes of slack and the outputs of every padded column.
constexpr int64_t depthwise_padded_bytes(int64_t height, int64_t width, int64_t ph, int64_t pw) {
  return (height + 2 * ph + 1) * depthwise_padded_width(width, pw) + (height + 2 * ph) * (width + 2 * pw) + 128;
}

void depthwise_plane(const DepthwisePlane& d, const int8_t* plane, const int8_t* filter, int32_t correction,
                     float multiplier, float offset, int32_t output_min, int32_t output_max, int32_t* acc, int8_t* out);

#if defined(PARE_X86_64_DISPATCH)
// The depthwise layer across channels (conv::Int8Algorithm::
// DepthwiseChannels): whether it runs on this machine now for d's geometry
// (the VNNI copy, else the AVX2 one), its scratch (d.padded) and the call over `channels`
// planes of one image, filter c of w ([channels, kh, kw]) and the
// requantization's entry c for plane c; the same bits as depthwise_plane
// plane by plane. (x86_64 at --//runtime:x86_64_isa=auto only.)
// `packed`: the filters as pack_depthwise_channels laid them out at the
// layer's init, or nullptr (each call lays out its own).
bool depthwise_channels_runs(const DepthwisePlane& d);
int64_t depthwise_channels_bytes(const DepthwisePlane& d);
void depthwise_channels(const DepthwisePlane& d, int64_t channels, const int8_t* x, const int8_t* w, const void* packed,
                        const Requantization& rq, int8_t* out);
// The bytes of a depthwise layer's `channels` kh x kw filters laid out for
// the layer across channels, 0 where this machine's copy reads w as it is
// (only the VNNI copy reads a packed filter, so a packing made under one
// ISA cap serves a call under another); pack_depthwise_channels lays them
// out.
int64_t depthwise_channels_packed_bytes(int64_t channels, int64_t kh, int64_t kw);
void pack_depthwise_channels(int64_t channels, int64_t kh, int64_t kw, const int8_t* w, void* packed);
// A packing's bytes per block of 16 channels (a chunk of channels from c0,
// a multiple of 16, starts c0 / 16 blocks in): kh x quads(kw) vectors of
// taps, then the block's 16 int32 128 sum w.
constexpr int64_t depthwise_channels_block_bytes(int64_t kh, int64_t kw) { return (kh * ((kw + 3) / 4) + 1) * 64; }
#endif

// The kernels of each ISA's copy of qgemm_kernels.inc: this build's
// (PARE_SIMD_ISA) and, at --//runtime:x86_64_isa=auto
// (PARE_X86_64_DISPATCH), the x86-64-v3 copy.
#define PARE_QGEMM_KERNELS                                                                                             \
  void gemm_rows(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const int8_t* x,                        \
                 const Requantization& rq, const Output& out);                                                         \
  void gemm_dynamic(int64_t rows, int64_t channels, int64_t k, const uint8_t* u, const int8_t* w,                      \
                    const DynamicEpilogue& e, float* out);                                                             \
  Range dynamic_range(const float* x, int64_t n);                                                                      \
  void quantize_dynamic(const float* x, int64_t rows, int64_t k, float inv_scale, float zero_point, float qmin,        \
                        float qmax, uint8_t* u);                                                                       \
  int64_t columns_packed_bytes(int64_t channels, int64_t k);                                                           \
  void pack_columns(int64_t channels, int64_t k, const int8_t* w, void* packed);                                       \
  void gemm_columns(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const void* packed, const int8_t* x, \
                    const Requantization& rq, const Output& out, void* scratch);                                       \
  void requantize_channel(const int32_t* acc, int64_t n, int32_t correction, float multiplier, float offset,           \
                          int32_t output_min, int32_t output_max, int8_t* out);                                        \
  void depthwise_plane(const DepthwisePlane& d, const int8_t* plane, const int8_t* filter, int32_t correction,         \
                       float multiplier, float offset, int32_t output_min, int32_t output_max, int32_t* acc,           \
                       int8_t* out);
namespace PARE_SIMD_ISA {
PARE_QGEMM_KERNELS
}  // namespace PARE_SIMD_ISA
#if defined(PARE_X86_64_DISPATCH)
namespace x86_64_v3 {
PARE_QGEMM_KERNELS
// The AVX2 depthwise layer across channels (qgemm_kernels.inc, this copy
// only): 16 channels of an output pixel per pair of vpmaddwd, for the
// planes depthwise_channels_avx2_runs() accepts (at most 64 taps); d.padded:
// depthwise_channels_avx2_bytes(d) of scratch (d.lo, d.hi unused).
bool depthwise_channels_avx2_runs(const DepthwisePlane& d);
int64_t depthwise_channels_avx2_bytes(const DepthwisePlane& d);
void depthwise_channels_avx2(const DepthwisePlane& d, int64_t channels, const int8_t* x, const int8_t* w,
                             const Requantization& rq, int8_t* out);
}  // namespace x86_64_v3
// The AVX-512 VNNI copies, on an x86-64-v4 CPU with VNNI
// (cpu::x86_64_vnni()): the convolution's columns GEMM (qgemm_vnni.cc), the
// depthwise kernels (qgemm_vnni_depthwise.cc) and the linear layers' GEMMs
// (qgemm_vnni_linear.cc).
namespace x86_64_v4 {
int64_t columns_packed_bytes_vnni(int64_t channels, int64_t k);
void pack_columns_vnni(int64_t channels, int64_t k, const int8_t* w, void* packed);
void gemm_columns_vnni(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const void* packed,
                       const int8_t* x, const Requantization& rq, const Output& out, void* scratch);
// gemm_columns_vnni with the tiles of x packed from the image (gemm_image),
// at stride 1 or 2 across (gemm_image_vnni_runs).
bool gemm_image_vnni_runs(const ImageColumns& x);
void gemm_image_vnni(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const void* packed,
                     const ImageColumns& x, const Requantization& rq, const Output& out, void* scratch);
void pad_image_vnni(const ImageColumns& x, int64_t k);
// The VNNI depthwise plane (vpdpbusd over 4 taps of a filter row, x + 128),
// for the planes depthwise_plane_vnni_runs() accepts: dilation 1 across,
// stride 1 or 2 across, at most 64 filter rows x quads of taps.
bool depthwise_plane_vnni_runs(const DepthwisePlane& d);
void depthwise_plane_vnni(const DepthwisePlane& d, const int8_t* plane, const int8_t* filter, int32_t correction,
                          float multiplier, float offset, int32_t output_min, int32_t output_max, int8_t* out);
// The depthwise layer across channels (vpdpbusd on 16 channels of an
// output pixel; qgemm_vnni_depthwise.cc), for the planes
// depthwise_channels_vnni_runs() accepts: stride 1 or 2 across (any
// dilation), at most 32 filter rows x quads of taps. `channels` planes of one
// image in x and out, one filter of w ([channels, kh, kw]) each, with their
// own requantization; d.padded: depthwise_channels_vnni_bytes(d) of
// scratch (d.lo, d.hi unused); packed: w as pack_depthwise_channels_vnni
// laid it out, or nullptr.
bool depthwise_channels_vnni_runs(const DepthwisePlane& d);
int64_t depthwise_channels_vnni_bytes(const DepthwisePlane& d);
void pack_depthwise_channels_vnni(int64_t channels, int64_t kh, int64_t kw, const int8_t* w, void* packed);
void depthwise_channels_vnni(const DepthwisePlane& d, int64_t channels, const int8_t* x, const int8_t* w,
                             const void* packed, const int32_t* correction, const float* multiplier,
                             const float* offset, int32_t output_min, int32_t output_max, int8_t* out);
// gemm_rows on vpdpbusd (the weights + 128 against x, 128 sum_k x taken
// back out per pixel).
void gemm_rows_vnni(int64_t channels, int64_t pixels, int64_t k, const int8_t* w, const int8_t* x,
                    const Requantization& rq, const Output& out);
// pare::qlinear_dynamic's product and input quantization on AVX-512
// (vpdpbusd: 16 output channels x 4 reductions per instruction).
void gemm_dynamic_vnni(int64_t rows, int64_t channels, int64_t k, const uint8_t* u, const int8_t* w,
                       const DynamicEpilogue& e, float* out);
Range dynamic_range_v4(const float* x, int64_t n);
void quantize_dynamic_v4(const float* x, int64_t rows, int64_t k, float inv_scale, float zero_point, float qmin,
                         float qmax, uint8_t* u);
}  // namespace x86_64_v4
#endif
#undef PARE_QGEMM_KERNELS

}  // namespace qgemm
}  // namespace kernels
}  // namespace pare
