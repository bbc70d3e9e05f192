"""The fuse_norms pass: two elementwise chains of a Llama-style decoder,
as eager PyTorch writes them, become one op each (docs/llm.md, "Fused
norms and rotary embeddings"):

* RMSNorm, `x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w`
  (pow, mean over the last dim kept, add of a constant, rsqrt, two muls;
  the gain mul optional) -> pare::rms_norm(x, w, eps)
  (runtime/kernels/nn/rms_norm.cc: a row's sum of squares, then its scaled
  output, no [rows, 1] or [rows, D] intermediates);
* the rotary embedding of interleaved pairs, `torch.stack((x0 * cos - x1
  * sin, x0 * sin + x1 * cos), dim=-1)` over x0, x1 the two selects of a
  [..., P, 2] view (four muls, a sub, an add and the stack, or the cat of
  two unsqueezes it decomposes to; either operand order of each mul and of
  the add) -> pare::rope(pairs,
  cos, sin) (runtime/kernels/nn/rope.cc), cos and sin broadcast to the
  pairs' [..., P] as the muls broadcast them.

It plans at lowering time (base.GraphPass): it claims the chain's last node
(the gain mul, or the stack), so the intermediates nobody else reads drop out
of the method. Everything float32; anything else (another dtype, a norm over
another dim, an eps that is a tensor, cos and sin of another rank than the
pairs' [..., P]) is left to the unfused ops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tools.tracer.passes.base import GraphPass, LoweringState, calls, dtype_of, same_shape, shape_of
from tools.tracer.plans import Int8OpPlan, Plan

if TYPE_CHECKING:
    from torch.fx import Node

NAME = "fuse_norms"
RMS_NORM = "pare::rms_norm"
ROPE = "pare::rope"


class FuseNorms(GraphPass):
    name = NAME
    description = (
        "x * rsqrt(mean(x^2, -1) + eps) * w -> pare::rms_norm; the rotation of interleaved pairs "
        "(two selects, four muls, sub, add, cat) -> pare::rope"
    )
    counters = ("rms_norm", "rope")

    def plan(self, node: Node, lowering: LoweringState) -> Plan | None:
        norm = match_rms_norm(node)
        if norm is not None:
            x, weight, eps = norm
            deps = (x,) if weight is None else (x, weight)
            return Int8OpPlan(deps=deps, op=RMS_NORM, args=(x, weight, eps), counts=((NAME, "rms_norm"),))
        rope = match_rope(node)
        if rope is not None:
            return Int8OpPlan(deps=rope, op=ROPE, args=rope, counts=((NAME, "rope"),))
        return None


PASS = FuseNorms()


def _float32(*nodes: Any) -> bool:
    import torch

    return all(dtype_of(n) == torch.float32 for n in nodes)


def _scalar(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _normalized(node: Any) -> tuple[Node, float] | None:
    """(x, eps) when `node` is x * rsqrt(mean(pow(x, 2), [-1], True) + eps)."""
    import torch

    aten = torch.ops.aten
    if not calls(node, aten.mul.Tensor) or len(node.args) != 2:
        return None
    for x, r in (node.args, node.args[::-1]):
        if not calls(r, aten.rsqrt.default):
            continue
        add = r.args[0]
        if not calls(add, aten.add.Tensor, aten.add.Scalar) or add.kwargs.get("alpha", 1) != 1:
            continue
        eps = _scalar(add.args[1])
        mean = add.args[0]
        if eps is None or not calls(mean, aten.mean.dim) or len(mean.args) < 3 or mean.args[2] is not True:
            continue
        rank = len(shape_of(x) or ())
        if list(mean.args[1]) not in ([-1], [rank - 1]) or mean.kwargs.get("dtype") is not None:
            continue
        square = mean.args[0]
        if calls(square, aten.pow.Tensor_Scalar) and square.args[0] is x and square.args[1] == 2:
            return x, eps
    return None


def match_rms_norm(node: Node) -> tuple[Node, Node | None, float] | None:
    """(x, weight or None, eps) for pare::rms_norm when `node` ends an
    RMSNorm of float32 x over its last dim; else None. The gain mul is
    claimed when its other operand is a float32 [D] tensor; a norm without
    one is claimed at its x * rsqrt mul, unless a gain mul is its only reader
    (then that mul is claimed)."""
    import torch

    aten = torch.ops.aten
    if calls(node, aten.mul.Tensor) and len(node.args) == 2:
        for inner, weight in (node.args, node.args[::-1]):
            found = _normalized(inner)
            if found is None or not _float32(node, found[0], weight):
                continue
            x, eps = found
            d = (shape_of(x) or (None,))[-1]
            if _has_last_dim(x) and same_shape(shape_of(weight), (d,)) and same_shape(shape_of(node), shape_of(x)):
                return x, weight, eps
    found = _normalized(node)
    if found is None or not _float32(node, found[0]) or not _has_last_dim(found[0]):
        return None
    users = list(node.users)
    if len(users) == 1 and _claimed_gain(users[0], node):
        return None  # the gain mul after it is claimed instead
    return found[0], None, found[1]


def _has_last_dim(x: Any) -> bool:
    return len(shape_of(x) or ()) >= 1


def _claimed_gain(mul: Any, normalized: Node) -> bool:
    """`mul` is a gain mul of `normalized` that match_rms_norm claims."""
    return match_rms_norm(mul) is not None and normalized in mul.args


def _select(node: Any) -> tuple[Node, int] | None:
    """(the pairs view, which of the pair) for select(view, last dim, 0 or 1)."""
    import torch

    if not calls(node, torch.ops.aten.select.int):
        return None
    pairs, dim, index = node.args[:3]
    shape = shape_of(pairs)
    if shape is None or dim not in (-1, len(shape) - 1) or index not in (0, 1) or not same_shape(shape[-1:], (2,)):
        return None
    return pairs, index


def _products(node: Any) -> list[tuple[Node, int, Node]]:
    """(pairs, which, factor) for each way `node` = select(pairs, -1, which) * factor."""
    import torch

    if not calls(node, torch.ops.aten.mul.Tensor) or len(node.args) != 2:
        return []
    found = []
    for a, b in (node.args, node.args[::-1]):
        sel = _select(a)
        if sel is not None:
            found.append((sel[0], sel[1], b))
    return found


def _rotation(node: Any, op: Any) -> set[tuple[Node, Node, Node]]:
    """The (pairs, cos, sin) that make `node` x0 * cos - x1 * sin (op sub) or
    x0 * sin + x1 * cos (op add, either order)."""
    if not calls(node, op) or len(node.args) != 2 or node.kwargs.get("alpha", 1) != 1:
        return set()
    import torch

    orders = [node.args] if op is torch.ops.aten.sub.Tensor else [node.args, node.args[::-1]]
    found = set()
    for first, second in orders:
        for p0, w0, f0 in _products(first):
            for p1, w1, f1 in _products(second):
                if p0 is not p1 or (w0, w1) != (0, 1):
                    continue
                # sub: x0 * cos - x1 * sin; add: x0 * sin + x1 * cos.
                found.add((p0, f0, f1) if op is torch.ops.aten.sub.Tensor else (p0, f1, f0))
    return found


def match_rope(node: Node) -> tuple[Node, Node, Node] | None:
    """(pairs, cos, sin) for pare::rope when `node` stacks the rotated
    halves over a new last dim (aten::stack, or the cat of their
    unsqueezes that stack decomposes to); else None."""
    import torch

    aten = torch.ops.aten
    if not calls(node, aten.stack.default, aten.cat.default) or len(node.args[0]) != 2:
        return None
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    rank = len(shape_of(node) or ())
    if dim not in (-1, rank - 1):
        return None
    halves = list(node.args[0])
    if node.target is aten.cat.default:
        for i, u in enumerate(halves):
            if not calls(u, aten.unsqueeze.default) or u.args[1] not in (-1, rank - 1):
                return None
            halves[i] = u.args[0]
    both = _rotation(halves[0], aten.sub.Tensor) & _rotation(halves[1], aten.add.Tensor)
    for pairs, cos, sin in both:
        shape = shape_of(pairs)
        lead = shape[:-1] if shape is not None else None
        if not _float32(node, pairs, cos, sin) or not same_shape(shape_of(node), shape):
            continue
        if all(_broadcasts(shape_of(t), lead) for t in (cos, sin)):
            return pairs, cos, sin
    return None


def _broadcasts(shape: tuple | None, lead: tuple | None) -> bool:
    """`shape` broadcasts to `lead` at the same rank (each size equal or 1)."""
    if shape is None or lead is None or len(shape) != len(lead):
        return False
    return all(same_shape((s,), (t,)) or (isinstance(s, int) and s == 1) for s, t in zip(shape, lead))
