// Float GEMM packing and micro-kernel (see gemm.h).

#include "runtime/kernels/common/gemm.h"

namespace pare {
namespace gemm {
namespace {

using simd::loadv;
using simd::storev;
using simd::vec;

static_assert(kMR == 6 && kNR == 2 * kLanes, "micro_kernel is written for a 6 x (2 vectors) tile");

}  // namespace

void pack_a(const MatrixView<float>& a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* dst) {
  for (int64_t ip = 0; ip < mc; ip += kMR) {
    const int64_t rows = mc - ip < kMR ? mc - ip : kMR;
    float* panel = dst + (ip / kMR) * kc * kMR;
    for (int64_t p = 0; p < kc; ++p) {
      float* out = panel + p * kMR;
      int64_t r = 0;
      for (; r < rows; ++r) out[r] = a.at(i0 + ip + r, p0 + p);
      for (; r < kMR; ++r) out[r] = 0.0f;
    }
  }
}

void pack_b(const MatrixView<float>& b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* dst) {
  for (int64_t jp = 0; jp < nc; jp += kNR) {
    const int64_t cols = nc - jp < kNR ? nc - jp : kNR;
    float* panel = dst + (jp / kNR) * kc * kNR;
    if (cols == kNR && b.col_stride == 1) {
      // Row-major B: each panel row is kNR consecutive floats.
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = b.data + (p0 + p) * b.row_stride + j0 + jp;
        storev(panel + p * kNR, loadv(src));
        storev(panel + p * kNR + kLanes, loadv(src + kLanes));
      }
      continue;
    }
    for (int64_t p = 0; p < kc; ++p) {
      float* out = panel + p * kNR;
      int64_t col = 0;
      for (; col < cols; ++col) out[col] = b.at(p0 + p, j0 + jp + col);
      for (; col < kNR; ++col) out[col] = 0.0f;
    }
  }
}

void prepack_a(const MatrixView<float>& a, float* dst) {
  const int64_t padded = round_up(a.rows, kMR);
  for (int64_t p0 = 0; p0 < a.cols; p0 += kKC) {
    const int64_t kc = a.cols - p0 < kKC ? a.cols - p0 : kKC;
    pack_a(a, 0, a.rows, p0, kc, dst + p0 * padded);
  }
}

void prepack_b(const MatrixView<float>& b, float* dst) {
  const int64_t padded = round_up(b.cols, kNR);
  for (int64_t p0 = 0; p0 < b.rows; p0 += kKC) {
    const int64_t kc = b.rows - p0 < kKC ? b.rows - p0 : kKC;
    pack_b(b, p0, kc, 0, b.cols, dst + p0 * padded);
  }
}

namespace {

// One row of A (batch-1 linear layers, the common mobile case): a
// matrix-vector product over the B panel, 1/kMR of the full tile's work.
void single_row_kernel(int64_t kc, const float* PARE_RESTRICT a, const float* PARE_RESTRICT b, float* c,
                       int64_t nr, float alpha, bool accumulate) {
  vec acc0 = {};
  vec acc1 = {};
  for (int64_t p = 0; p < kc; ++p) {
    acc0 += a[p * kMR] * loadv(b + p * kNR);
    acc1 += a[p * kMR] * loadv(b + p * kNR + kLanes);
  }
  float row[kNR];
  storev(row, alpha * acc0);
  storev(row + kLanes, alpha * acc1);
  for (int64_t j = 0; j < nr; ++j) c[j] = row[j] + (accumulate ? c[j] : 0.0f);
}

}  // namespace

void micro_kernel(int64_t kc, const float* PARE_RESTRICT a, const float* PARE_RESTRICT b, float* c,
                  int64_t ldc, int64_t mr, int64_t nr, float alpha, bool accumulate) {
  if (mr == 1) {
    single_row_kernel(kc, a, b, c, nr, alpha, accumulate);
    return;
  }
  vec acc[kMR][2];
  for (int64_t i = 0; i < kMR; ++i) {
    acc[i][0] = vec{};
    acc[i][1] = vec{};
  }
  for (int64_t p = 0; p < kc; ++p) {
    const vec b0 = loadv(b);
    const vec b1 = loadv(b + kLanes);
    for (int64_t i = 0; i < kMR; ++i) {
      acc[i][0] += a[i] * b0;
      acc[i][1] += a[i] * b1;
    }
    a += kMR;
    b += kNR;
  }
  if (mr == kMR && nr == kNR) {
    for (int64_t i = 0; i < kMR; ++i) {
      float* row = c + i * ldc;
      vec r0 = alpha * acc[i][0];
      vec r1 = alpha * acc[i][1];
      if (accumulate) {
        r0 += loadv(row);
        r1 += loadv(row + kLanes);
      }
      storev(row, r0);
      storev(row + kLanes, r1);
    }
    return;
  }
  // Edge tile: go through a buffer and write only the valid part.
  float tile[kMR][kNR];
  for (int64_t i = 0; i < kMR; ++i) {
    storev(&tile[i][0], acc[i][0]);
    storev(&tile[i][kLanes], acc[i][1]);
  }
  for (int64_t i = 0; i < mr; ++i) {
    float* row = c + i * ldc;
    for (int64_t j = 0; j < nr; ++j) row[j] = alpha * tile[i][j] + (accumulate ? row[j] : 0.0f);
  }
}

}  // namespace gemm
}  // namespace pare
