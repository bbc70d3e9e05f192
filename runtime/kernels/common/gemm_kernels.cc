// The GEMM kernels for the ISA this build is compiled for (gemm_kernels.inc).
#include "runtime/kernels/common/gemm_kernels.inc"
