// The x86-64-v4 copy of pare::weight_only_linear's row kernel
// (weight_only_kernels.inc: its 16-lane vectors are one zmm register), for
// runtimes at --//runtime:x86_64_isa=auto on a CPU with AVX-512 F, BW, CD,
// DQ and VL (cpu::kernel_isa(); weight_only_linear.cc chooses).
// //runtime/kernels:kernels_v4 compiles this file with -march=x86-64-v4;
// elsewhere it is empty.
#if defined(PARE_X86_64_DISPATCH) && defined(__AVX512F__)
#include "runtime/kernels/quantized/weight_only_kernels.inc"
#endif
