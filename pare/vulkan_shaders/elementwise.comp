#version 450
// out[at(i)] = act(a[i] OP b[i]) over up to 4 dims, every operand read and
// the result written through strides and an offset: add/sub/mul/div with
// broadcasting (stride 0), a number for b, the unary activations (OP copy),
// and the copies of permute, expand and cat (a slice of out).
#include "common.glsl"
layout(std430, binding = 0) buffer Out { float o[]; };
layout(std430, binding = 1) readonly buffer A { float a[]; };
layout(std430, binding = 2) readonly buffer B { float b[]; };
// u: 0 total, 1-4 sizes, 5-8 a strides, 9-12 b strides, 13-16 out strides,
// 17 out offset, 18 op (0 copy, 1 add, 2 sub, 3 mul, 4 div), 19 b is the
// number in 20, 21 alpha (b's factor in add/sub), 22 act, 23 lo, 24 hi
void main() {
  uint i = flat_index();
  if (i >= pc.u[0]) return;
  uint ai = 0u, bi = 0u, oi = pc.u[17];
  uint rest = i;
  for (int d = 3; d >= 0; --d) {
    uint size = pc.u[1 + d];
    uint c = rest % size;
    rest /= size;
    ai += c * pc.u[5 + d];
    bi += c * pc.u[9 + d];
    oi += c * pc.u[13 + d];
  }
  float x = a[ai];
  uint op = pc.u[18];
  if (op != 0u) {
    float y = pc.u[19] != 0u ? pf(20) : b[bi];
    if (op == 1u) x = x + pf(21) * y;
    else if (op == 2u) x = x - pf(21) * y;
    else if (op == 3u) x = x * y;
    else x = x / y;
  }
  o[oi] = activate(x, pc.u[22], pf(23), pf(24));
}
