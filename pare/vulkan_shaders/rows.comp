#version 450
// One invocation per row of D elements, `inner` apart: softmax over a dim,
// mean over a run of dims, layer_norm over the trailing dims.
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { float o[]; };
layout(std430, binding = 1) readonly buffer In { float x[]; };
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };
// u: 0 rows, 1 D, 2 inner, 3 op (0 mean, 1 softmax, 2 layer_norm, 3 log_softmax),
// 4 eps, 5 has weight, 6 has bias
void main() {
  uint r = flat_index();
  if (r >= pc.u[0]) return;
  uint D = pc.u[1], inner = pc.u[2], op = pc.u[3];
  uint base = (r / inner) * D * inner + r % inner;
  if (op == 0u) {
    float s = 0.0;
    for (uint j = 0u; j < D; ++j) s += x[base + j * inner];
    o[r] = s / float(D);
  } else if (op == 1u || op == 3u) {
    float m = x[base];
    for (uint j = 1u; j < D; ++j) m = max(m, x[base + j * inner]);
    float s = 0.0;
    for (uint j = 0u; j < D; ++j) s += exp(x[base + j * inner] - m);
    if (op == 1u) {
      for (uint j = 0u; j < D; ++j) o[base + j * inner] = exp(x[base + j * inner] - m) / s;
    } else {
      float l = log(s);
      for (uint j = 0u; j < D; ++j) o[base + j * inner] = x[base + j * inner] - m - l;
    }
  } else {
    float mean = 0.0;
    for (uint j = 0u; j < D; ++j) mean += x[base + j];
    mean /= float(D);
    float var = 0.0;
    for (uint j = 0u; j < D; ++j) {
      float d = x[base + j] - mean;
      var += d * d;
    }
    float rstd = inversesqrt(var / float(D) + pf(4));
    for (uint j = 0u; j < D; ++j) {
      float v = (x[base + j] - mean) * rstd;
      if (pc.u[5] != 0u) v *= w[j];
      if (pc.u[6] != 0u) v += bias[j];
      o[base + j] = v;
    }
  }
}
