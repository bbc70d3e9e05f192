"""The fold_conv_bn pass: an eval batch norm after a convolution with a
constant weight becomes that convolution's weight and bias (docs/tracer.md,
"Graph passes"; what the folds share: batch_norm.py)."""

from __future__ import annotations

from tools.tracer.passes.base import GraphPass, PassContext, argument
from tools.tracer.passes.batch_norm import batch_norms, foldable_affine, replace_batch_norm

NAME = "fold_conv_bn"


class FoldConvBn(GraphPass):
    name = NAME
    description = "eval batch norm after a convolution with a constant weight -> that convolution's weight and bias"

    def rewrite(self, context: PassContext) -> dict[str, int]:
        """convolution (1-3d; grouped, depthwise, transposed) -> batch norm."""
        import torch

        folded = 0
        for bn, conv in batch_norms(context):
            if conv.target is not torch.ops.aten.convolution.default:
                continue
            affine = foldable_affine(context, bn, conv)
            weight, bias = context.constant(argument(conv, 1, "weight")), argument(conv, 2, "bias")
            bias_value = context.constant(bias) if bias is not None else None
            transposed, groups = argument(conv, 6, "transposed"), argument(conv, 8, "groups")
            if (
                affine is None
                or weight is None
                or not weight.is_floating_point()
                or weight.dim() < 3
                or (bias is not None and (bias_value is None or not bias_value.is_floating_point()))
                or not isinstance(groups, int)
                or not isinstance(transposed, bool)
            ):
                continue
            # A weight element's output channel: dim 0 of [out, in/groups, k...];
            # transposed, the weight is [in, out/groups, k...] and its rows of
            # group g (g*in/groups onwards) feed outputs g*out/groups + dim 1.
            out_channels = weight.shape[1] * groups if transposed else weight.shape[0]
            if out_channels != affine.scale.numel():
                continue
            kernel = [1] * (weight.dim() - 2)
            w64 = weight.double()
            if transposed:
                grouped = w64.reshape(groups, weight.shape[0] // groups, *weight.shape[1:])
                w64 = (grouped * affine.scale.reshape(groups, 1, weight.shape[1], *kernel)).reshape(weight.shape)
            else:
                w64 = w64 * affine.scale.reshape(-1, 1, *kernel)
            b64 = affine.shift if bias_value is None else bias_value.double() * affine.scale + affine.shift
            new_weight = context.add_constant(w64.to(weight.dtype).contiguous(), "conv_bn_weight")
            new_bias = context.add_constant(
                b64.to(weight.dtype if bias_value is None else bias_value.dtype), "conv_bn_bias"
            )
            args = list(conv.args)
            args[1:3] = [new_weight, new_bias]
            conv.args = tuple(args)
            replace_batch_norm(context, bn, affine, conv)
            folded += 1
        return {"folded": folded}


PASS = FoldConvBn()
