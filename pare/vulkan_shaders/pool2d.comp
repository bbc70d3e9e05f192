#version 450
// 2-D pooling over planes, one invocation per output element: max (NaN
// propagates, as torch's), average (count_include_pad or not, a divisor
// override), adaptive average (torch's start/end of each window).
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { float o[]; };
layout(std430, binding = 1) readonly buffer In { float x[]; };
// u: 0 total, 1 H, 2 W, 3 OH, 4 OW, 5 KH, 6 KW, 7 sh, 8 sw, 9 ph, 10 pw,
// 11 dh, 12 dw, 13 op (0 max, 1 avg, 2 adaptive avg), 14 count_include_pad,
// 15 divisor override (0 none)
void main() {
  uint i = flat_index();
  if (i >= pc.u[0]) return;
  uint H = pc.u[1], W_ = pc.u[2], OH = pc.u[3], OW = pc.u[4];
  uint ox = i % OW, oy = (i / OW) % OH, plane = i / (OW * OH);
  uint op = pc.u[13];
  int ys, ye, xs, xe;
  if (op == 2u) {
    ys = int((oy * H) / OH);
    ye = int(((oy + 1u) * H + OH - 1u) / OH);
    xs = int((ox * W_) / OW);
    xe = int(((ox + 1u) * W_ + OW - 1u) / OW);
  } else {
    ys = int(oy * pc.u[7]) - int(pc.u[9]);
    xs = int(ox * pc.u[8]) - int(pc.u[10]);
    ye = ys + int((pc.u[5] - 1u) * pc.u[11]) + 1;
    xe = xs + int((pc.u[6] - 1u) * pc.u[12]) + 1;
  }
  uint base = plane * H * W_;
  if (op == 0u) {
    float m = uintBitsToFloat(0xff800000u);
    for (int y = ys; y < ye; y += int(pc.u[11])) {
      if (y < 0 || y >= int(H)) continue;
      for (int xx = xs; xx < xe; xx += int(pc.u[12])) {
        if (xx < 0 || xx >= int(W_)) continue;
        float v = x[base + uint(y) * W_ + uint(xx)];
        if (v > m || isnan(v)) m = v;
        if (isnan(m)) break;
      }
    }
    o[i] = m;
    return;
  }
  float s = 0.0;
  int count = 0;
  int padded = 0;
  if (op == 1u) {
    // torch: the window clipped to the padded input counts with padding.
    int ype = min(ye, int(H + pc.u[9])), xpe = min(xe, int(W_ + pc.u[10]));
    padded = (ype - ys) * (xpe - xs);
  }
  for (int y = max(ys, 0); y < min(ye, int(H)); ++y)
    for (int xx = max(xs, 0); xx < min(xe, int(W_)); ++xx) {
      s += x[base + uint(y) * W_ + uint(xx)];
      ++count;
    }
  int divisor = op == 1u && pc.u[15] != 0u ? int(pc.u[15]) : (op == 1u && pc.u[14] != 0u ? padded : count);
  o[i] = s / float(divisor);
}
