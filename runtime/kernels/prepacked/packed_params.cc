// Packing and running of the prepacked-weight classes (see packed_params.h).

#include "runtime/kernels/prepacked/packed_params.h"

#include "runtime/registry/dispatch.h"
#include "runtime/kernels/common/activation.h"
#include "runtime/kernels/common/convert.h"
#include "runtime/kernels/common/depthwise.h"
#include "runtime/kernels/common/gemm.h"
#include "runtime/kernels/common/im2col.h"
#include "runtime/kernels/common/linear.h"
#include "runtime/kernels/prepacked/winograd.h"

namespace pare {
namespace classes {
namespace {

// The weights and bias of a packed layer are the program's constants, used
// in place: they must already be in the layout the kernels read.
const char kRepack[] =
    "; re-export the program with this version of tools.tracer (docs/program_format.md, \"Prepacked weights\")";

Result<const float*> packed_floats(KernelContext& ctx, const Tensor& t, int64_t floats, const char* what) {
  PARE_CHECK_OR_RETURN(
      ctx, t.dtype == ScalarType::Float && t.dim == 1 && t.sizes[0] == floats && t.is_contiguous(),
      Error::InvalidArgument, "argument 'weight' must be %s: a contiguous 1-D Float tensor of %lld floats, got %s %s%s",
      what, static_cast<long long>(floats), to_string(t.dtype), sizes_to_string(t.size_span()).text, kRepack);
  return t.data_as<float>();
}

Result<const float*> bias_floats(KernelContext& ctx, const Tensor* bias, int64_t n) {
  if (bias == nullptr) return static_cast<const float*>(nullptr);
  PARE_CHECK_OR_RETURN(
      ctx, bias->dtype == ScalarType::Float && bias->dim == 1 && bias->sizes[0] == n && bias->is_contiguous(),
      Error::InvalidArgument, "argument 'bias' must be a contiguous Float tensor of sizes [%lld], got %s %s",
      static_cast<long long>(n), to_string(bias->dtype), sizes_to_string(bias->size_span()).text);
  return bias->data_as<float>();
}

// Dimensions of a packed layer: positive (or, for its outputs, zero) and
// small enough that every size computed from them fits in int64.
constexpr int64_t kMaxDimension = int64_t{1} << 24;
bool valid_dimension(int64_t v, int64_t min = 1) { return v >= min && v <= kMaxDimension; }

}  // namespace

void Clamp::apply(float* data, int64_t n) const {
  if (!active()) return;
  const float lo = min;
  const float hi = max;
  for (int64_t i = 0; i < n; ++i) data[i] = simd::clamp(data[i], lo, hi);  // vectorises
}

namespace {

// out[i] = f(out[i]) under `Tag`: no code for f in a build that does not
// select the tag.
template <typename Tag, typename F>
Error map_tagged(KernelContext& ctx, float* out, int64_t n, F f) {
  return dispatch_as<Tag, float>(ctx, [&](auto) -> Error {
    for (int64_t i = 0; i < n; ++i) out[i] = f(out[i]);  // vectorises
    return Error::Ok;
  });
}

}  // namespace

Result<const float*> Epilogue::residual_data(KernelContext& ctx, const Tensor& out) const {
  if (residual == nullptr) return static_cast<const float*>(nullptr);
  // Under the residual's tag: the not-selected error in a runtime without
  // it, and the tracing build's record of it, since the GEMMs add the
  // residual as they store their output, with no dispatch of their own.
  const float* data = nullptr;
  PARE_TRY((dispatch_as<tags::prepacked_residual_kernel, float>(ctx, [&](auto) -> Error {
    PARE_CHECK_OR_RETURN(ctx, residual->dtype == ScalarType::Float, Error::InvalidArgument,
                         "argument 'residual' must be a Float tensor, got %s", to_string(residual->dtype));
    bool same_sizes = residual->dim == out.dim;
    for (size_t d = 0; same_sizes && d < out.dim; ++d) same_sizes = residual->sizes[d] == out.sizes[d];
    PARE_CHECK_OR_RETURN(ctx, same_sizes, Error::InvalidShape,
                         "argument 'residual' must have the output's sizes %s, got %s",
                         sizes_to_string(out.size_span()).text, sizes_to_string(residual->size_span()).text);
    // In the output's memory order (a channels-last output's residual in
    // its order).
    PARE_TRY_ASSIGN(const Tensor r, out.is_contiguous() ? as_contiguous(ctx, *residual, ScalarType::Float)
                                                        : as_channels_last(ctx, *residual, ScalarType::Float));
    data = r.data_as<float>();
    return Error::Ok;
  })));
  return data;
}

Error Epilogue::apply(KernelContext& ctx, float* out, const float* res, int64_t n) const {
  if (feature_selected(FeatureId::threads)) {
    // Nothing left to do (the product applied the clamp) wakes no thread.
    if (res == nullptr && !clamp.active() && activation == Activation::None) return Error::Ok;
    // An error (an epilogue dtype the build left out) comes from the
    // dispatch before any element: found on an empty range first, so no
    // chunk can fail. About 4 operations per element.
    constexpr int64_t kGrain = 64;  // 256 bytes: whole vectors and cache lines
    const uint32_t chunks = ctx.chunks_for(n, kGrain, 4 * n);
    if (chunks > 1) {
      PARE_TRY(apply_range(ctx, out, res, 0));
      ctx.parallel(chunks, n, kGrain, [&](uint32_t, int64_t begin, int64_t end) {
        (void)apply_range(ctx, out + begin, res == nullptr ? nullptr : res + begin, end - begin);
      });
      return Error::Ok;
    }
  }
  return apply_range(ctx, out, res, n);
}

Error Epilogue::apply_range(KernelContext& ctx, float* out, const float* res, int64_t n) const {
  if (res != nullptr) {
    auto add = [&](auto) -> Error {
      for (int64_t i = 0; i < n; ++i) out[i] += res[i];
      return Error::Ok;
    };
    PARE_TRY((dispatch_as<tags::prepacked_residual_kernel, float>(ctx, add)));
  }
  clamp.apply(out, n);
  if (!any_activation()) return Error::Ok;  // read_epilogue let no activation through
  switch (activation) {
    case Activation::None: return Error::Ok;
    case Activation::Hardswish:
      return map_tagged<tags::prepacked_hardswish_kernel>(ctx, out, n,
                                                          [](float x) { return activation::hardswish(x); });
    case Activation::Hardsigmoid:
      return map_tagged<tags::prepacked_hardsigmoid_kernel>(ctx, out, n,
                                                            [](float x) { return activation::hardsigmoid(x); });
    case Activation::Sigmoid:
      return map_tagged<tags::prepacked_sigmoid_kernel>(ctx, out, n, [](float x) { return activation::sigmoid(x); });
    case Activation::Silu:
      return map_tagged<tags::prepacked_silu_kernel>(ctx, out, n, [](float x) { return activation::silu(x); });
    case Activation::Gelu:
      return map_tagged<tags::prepacked_gelu_kernel>(ctx, out, n, [](float x) { return activation::gelu(x); });
    case Activation::GeluTanh:
      return map_tagged<tags::prepacked_gelu_tanh_kernel>(ctx, out, n,
                                                          [](float x) { return activation::gelu_tanh(x); });
  }
  return Error::Ok;
}

Error LinearPackedParams::init(KernelContext& ctx, const Tensor& packed, const Tensor* bias_tensor, int64_t in,
                               int64_t out) {
  PARE_CHECK_OR_RETURN(ctx, valid_dimension(in, 0) && valid_dimension(out, 0), Error::InvalidArgument,
                       "in_features = %lld and out_features = %lld must be in [0, 2^24]", static_cast<long long>(in),
                       static_cast<long long>(out));
  in_features = in;
  out_features = out;
  PARE_TRY_ASSIGN(packed_weight, packed_floats(ctx, packed, static_cast<int64_t>(gemm::packed_b_size(in, out)),
                                               "W^T packed as the GEMM's B"));
  PARE_TRY_ASSIGN(bias, bias_floats(ctx, bias_tensor, out_features));
  return Error::Ok;
}

Error LinearPackedParams::run(KernelContext& ctx, const Tensor& input, Value& out, const Epilogue& epilogue) const {
  PARE_TRY_ASSIGN(Tensor * result,
                  linear::allocate_output(ctx, input, in_features, out_features, ScalarType::Float, out));
  if (result->numel() == 0) return Error::Ok;
  // Rows of the product (in_features may be 0, out_features is not here).
  const int64_t m = static_cast<int64_t>(result->numel()) / out_features;
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, input, ScalarType::Float));
  PARE_TRY_ASSIGN(const float* residual, epilogue.residual_data(ctx, *result));
  PARE_TRY_ASSIGN(const gemm::Split split,
                  gemm::split_for(ctx, m, out_features, in_features, /*pack_a=*/true, /*pack_b=*/false));
  float* c = result->data_as<float>();
  const Clamp clamp = epilogue.product_clamp(/*adds_residual=*/true);
  const gemm::Output product{
      1.0f, /*accumulate=*/false, /*row_bias=*/nullptr, /*col_bias=*/bias, clamp.min, clamp.max, residual};
  gemm::sgemm(ctx, split, m, out_features, in_features,
              gemm::StridedA{{x.data_as<float>(), m, in_features, in_features, 1}},
              gemm::PrepackedB{packed_weight, out_features}, c, out_features, product);
  return epilogue.after_product(/*adds_residual=*/true).apply(ctx, c, nullptr, static_cast<int64_t>(result->numel()));
}

