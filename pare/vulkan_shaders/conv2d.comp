#version 450
// Direct 2-D convolution, one invocation per output element: any stride,
// padding, dilation and groups (depthwise and 1x1 included), bias and an
// activation fused. Weights as torch lays them out, [OC, C/groups, KH, KW].
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { float o[]; };
layout(std430, binding = 1) readonly buffer In { float x[]; };
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };
// u: 0 total, 1 C, 2 H, 3 W, 4 OC, 5 OH, 6 OW, 7 KH, 8 KW, 9 sh, 10 sw, 11 ph,
// 12 pw, 13 dh, 14 dw, 15 groups, 16 has bias, 17 act, 18 lo, 19 hi
void main() {
  uint i = flat_index();
  if (i >= pc.u[0]) return;
  uint C = pc.u[1], H = pc.u[2], W_ = pc.u[3], OC = pc.u[4], OH = pc.u[5], OW = pc.u[6];
  uint KH = pc.u[7], KW = pc.u[8];
  uint ox = i % OW, oy = (i / OW) % OH, oc = (i / (OW * OH)) % OC, n = i / (OW * OH * OC);
  uint cg = C / pc.u[15], g = oc / (OC / pc.u[15]);
  int y0 = int(oy * pc.u[9]) - int(pc.u[11]);
  int x0 = int(ox * pc.u[10]) - int(pc.u[12]);
  float acc = 0.0;
  for (uint c = 0u; c < cg; ++c) {
    uint plane = (n * C + g * cg + c) * H;
    uint wbase = (oc * cg + c) * KH * KW;
    for (uint ky = 0u; ky < KH; ++ky) {
      int y = y0 + int(ky * pc.u[13]);
      if (y < 0 || y >= int(H)) continue;
      for (uint kx = 0u; kx < KW; ++kx) {
        int xx = x0 + int(kx * pc.u[14]);
        if (xx < 0 || xx >= int(W_)) continue;
        acc += x[(plane + uint(y)) * W_ + uint(xx)] * w[wbase + ky * KW + kx];
      }
    }
  }
  if (pc.u[16] != 0u) acc += bias[oc];
  o[i] = activate(acc, pc.u[17], pf(18), pf(19));
}
