"""The fold_linear_bn pass: an eval batch norm 1d after a linear layer
(addmm / mm) with a constant weight becomes that layer's weight and bias
(docs/tracer.md, "Graph passes"; what the folds share: batch_norm.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tools.tracer.passes.base import GraphPass, PassContext, argument, is_node
from tools.tracer.passes.batch_norm import batch_norms, foldable_affine, replace_batch_norm

if TYPE_CHECKING:
    import torch

NAME = "fold_linear_bn"


class FoldLinearBn(GraphPass):
    name = NAME
    description = "eval batch norm 1d after a linear (addmm/mm) with a constant weight -> that linear's weight and bias"

    def rewrite(self, context: PassContext) -> dict[str, int]:
        """addmm / mm on a constant weight (as nn.Linear lowers) -> batch norm 1d
        (a 2-d [batch, features] tensor: the features are its channels)."""
        import torch

        aten = torch.ops.aten
        folded = 0
        for bn, linear in batch_norms(context):
            if linear.target not in (aten.addmm.default, aten.mm.default):
                continue
            affine = foldable_affine(context, bn, linear)
            if affine is None:
                continue
            if linear.target is aten.addmm.default:
                if argument(linear, 3, "beta", 1) != 1 or argument(linear, 4, "alpha", 1) != 1:
                    continue
                bias, x, mat2 = linear.args[:3]
                bias_value = context.constant(bias)
                if bias_value is None or not bias_value.is_floating_point() or bias_value.dim() != 1:
                    continue
            else:
                (x, mat2), bias_value = linear.args[:2], None
            matrix = _constant_matrix(context, mat2)  # [in, out]
            if (
                matrix is None
                or matrix.shape[1] != affine.scale.numel()
                or (bias_value is not None and bias_value.numel() != matrix.shape[1])
            ):
                continue
            m64 = matrix.double() * affine.scale.reshape(1, -1)
            b64 = affine.shift if bias_value is None else bias_value.double() * affine.scale + affine.shift
            new_matrix = context.add_constant(m64.to(matrix.dtype).contiguous(), "linear_bn_weight")
            new_bias = context.add_constant(
                b64.to(matrix.dtype if bias_value is None else bias_value.dtype), "linear_bn_bias"
            )
            if linear.target is aten.addmm.default:
                linear.args = (new_bias, x, new_matrix, *linear.args[3:])
                result = linear
            else:  # mm has no bias: addmm adds the folded one
                with context.graph.inserting_before(linear):
                    result = context.graph.call_function(aten.addmm.default, (new_bias, x, new_matrix))
                result.meta = dict(linear.meta)
            replace_batch_norm(context, bn, affine, result)
            if result is not linear:
                context.graph.erase_node(linear)
            if is_node(mat2) and not mat2.users and mat2.op == "call_function":
                context.graph.erase_node(mat2)  # the transposition of the original weight
            folded += 1
        return {"folded": folded}


PASS = FoldLinearBn()


def _constant_matrix(context: PassContext, mat2: Any) -> torch.Tensor | None:
    """The [in, out] matrix `mat2` always holds: a constant, or a
    transposition of a 2-d constant (nn.Linear's weight.t())."""
    import torch

    aten = torch.ops.aten
    value = context.constant(mat2)
    if value is None and is_node(mat2) and mat2.args:
        source = context.constant(mat2.args[0])
        transposes = (
            source is not None
            and source.dim() == 2
            and (
                mat2.target is aten.t.default
                or (mat2.target is aten.transpose.int and {d % 2 for d in mat2.args[1:3]} == {0, 1})
                or (mat2.target is aten.permute.default and [d % 2 for d in mat2.args[1]] == [1, 0])
            )
        )
        if transposes:
            value = source.t()
    if value is None or value.dim() != 2 or not value.is_floating_point():
        return None
    return value