Error Conv2dPackedParams::init(KernelContext& ctx, const Tensor& weight, const Tensor* bias_tensor,
                               IntArrayRef stride_arg, IntArrayRef padding_arg, IntArrayRef dilation_arg,
                               int64_t groups_arg, IntArrayRef weight_sizes, int64_t layout_code) {
  PARE_CHECK_OR_RETURN(ctx, layout_code >= 0 && layout_code < conv::kNumWeightLayouts, Error::InvalidArgument,
                       "argument 'layout' = %lld is not a weight layout this runtime knows (0 to %lld): a program "
                       "from a newer tools.tracer; re-export it with the runtime's version",
                       static_cast<long long>(layout_code), static_cast<long long>(conv::kNumWeightLayouts - 1));
  PARE_CHECK_OR_RETURN(
      ctx, stride_arg.size() == 2 && padding_arg.size() == 2 && dilation_arg.size() == 2 && weight_sizes.size() == 4,
      Error::InvalidArgument, "stride, padding and dilation must each have 2 elements, and weight_sizes 4");
  for (size_t i = 0; i < 4; ++i) {
    PARE_CHECK_OR_RETURN(ctx, valid_dimension(weight_sizes[i], i == 0 ? 0 : 1), Error::InvalidArgument,
                         "weight_sizes %s must be in [0, 2^24] (out_channels) and [1, 2^24] (the others)",
                         sizes_to_string(weight_sizes).text);
  }
  PARE_CHECK_OR_RETURN(ctx, groups_arg >= 1 && weight_sizes[0] % groups_arg == 0, Error::InvalidArgument,
                       "argument 'groups' = %lld must be positive and divide out_channels = %lld",
                       static_cast<long long>(groups_arg), static_cast<long long>(weight_sizes[0]));
  // Bounds keep the output-size arithmetic far from int64 overflow.
  for (size_t i = 0; i < 2; ++i) {
    PARE_CHECK_OR_RETURN(ctx,
                         stride_arg[i] >= 1 && stride_arg[i] <= kMaxDimension && dilation_arg[i] >= 1 &&
                             dilation_arg[i] <= kMaxDimension && padding_arg[i] >= 0 && padding_arg[i] <= kMaxDimension,
                         Error::InvalidArgument,
                         "stride and dilation must be in [1, 2^24] and padding in [0, 2^24], got %lld, %lld, %lld",
                         static_cast<long long>(stride_arg[i]), static_cast<long long>(dilation_arg[i]),
                         static_cast<long long>(padding_arg[i]));
    stride[i] = stride_arg[i];
    padding[i] = padding_arg[i];
    dilation[i] = dilation_arg[i];
    kernel[i] = weight_sizes[2 + i];
  }
  groups = groups_arg;
  out_channels = weight_sizes[0];
  const int64_t cg = weight_sizes[1];
  int64_t k = 0;
  int64_t floats = 0;
  PARE_CHECK_OR_RETURN(
      ctx,
      !__builtin_mul_overflow(groups, cg, &in_channels) && in_channels <= kMaxDimension &&
          !__builtin_mul_overflow(cg, kernel[0] * kernel[1], &k) && k <= kMaxDimension &&
          !__builtin_mul_overflow(static_cast<int64_t>(gemm::packed_a_size(out_channels / groups, k)), groups, &floats),
      Error::InvalidArgument, "weight_sizes %s with groups = %lld: the layer is too large",
      sizes_to_string(weight_sizes).text, static_cast<long long>(groups));
  layout = static_cast<conv::WeightLayout>(layout_code);
  switch (layout) {
    case conv::WeightLayout::DepthwiseHwio:
      if (!kernel_dtype_selected(TagId::conv2d_channels_last_kernel, ScalarType::Float)) {
        return detail::dtype_not_selected(ctx, tags::conv2d_channels_last_kernel::name, ScalarType::Float);
      }
      PARE_CHECK_OR_RETURN(
          ctx,
          cg == 1 && groups == out_channels &&
              depthwise::has_fast_path(kernel[0], kernel[1], stride[0], stride[1], dilation[0], dilation[1]),
          Error::InvalidArgument,
          "argument 'weight' is laid out HWIO (for the channels-last kernel), which only a depthwise 3x3, 5x5 or 7x7 "
          "convolution with one output channel per input channel, stride 1 or 2 and no dilation may be%s",
          kRepack);
      PARE_CHECK_OR_RETURN(
          ctx,
          weight.dtype == ScalarType::Float && weight.is_contiguous() && weight.dim == 4 &&
              weight.sizes[0] == kernel[0] && weight.sizes[1] == kernel[1] && weight.sizes[2] == 1 &&
              weight.sizes[3] == out_channels,
          Error::InvalidArgument,
          "argument 'weight' must be a contiguous Float tensor of sizes [%lld, %lld, 1, %lld], got %s %s%s",
          static_cast<long long>(kernel[0]), static_cast<long long>(kernel[1]), static_cast<long long>(out_channels),
          to_string(weight.dtype), sizes_to_string(weight.size_span()).text, kRepack);
      packed_weight = weight.data_as<float>();
      break;
    case conv::WeightLayout::AsGiven: {
      PARE_CHECK_OR_RETURN(
          ctx,
          cg == 1 && groups > 1 &&
              depthwise::has_fast_path(kernel[0], kernel[1], stride[0], stride[1], dilation[0], dilation[1]),
          Error::InvalidArgument,
          "argument 'weight' is unpacked (4-D), which only a depthwise 3x3, 5x5 or 7x7 convolution "
          "with stride 1 or 2 and no dilation may be%s",
          kRepack);
      bool same_sizes = weight.dim == 4;
      for (size_t i = 0; i < 4; ++i) same_sizes = same_sizes && weight.sizes[i] == weight_sizes[i];
      PARE_CHECK_OR_RETURN(
          ctx, weight.dtype == ScalarType::Float && weight.is_contiguous() && same_sizes, Error::InvalidArgument,
          "argument 'weight' must be a contiguous Float tensor of sizes %s, got %s %s",
          sizes_to_string(weight_sizes).text, to_string(weight.dtype), sizes_to_string(weight.size_span()).text);
      packed_weight = weight.data_as<float>();
      break;
    }
    case conv::WeightLayout::Winograd2:
    case conv::WeightLayout::Winograd4: {
      // A runtime without that variant's kernel says so now, naming its
      // tag (and carries no checks for a layout it cannot run). (Each tag
      // tested by name: link-time constants, so a runtime with neither
      // folds this case to the error.)
      const int tile = layout == conv::WeightLayout::Winograd4 ? 4 : 2;
      if (tile == 4 ? !kernel_dtype_selected(TagId::conv2d_winograd4_kernel, ScalarType::Float)
                    : !kernel_dtype_selected(TagId::conv2d_winograd_kernel, ScalarType::Float)) {
        return detail::dtype_not_selected(
            ctx, tile == 4 ? tags::conv2d_winograd4_kernel::name : tags::conv2d_winograd_kernel::name,
            ScalarType::Float);
      }
      const int64_t og = out_channels / groups;
      PARE_CHECK_OR_RETURN(
          ctx,
          kernel[0] == 3 && kernel[1] == 3 && stride[0] == 1 && stride[1] == 1 && dilation[0] == 1 && dilation[1] == 1,
          Error::InvalidArgument,
          "argument 'weight' is transformed for Winograd (2-D), which only a 3x3 convolution with "
          "stride 1 and no dilation may be%s",
          kRepack);
      const int64_t rows = groups * winograd::positions(tile);
      const int64_t cols = static_cast<int64_t>(gemm::packed_a_size(og, cg));
      PARE_CHECK_OR_RETURN(
          ctx,
          weight.dtype == ScalarType::Float && weight.is_contiguous() && weight.dim == 2 && weight.sizes[0] == rows &&
              weight.sizes[1] == cols,
          Error::InvalidArgument,
          "argument 'weight' must be the filters transformed for Winograd: a contiguous Float tensor of sizes "
          "[%lld, %lld] (F(2x2, 3x3); [%lld, %lld] for F(4x4, 3x3)), got %s %s%s",
          static_cast<long long>(groups * winograd::positions(2)), static_cast<long long>(cols),
          static_cast<long long>(groups * winograd::positions(4)), static_cast<long long>(cols),
          to_string(weight.dtype), sizes_to_string(weight.size_span()).text, kRepack);
      packed_weight = weight.data_as<float>();
      break;
    }
    case conv::WeightLayout::PixelRows: {
      if (!kernel_dtype_selected(TagId::pixel_rows_kernel, ScalarType::Float)) {
        return detail::dtype_not_selected(ctx, tags::pixel_rows_kernel::name, ScalarType::Float);
      }
      const int64_t og = out_channels / groups;
      const int64_t depth = cg * kernel[0] * kernel[1];
      const int64_t cols = gemm::round_up(og, gemm::kPadCols);
      PARE_CHECK_OR_RETURN(
          ctx,
          weight.dtype == ScalarType::Float && weight.is_contiguous() && weight.dim == 3 && weight.sizes[0] == groups &&
              weight.sizes[1] == depth && weight.sizes[2] == cols,
          Error::InvalidArgument,
          "argument 'weight' must be the weights packed for pixel rows: a contiguous Float tensor of sizes "
          "[%lld, %lld, %lld], got %s %s%s",
          static_cast<long long>(groups), static_cast<long long>(depth), static_cast<long long>(cols),
          to_string(weight.dtype), sizes_to_string(weight.size_span()).text, kRepack);
      packed_weight = weight.data_as<float>();
      break;
    }
    case conv::WeightLayout::GemmA:
      PARE_TRY_ASSIGN(packed_weight,
                      packed_floats(ctx, weight, floats, "the convolution's weights packed as the GEMM's A"));
      break;
  }
  PARE_TRY_ASSIGN(bias, bias_floats(ctx, bias_tensor, out_channels));
  return Error::Ok;
}

