#pragma once
// The x86-64-v4 copy of the int8 max pool's vector loop (max_pool.cc's
// max_pool_plane_int8: aten::max_pool2d on the quantize pass's int8
// values), which a runtime at --//runtime:x86_64_isa=auto runs on a CPU
// with AVX-512 F, BW, CD, DQ and VL (cpu::kernel_isa(); max_pool.cc
// chooses). //runtime/kernels:kernels_v4 compiles max_pool_x86_64_v4.cc
// with -march=x86-64-v4; elsewhere it is empty.

#include <stdint.h>

namespace pare {
namespace kernels {
namespace max_pool_int8 {

#if defined(PARE_X86_64_DISPATCH)
namespace x86_64_v4 {
// The n outputs of one output row, stride 1 or 2 across: output j is the
// max over `rows` input rows (row_step bytes apart, from first_row, all
// inside the plane) of `kernel` taps (dilation apart) of the row at column
// j stride - padding + t dilation, taps outside the row's `width` columns
// left out (a window with none inside gives -128, as the scalar loop's
// lowest value does). 32 outputs at a time.
void row(const int8_t* first_row, int64_t row_step, int64_t rows, int64_t width, int64_t kernel, int64_t dilation,
         int64_t stride, int64_t padding, int64_t n, int8_t* out);
}  // namespace x86_64_v4
#endif

}  // namespace max_pool_int8
}  // namespace kernels
}  // namespace pare
