// The x86-64-v4 copy of quantize_per_tensor's one-byte loop
// (quantize_bytes.h: 16 lanes, one zmm register), for runtimes at
// --//runtime:x86_64_isa=auto on a CPU with AVX-512 F, BW, CD, DQ and VL
// (cpu::kernel_isa(); per_tensor.cc chooses). //runtime/kernels:kernels_v4
// compiles this file with -march=x86-64-v4; elsewhere it is empty.
#if defined(PARE_X86_64_DISPATCH) && defined(__AVX512F__)

#include "runtime/kernels/quantized/quantize_bytes.h"

namespace pare {
namespace kernels {
namespace quantize_bytes {
namespace x86_64_v4 {

size_t to_int8(const float* x, size_t n, float inv_scale, float zp, float qmin, float qmax, int8_t* q) {
  return vectors<16>(x, n, inv_scale, zp, qmin, qmax, q);
}

size_t to_uint8(const float* x, size_t n, float inv_scale, float zp, float qmin, float qmax, uint8_t* q) {
  return vectors<16>(x, n, inv_scale, zp, qmin, qmax, q);
}

}  // namespace x86_64_v4
}  // namespace quantize_bytes
}  // namespace kernels
}  // namespace pare

#endif