namespace {

// A Winograd layer with output tile T, under the variant's tag:
// each_group(product) runs the product per (image, group) (see run()).
template <typename Tag, int T, typename EachGroup>
PARE_ALWAYS_INLINE Error run_winograd(KernelContext& ctx, const winograd::Geometry& wg, const Clamp& clamp,
                                      EachGroup& each_group) {
  return dispatch_as<Tag, float>(ctx, [&](auto) -> Error {
    PARE_TRY_ASSIGN(const winograd::Scratch scratch, winograd::allocate<T>(ctx, wg));
    return each_group([&](const float* image, float* c, const float* u, const float* group_bias, const float*) {
      winograd::run<T>(ctx, wg, scratch, image, u, group_bias, clamp.min, clamp.max, c);
    });
  });
}

}  // namespace

Error Conv2dPackedParams::run(KernelContext& ctx, const Tensor& input, Value& out, const Epilogue& epilogue) const {
  PARE_CHECK_OR_RETURN(ctx, input.dim == 4 || input.dim == 3, Error::InvalidShape,
                       "argument 'input' must be 3-D or 4-D, got sizes %s", sizes_to_string(input.size_span()).text);
  const bool batched = input.dim == 4;
  const int64_t channels = input.sizes[batched ? 1 : 0];
  PARE_CHECK_OR_RETURN(ctx, channels == in_channels, Error::InvalidShape,
                       "argument 'input' has %lld channels; the packed weights expect %lld",
                       static_cast<long long>(channels), static_cast<long long>(in_channels));
  conv::Geometry g = geometry(batched ? input.sizes[0] : 1, input.sizes[batched ? 2 : 1], input.sizes[batched ? 3 : 2]);
  PARE_TRY(conv::plan_output(ctx, &g, input.size_span(), /*weight_dim=*/4));
  int64_t sizes[4] = {g.batch, out_channels, g.out_h, g.out_w};
  PARE_TRY_ASSIGN(Tensor * result, ctx.allocate_output(out, ScalarType::Float,
                                                       batched ? IntArrayRef(sizes, 4) : IntArrayRef(sizes + 1, 3)));
  const bool channels_last = runs_channels_last(input);
  if (channels_last) set_channels_last_strides(*result);  // as PyTorch's convolution keeps the input's layout
  if (result->numel() == 0) return Error::Ok;
  if (channels_last) return run_channels_last(ctx, input, g.depthwise(), *result, epilogue);
  PARE_TRY_ASSIGN(const Tensor x, as_contiguous(ctx, input, ScalarType::Float));
  PARE_TRY_ASSIGN(const float* residual, epilogue.residual_data(ctx, *result));
  // The kernels apply the bias and, with no residual to add first, the
  // clamp as they store the output (gemm::Output): no pass of their own.
  const Clamp clamp = epilogue.product_clamp(/*adds_residual=*/false);
  const Epilogue after_product = epilogue.after_product(/*adds_residual=*/false);
  // The plan's algorithm. init accepts a layout only in a build that
  // selects its kernels, so with a link-time constant false each test
  // below folds away (no code for what the build cannot run).
  const conv::Algorithm algorithm = conv::choose_packed(g, layout);
  const int64_t og = g.og;
  const int64_t cg = g.cg;
  const int64_t k = g.k();
  const int64_t p = g.planes_out();
  const float* weights = packed_weight;
  if (algorithm == conv::Algorithm::Depthwise) {
    if (depthwise::selected(g.depthwise())) {
      PARE_TRY(depthwise::run_float(ctx, g.depthwise(), x.data_as<float>(), packed_weight, bias, 1, clamp.min,
                                    clamp.max, result->data_as<float>()));
      return after_product.apply(ctx, result->data_as<float>(), residual, static_cast<int64_t>(result->numel()));
    }
    // A runtime without this layer's depthwise loop (its tag unselected,
    // depthwise.h) runs the GEMM below instead, on the weights packed as
    // its A per group, here: slower, never an error. One block of depth
    // per group: k = K * K is at most 49.
    static_assert(gemm::kKC >= 7 * 7, "a depthwise layer's weights pack as one block of depth");
    const size_t a_floats = gemm::packed_a_size(og, k);
    PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(a_floats * static_cast<size_t>(groups) * sizeof(float)));
    float* packed = static_cast<float*>(memory);
    for (int64_t grp = 0; grp < groups; ++grp) {
      gemm::pack_a({packed_weight + grp * og * k, og, k, k, 1}, 0, og, 0, k,
                   packed + grp * static_cast<int64_t>(a_floats));
    }
    weights = packed;
  }
  const bool winograd2 = algorithm == conv::Algorithm::Winograd2 &&
                         kernel_dtype_selected(TagId::conv2d_winograd_kernel, ScalarType::Float);
  const bool winograd4 = algorithm == conv::Algorithm::Winograd4 &&
                         kernel_dtype_selected(TagId::conv2d_winograd4_kernel, ScalarType::Float);
  const bool pixel_rows =
      algorithm == conv::Algorithm::PixelRows && kernel_dtype_selected(TagId::pixel_rows_kernel, ScalarType::Float);
  const size_t group_floats = winograd2 || winograd4 ? winograd::packed_weight_floats(winograd2 ? 2 : 4, og, cg)
                              : pixel_rows           ? gemm::packed_b_size(k, og)
                                                     : gemm::packed_a_size(og, k);
  const bool pointwise = g.pointwise();
  const gemm::Im2ColGeometry im2col = g.im2col();
  // What the GEMMs apply as they store (the residual too), and what is
  // left after them.
  const Clamp gemm_clamp = epilogue.product_clamp(/*adds_residual=*/true);
  const Epilogue after_gemm = epilogue.after_product(/*adds_residual=*/true);
  // Runs product(image, c, a, group_bias, group_residual) per (image,
  // group): C [og, p] = A [og, k] B + group_bias, A's panels at `a`, then
  // the product's clamp as it stores C (product_clamp(adds_residual)) and
  // the rest of the epilogue afterwards, while the group's output is still
  // in cache. With adds_residual, the product adds group_residual itself.
  // Always inlined: each product's copy then lives with that product, so a
  // runtime whose selection drops the product drops the copy too (an
  // outlined copy shared by the rest cost the demo 484 B on android_arm64).
  auto each_group = [&](auto&& product, bool adds_residual = false) __attribute__((always_inline))->Error {
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t grp = 0; grp < groups; ++grp) {
        const float* image = x.data_as<float>() + g.group_input(n, grp);
        const int64_t offset = g.group_output(n, grp);
        float* c = result->data_as<float>() + offset;
        const float* group_bias = bias == nullptr ? nullptr : bias + grp * og;
        const float* group_residual = residual == nullptr ? nullptr : residual + offset;
        product(image, c, weights + grp * group_floats, group_bias, group_residual);
        if (adds_residual) {
          PARE_TRY(after_gemm.apply(ctx, c, nullptr, og * p));
        } else {
          PARE_TRY(after_product.apply(ctx, c, group_residual, og * p));
        }
      }
    }
    return Error::Ok;
  };
  if (winograd2 || winograd4) {
    const winograd::Geometry wg{cg, og, g.height, g.width, g.out_h, g.out_w, g.ph, g.pw};
    return winograd2 ? run_winograd<tags::conv2d_winograd_kernel, 2>(ctx, wg, clamp, each_group)
                     : run_winograd<tags::conv2d_winograd4_kernel, 4>(ctx, wg, clamp, each_group);
  }
  if (pixel_rows) {
    return dispatch_as<tags::pixel_rows_kernel, float>(ctx, [&](auto) -> Error {
      PARE_TRY_ASSIGN(const gemm::PixelRows rows, gemm::pixel_rows_scratch(ctx, p, og, k, /*pack_b=*/false));
      // Any other kernel than a plain 1x1 reads the image's im2col matrix
      // [k, p], materialised per (image, group) in scratch.
      float* columns = nullptr;
      if (!pointwise) {
        int64_t floats = 0;
        PARE_CHECK_OR_RETURN(ctx, !__builtin_mul_overflow(k, p, &floats) && floats <= kMaxDimension * kMaxDimension,
                             Error::InvalidShape, "the input is too large for this layer's im2col matrix (%lld x %lld)",
                             static_cast<long long>(k), static_cast<long long>(p));
        PARE_TRY_ASSIGN(void* memory, ctx.allocate_scratch(static_cast<size_t>(floats) * sizeof(float)));
        columns = static_cast<float*>(memory);
      }
      return each_group([&](const float* image, float* c, const float* w_t, const float* group_bias, const float*) {
        if (!pointwise) {
          gemm::im2col_matrix(image, im2col, cg, p, columns);
          image = columns;
        }
        gemm::pixel_rows(ctx, rows, p, og, k, image, gemm::PrepackedB{w_t, og}, c, group_bias, clamp.min, clamp.max);
      });
    });
  }
  if constexpr (fast_path_compiled<tags::gemm_narrow_kernel, float>()) {
    if (algorithm == conv::Algorithm::NarrowGemm) {  // 1x1, 1 to 4 pixels (gemm.h)
      return run_fast_path<tags::gemm_narrow_kernel, float>(ctx, [&]() -> Error {
        PARE_TRY_ASSIGN(void* scratch, ctx.allocate_scratch(gemm::narrow_scratch_floats(p, k) * sizeof(float)));
        return each_group(
            [&](const float* image, float* c, const float* a, const float* group_bias, const float* group_residual) {
              const gemm::Output out{1.0f,           /*accumulate=*/false, group_bias,    /*col_bias=*/nullptr,
                                     gemm_clamp.min, gemm_clamp.max,       group_residual};
              gemm::sgemm_narrow(og, p, k, a, {image, cg, p, p, 1}, c, p, out, static_cast<float*>(scratch));
            },
            /*adds_residual=*/true);
      });
    }
  }
  PARE_TRY_ASSIGN(const gemm::Split split, gemm::split_for(ctx, og, p, k, /*pack_a=*/false, /*pack_b=*/true));
  return each_group(
      [&](const float* image, float* c, const float* a_panels, const float* group_bias, const float* group_residual) {
        const gemm::PrepackedA a{a_panels, og};
        const gemm::Output out{1.0f,           /*accumulate=*/false, group_bias,    /*col_bias=*/nullptr,
                               gemm_clamp.min, gemm_clamp.max,       group_residual};
        if (pointwise) {
          // A 1x1 convolution is a plain GEMM with the image as B [cg, H*W].
          gemm::sgemm(ctx, split, og, p, k, a, gemm::StridedB{{image, cg, p, p, 1}}, c, p, out);
        } else {
          gemm::sgemm(ctx, split, og, p, k, a, gemm::Im2ColPanels{image, im2col}, c, p, out);
        }
      },
      /*adds_residual=*/true);
}

