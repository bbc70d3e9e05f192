// The x86-64-v3 copy of the dispatched kernels (gemm_kernels.inc,
// depthwise_kernels.inc, quantized/qgemm_kernels.inc and
// qgemm_dynamic_kernels.inc,
// quantized/weight_only_kernels.inc) for runtimes at --//runtime:x86_64_isa=auto, which
// run it on a CPU with AVX2 and FMA (cpu::kernel_isa(); gemm.cc's
// tile_kernel() and sgemm_narrow(), depthwise.cc's plane_kernel() and
// nhwc_rows_kernel()).
// //runtime/kernels:kernels_v3 compiles this file with -march=x86-64-v3;
// elsewhere (the kernels library, any other level or platform, the tests'
// own compiles) it is empty.
#if defined(PARE_X86_64_DISPATCH) && defined(__AVX2__) && defined(__FMA__)
#include "runtime/kernels/common/depthwise_kernels.inc"
#include "runtime/kernels/common/gemm_kernels.inc"
#include "runtime/kernels/quantized/qgemm_kernels.inc"
// pare::qlinear_dynamic's kernels, after qgemm_kernels.inc (they use its round_half_even).
#include "runtime/kernels/quantized/qgemm_dynamic_kernels.inc"
#include "runtime/kernels/quantized/weight_only_kernels.inc"
#endif
