// Shared by the Vulkan backend's shaders (pare/vulkan.py): 64 invocations
// per work group, the flat index over a 2-D grid of groups (x at most
// 65535 groups), the push constants as 32 words, and the activations
// fused into a shader's result.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 64) in;
layout(push_constant) uniform Push { uint u[32]; } pc;

uint flat_index() { return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u; }
float pf(uint i) { return uintBitsToFloat(pc.u[i]); }

// Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7.
float erf_as(float x) {
  float a = abs(x);
  float t = 1.0 / (1.0 + 0.3275911 * a);
  float y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp(-a * a);
  return x < 0.0 ? -y : y;
}

// Activation codes: pare/vulkan.py's ACT_*.
float activate(float v, uint act, float lo, float hi) {
  if (act == 1u) return (v > 0.0 || isnan(v)) ? v : 0.0;
  if (act == 2u) return isnan(v) ? v : min(max(v, lo), hi);
  if (act == 3u) return v * min(max(v + 3.0, 0.0), 6.0) / 6.0;
  if (act == 4u) return 1.0 / (1.0 + exp(-v));
  if (act == 5u) return v / (1.0 + exp(-v));
  if (act == 6u) return 0.5 * v * (1.0 + erf_as(v * 0.7071067811865476));
  if (act == 7u) {
    float z = clamp(0.7978845608028654 * (v + 0.044715 * v * v * v), -15.0, 15.0);
    float e = exp(2.0 * z);
    return 0.5 * v * (1.0 + (e - 1.0) / (e + 1.0));
  }
  return v;
}