bool Conv2dPackedParams::runs_channels_last(const Tensor& input) const {
  // Link-time constants first: a runtime without the tag has no
  // channels-last code (init rejected HWIO weights there).
  if (!kernel_dtype_selected(TagId::conv2d_channels_last_kernel, ScalarType::Float)) return false;
  if (layout == conv::WeightLayout::DepthwiseHwio) return true;
  // A 1x1 layer's pixel rows on an input already channels-last (and not
  // also contiguous: then the NCHW path reads the same memory).
  return layout == conv::WeightLayout::PixelRows &&
         kernel_dtype_selected(TagId::pixel_rows_kernel, ScalarType::Float) && geometry(0, 0, 0).pointwise() &&
         input.dtype == ScalarType::Float && input.is_channels_last() && !input.is_contiguous();
}

Error Conv2dPackedParams::run_channels_last(KernelContext& ctx, const Tensor& input, const depthwise::Geometry& dims,
                                            Tensor& result, const Epilogue& epilogue) const {
  return dispatch_as<tags::conv2d_channels_last_kernel, float>(ctx, [&](auto) -> Error {
    // The input in channels-last order: as it is, or converted in scratch
    // (an HWIO depthwise layer given an NCHW input).
    PARE_TRY_ASSIGN(const Tensor nhwc, as_channels_last(ctx, input, ScalarType::Float));
    const float* x = nhwc.data_as<float>();
    PARE_TRY_ASSIGN(const float* residual, epilogue.residual_data(ctx, result));
    float* y = result.data_as<float>();
    const int64_t n = static_cast<int64_t>(result.numel());
    if (layout == conv::WeightLayout::DepthwiseHwio) {
      const Clamp clamp = epilogue.product_clamp(/*adds_residual=*/false);
      PARE_TRY(depthwise::run_float_nhwc(ctx, dims, x, packed_weight, bias, clamp.min, clamp.max, y));
      return epilogue.after_product(/*adds_residual=*/false).apply(ctx, y, residual, n);
    }
    // Pixel rows without the transposes: every image's pixels are rows of
    // the image matrix X [batch * H * W, in_channels], and per group C[:,
    // group's columns] = X[:, group's columns] W^T + bias, with the
    // residual and the clamp as the GEMM stores C (rows out_channels apart).
    // Under the pixel-rows layout's tag too, which init requires of these
    // weights: the tracing build records it here, so a model whose every
    // pixel-rows layer runs channels-last still selects it.
    return dispatch_as<tags::pixel_rows_kernel, float>(ctx, [&](auto) -> Error {
      const int64_t og = out_channels / groups;
      const int64_t cg = in_channels / groups;
      const int64_t rows = dims.batch * dims.out_h * dims.out_w;
      const Clamp clamp = epilogue.product_clamp(/*adds_residual=*/true);
      PARE_TRY_ASSIGN(const gemm::Split split, gemm::split_for(ctx, rows, og, cg, /*pack_a=*/true, /*pack_b=*/false));
      for (int64_t grp = 0; grp < groups; ++grp) {
        const gemm::Output out{1.0f,
                               /*accumulate=*/false,
                               /*row_bias=*/nullptr,
                               bias == nullptr ? nullptr : bias + grp * og,
                               clamp.min,
                               clamp.max,
                               residual == nullptr ? nullptr : residual + grp * og};
        gemm::sgemm(ctx, split, rows, og, cg, gemm::StridedA{{x + grp * cg, rows, cg, in_channels, 1}},
                    gemm::PrepackedB{packed_weight + grp * static_cast<int64_t>(gemm::packed_b_size(cg, og)), og},
                    y + grp * og, out_channels, out);
      }
      return epilogue.after_product(/*adds_residual=*/true).apply(ctx, y, nullptr, n);
    });
  });
}

}  // namespace classes
}  // namespace pare
