#version 450
// out[b, m, n] = act(alpha * sum_k A[b, m, k] B[b, k, n] + beta * bias[b, m, n]),
// A, B and bias read through strides (0 broadcasts), so a transposed or
// batch-broadcast operand needs no copy: linear, addmm, mm, bmm, matmul.
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { float o[]; };
layout(std430, binding = 1) readonly buffer A { float a[]; };
layout(std430, binding = 2) readonly buffer B { float b[]; };
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };
// u: 0 total, 1 M, 2 N, 3 K, 4-6 A strides (b, m, k), 7-9 B strides (b, k, n),
// 10-12 bias strides (b, m, n), 13 has bias, 14 alpha, 15 beta, 16 act, 17 lo, 18 hi
void main() {
  uint i = flat_index();
  if (i >= pc.u[0]) return;
  uint n = i % pc.u[2];
  uint m = (i / pc.u[2]) % pc.u[1];
  uint bb = i / (pc.u[2] * pc.u[1]);
  uint ai = bb * pc.u[4] + m * pc.u[5];
  uint bi = bb * pc.u[7] + n * pc.u[9];
  float acc = 0.0;
  for (uint k = 0u; k < pc.u[3]; ++k) acc += a[ai + k * pc.u[6]] * b[bi + k * pc.u[8]];
  float v = pf(14) * acc;
  if (pc.u[13] != 0u) v += pf(15) * bias[bb * pc.u[10] + m * pc.u[11] + n * pc.u[12]];
  o[i] = activate(v, pc.u[16], pf(17), pf(18));
}
