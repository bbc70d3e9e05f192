"""The fuse_attention pass: scaled-dot-product attention as eager PyTorch
writes it over a KV cache, `softmax(q K^T * scale + mask) V` (two
aten::bmm, a mul, an add and aten::_softmax over [batch, heads, S, L]
scores), becomes one pare::sdpa (runtime/kernels/nn/sdpa.cc: an online
softmax, no [S, L] scores, one pass over the cache per query row;
docs/llm.md, "Fused attention").

It plans at lowering time (base.GraphPass): it claims the view of the
second bmm's output back to [batch, heads, S, head_dim], so the scores, the
softmax and a mask nobody else reads drop out of the method. What it
proves before fusing:

* the scores are q [B, H, S, D] times the transposed keys [B, H, D, L], the
  weights times values [B, H, L, D], each through the expand / view to 3-d
  bmm operands torch.export writes (expands that change no size);
* keys and values are one [B, KVH, L, D] tensor each, or its grouped-query
  repeat (unsqueeze, expand over a new dim 2, view: repeat_interleave),
  query head h reading key / value head h / (H / KVH);
* the softmax is over the last dim of float32 scores, which are the
  product times a constant scale (or not scaled) plus a float32 mask of
  [S, L] (or no mask);
* a mask that is 0 where `arange(L)[None, :] <= p[:, None]` and -inf
  elsewhere (`where` of that comparison or its negation, the arange a
  constant) is causal over p: the kernel takes p as input_pos and reads
  only positions 0..p[i] of row i. Any other [S, L] mask is added as it is.

Anything else (a mask per head or batch, a scale that is a tensor, other
dtypes, an operand that is not such a view) is left to the unfused ops.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from tools.tracer.passes.base import GraphPass, LoweringState, calls, dtype_of, is_node, same_shape, shape_of
from tools.tracer.plans import Int8OpPlan, Plan

if TYPE_CHECKING:
    from torch.fx import Node

NAME = "fuse_attention"
OP = "pare::sdpa"


class FuseAttention(GraphPass):
    name = NAME
    description = (
        "q K^T * scale (+ mask), softmax, weights V over [batch, heads, S, L] scores (grouped-query "
        "keys and values too) -> pare::sdpa, an online softmax reading only the causal positions"
    )
    counters = ("fused", "causal")

    def plan(self, node: Node, lowering: LoweringState) -> Plan | None:
        match = match_attention(node, lowering)
        if match is None:
            return None
        q, k, v, mask, input_pos, scale = match
        deps = tuple(n for n in (q, k, v, mask, input_pos) if n is not None)
        counts = ((NAME, "fused"),) + (((NAME, "causal"),) if input_pos is not None else ())
        return Int8OpPlan(deps=deps, op=OP, args=(q, k, v, mask, input_pos, scale), counts=counts)


PASS = FuseAttention()


def _bmm_operand(node: Any, batch: tuple) -> Node | None:
    """The 4-d tensor [*batch, r, c] a 3-d bmm operand views: view(expand(x))
    with an expand that changes no size (or view(x))."""
    import torch

    aten = torch.ops.aten
    if not calls(node, aten.view.default, aten._unsafe_view.default, aten.reshape.default):
        return None
    x = node.args[0]
    if calls(x, aten.expand.default) and same_shape(shape_of(x), shape_of(x.args[0])):
        x = x.args[0]
    shape, flat = shape_of(x), shape_of(node)
    if shape is None or flat is None or len(shape) != 4 or len(flat) != 3:
        return None
    if not same_shape(shape[:2], batch) or not same_shape(shape[2:], flat[1:]):
        return None
    return x


def _kv(node: Any, batch: int, heads: int) -> tuple[Node, int] | None:
    """(the [B, KVH, L, D] tensor, KVH) whose heads, repeated as
    repeat_interleave does, are `node` [B, H, L, D]."""
    import torch

    aten = torch.ops.aten
    shape = shape_of(node)
    if shape is None or len(shape) != 4:
        return None
    x = node
    if calls(x, aten.view.default, aten._unsafe_view.default, aten.reshape.default):
        inner = x.args[0]
        if calls(inner, aten.clone.default) and inner.kwargs.get("memory_format") in (None, torch.contiguous_format):
            inner = inner.args[0]
        if not calls(inner, aten.expand.default) or not calls(inner.args[0], aten.unsqueeze.default):
            return None
        unsqueezed = inner.args[0]
        if unsqueezed.args[1] not in (2, -3):
            return None
        source = unsqueezed.args[0]
        s, e = shape_of(source), shape_of(inner)
        if s is None or e is None or len(s) != 4 or len(e) != 5:
            return None
        if not same_shape(e, (s[0], s[1], e[2], s[2], s[3])) or not same_shape((s[1] * e[2],), (shape[1],)):
            return None
        if not same_shape((s[0], s[2], s[3]), (shape[0], shape[2], shape[3])):
            return None
        x = source
    if dtype_of(x) != torch.float32:
        return None
    kv_heads = shape_of(x)[1]
    if not isinstance(kv_heads, int) or kv_heads <= 0 or heads % kv_heads:
        return None
    return x, kv_heads


def _transposed_keys(node: Any) -> Node | None:
    """k [B, H, L, D] where `node` is its transpose of the last two dims."""
    import torch

    aten = torch.ops.aten
    if calls(node, aten.transpose.int) and sorted(d % 4 for d in node.args[1:3]) == [2, 3]:
        return node.args[0]
    if calls(node, aten.permute.default) and [d % 4 for d in node.args[1]] == [0, 1, 3, 2]:
        return node.args[0]
    return None


def _scaled(node: Any) -> tuple[Node, float] | None:
    """(the unscaled scores, scale) for `node` = scores * constant (or scores)."""
    import torch

    aten = torch.ops.aten
    if calls(node, aten.mul.Tensor, aten.mul.Scalar):
        a, b = node.args[0], node.args[1]
        if is_node(a) and isinstance(b, (int, float)) and not isinstance(b, bool):
            return a, float(b)
        if is_node(b) and isinstance(a, (int, float)) and not isinstance(a, bool):
            return b, float(a)
        return None
    return node, 1.0


def _causal_positions(mask: Node, length: int, lowering: LoweringState) -> Node | None:
    """p [S] (int64) when `mask` [S, L] is 0 where arange(L)[None, :] <= p[:, None]
    and -inf elsewhere; else None."""
    import torch

    aten = torch.ops.aten
    if not calls(mask, aten.where.self):
        return None
    cond, a, b = mask.args[0], mask.args[1], mask.args[2]
    visible_if_true = True
    while calls(cond, aten.bitwise_not.default, aten.logical_not.default):
        cond, visible_if_true = cond.args[0], not visible_if_true
    if calls(cond, aten.le.Tensor):
        columns, rows = cond.args[0], cond.args[1]  # arange[None, :] <= p[:, None]: visible
    elif calls(cond, aten.gt.Tensor):
        columns, rows = cond.args[0], cond.args[1]  # arange[None, :] > p[:, None]: hidden
        visible_if_true = not visible_if_true
    elif calls(cond, aten.ge.Tensor):
        rows, columns = cond.args[0], cond.args[1]  # p[:, None] >= arange[None, :]: visible
    elif calls(cond, aten.lt.Tensor):
        rows, columns = cond.args[0], cond.args[1]  # p[:, None] < arange[None, :]: hidden
        visible_if_true = not visible_if_true
    else:
        return None
    zero, neg_inf = (a, b) if visible_if_true else (b, a)
    if _fill_value(zero, lowering) != 0.0 or _fill_value(neg_inf, lowering) != -math.inf:
        return None
    if not calls(columns, aten.unsqueeze.default) or columns.args[1] not in (0, -2):
        return None
    arange = columns.args[0]
    if not lowering.is_constant(arange):
        return None
    values = lowering.constants[arange]
    if values.dim() != 1 or values.numel() != length or not torch.equal(values.long(), torch.arange(length)):
        return None
    if not calls(rows, aten.unsqueeze.default) or rows.args[1] not in (1, -1):
        return None
    positions = rows.args[0]
    while calls(positions, aten.slice.Tensor) and _whole_slice(positions):
        positions = positions.args[0]
    shape = shape_of(positions)
    if dtype_of(positions) != torch.int64 or shape is None or len(shape) != 1:
        return None
    return positions


def _whole_slice(node: Node) -> bool:
    args = list(node.args) + [None] * (5 - len(node.args))
    dim, start, end, step = (args[1] or 0), (args[2] or 0), args[3], (args[4] or 1)
    return dim == 0 and start == 0 and step == 1 and (end is None or (isinstance(end, int) and end >= 2**62))


def _fill_value(node: Any, lowering: LoweringState) -> float | None:
    """The one value a tensor argument of where holds everywhere, or None."""
    import torch

    aten = torch.ops.aten
    if isinstance(node, (int, float)) and not isinstance(node, bool):
        return float(node)
    if lowering.is_constant(node):
        t = lowering.constants[node]
        if t.numel() > 0 and t.is_floating_point() and bool((t == t.flatten()[0]).all()):
            return float(t.flatten()[0])
        return None
    if calls(node, aten.scalar_tensor.default, aten.full.default, aten.full_like.default):
        value = node.args[0] if node.target is aten.scalar_tensor.default else node.args[1]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def match_attention(node: Node, lowering: LoweringState) -> tuple | None:
    """(q, k, v, mask, input_pos, scale) for pare::sdpa when `node` is the
    [B, H, S, D] view of attention's second bmm, as the module says; else
    None. Exactly one of mask and input_pos is a node when masked."""
    import torch

    aten = torch.ops.aten
    if not calls(node, aten.view.default, aten._unsafe_view.default, aten.reshape.default):
        return None
    out = shape_of(node)
    bmm = node.args[0]
    if not calls(bmm, aten.bmm.default) or out is None or len(out) != 4 or dtype_of(node) != torch.float32:
        return None
    batch = out[:2]
    weights = _bmm_operand(bmm.args[0], batch)
    values4 = _bmm_operand(bmm.args[1], batch)
    if weights is None or values4 is None or not same_shape(shape_of(bmm), (out[0] * out[1], out[2], out[3])):
        return None
    if not calls(weights, aten._softmax.default) or weights.args[1] not in (-1, 3) or weights.args[2]:
        return None
    logits = weights.args[0]
    if dtype_of(logits) != torch.float32:
        return None
    mask = None
    candidates = [(logits, None)]
    if calls(logits, aten.add.Tensor) and logits.kwargs.get("alpha", 1) == 1 and len(logits.args) == 2:
        a, b = logits.args
        candidates = [(a, b), (b, a)]
    for scaled, mask in candidates:
        split = _scaled(scaled)
        if split is not None and _scores_view(split[0]):
            break
    else:
        return None
    scores, scale = split
    if not same_shape(shape_of(scores), shape_of(logits)):
        return None  # the mask broadcasts the scores up
    first = scores.args[0]
    q = _bmm_operand(first.args[0], batch)
    kt = _bmm_operand(first.args[1], batch)
    k4 = _transposed_keys(kt) if kt is not None else None
    if q is None or k4 is None or dtype_of(q) != torch.float32:
        return None
    heads = out[1]
    if not isinstance(heads, int) or not isinstance(out[0], int):
        return None
    keys, values = _kv(k4, out[0], heads), _kv(values4, out[0], heads)
    if keys is None or values is None or keys[1] != values[1]:
        return None
    k, v = keys[0], values[0]
    length = shape_of(k)[2]
    if (
        not same_shape(shape_of(k), shape_of(v))
        or not isinstance(length, int)
        or not same_shape(shape_of(scores)[3:], (length,))
    ):
        return None
    if not same_shape(shape_of(q)[3:], (shape_of(k)[3],)) or not same_shape(shape_of(q)[3:], out[3:]):
        return None
    input_pos = None
    if mask is not None:
        mask_shape = shape_of(mask)
        if dtype_of(mask) != torch.float32 or not same_shape(mask_shape, (out[2], length)):
            return None
        input_pos = _causal_positions(mask, length, lowering)
        if input_pos is not None and not same_shape(shape_of(input_pos), (out[2],)):
            input_pos = None  # one position broadcast over the rows: the mask as it is
        if input_pos is not None:
            mask = None
    return q, k, v, mask, input_pos, scale


def _scores_view(node: Any) -> bool:
    import torch

    aten = torch.ops.aten
    return calls(node, aten.view.default, aten._unsafe_view.default, aten.reshape.default) and calls(
        node.args[0], aten.bmm.default
    )
