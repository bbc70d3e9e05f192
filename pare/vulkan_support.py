"""Which graph nodes the Vulkan backend takes (docs/delegates.md, "The
Vulkan backend"): float32 tensors with static sizes but for at most one
dynamic dim that is a bare torch.export symbol, and per operator the
arguments its shaders run (pare/vulkan.py lowers what passes)."""

from __future__ import annotations

import functools
import math
import operator

from pare.vulkan_blob import MAX_NUMEL, MAX_RANK


def aten():
    import torch

    return torch.ops.aten


# --- which nodes it takes ----------------------------------------------------


def val(x):
    return x.meta.get("val") if hasattr(x, "meta") else None


def symbol(size):
    """The sympy symbol a SymInt size is, or None (a number, or an
    expression of symbols, which the backend does not take)."""
    import torch

    if not isinstance(size, torch.SymInt):
        return None
    expr = size.node.expr
    return expr if getattr(expr, "is_Symbol", False) else None


def static_float(val, max_rank=MAX_RANK) -> bool:
    """A float32 tensor whose sizes are numbers, but for at most one
    dynamic dim that is a bare symbol."""
    import torch

    if not isinstance(val, torch.Tensor) or val.dtype != torch.float32 or val.dim() > max_rank:
        return False
    dynamic = [s for s in val.shape if not isinstance(s, int)]
    if len(dynamic) > 1 or any(symbol(s) is None for s in dynamic):
        return False
    static = math.prod(s for s in val.shape if isinstance(s, int))
    return 1 <= static <= MAX_NUMEL


def tensor_args_ok(node, max_rank=MAX_RANK) -> bool:
    return all(static_float(val(a), max_rank) for a in node.args if hasattr(a, "meta"))


def number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(float(x))


def first_output_only(node) -> bool:
    """A node returning a tuple (max_pool2d_with_indices, native_layer_norm)
    whose only use is its first result."""
    return bool(node.users) and all(u.target is operator.getitem and u.args[1] == 0 for u in node.users)


@functools.lru_cache(maxsize=None)
def checks():
    a = aten()

    def out_ok(node, max_rank=MAX_RANK):
        return static_float(val(node), max_rank) and tensor_args_ok(node, MAX_RANK)

    def elementwise(node):
        if not out_ok(node, 4) or len(node.args) != 2:
            return False
        if set(node.kwargs) - {"alpha"} or not number(node.kwargs.get("alpha", 1)):
            return False
        x, y = node.args
        return hasattr(x, "meta") and (hasattr(y, "meta") or number(y)) and val(x).dim() <= 4

    def unary(node):
        return out_ok(node, 4) and len(node.args) == 1 and not node.kwargs

    def clamp(node):
        extra = node.args[1:]
        bounded = node.target is a.hardtanh.default or any(v is not None for v in extra)
        return (
            out_ok(node, 4)
            and not node.kwargs
            and len(extra) <= 2
            and bounded
            and all(v is None or number(v) for v in extra)
        )

    def gelu(node):
        return out_ok(node, 4) and len(node.args) == 1 and node.kwargs.get("approximate", "none") in ("none", "tanh")

    def mm(node):
        return out_ok(node) and not node.kwargs and val(node.args[0]).dim() == 2 and val(node.args[1]).dim() == 2

    def bmm(node):
        return out_ok(node) and not node.kwargs and val(node.args[0]).dim() == 3 and val(node.args[1]).dim() == 3

    def addmm(node):
        if not out_ok(node) or len(node.args) != 3 or not hasattr(node.args[0], "meta"):
            return False
        if not all(number(node.kwargs.get(k, 1)) for k in ("alpha", "beta")) or set(node.kwargs) - {"alpha", "beta"}:
            return False
        return val(node.args[0]).dim() <= 2

    def view(node):
        return out_ok(node)

    def permute(node):
        return out_ok(node, 4)

    def expand(node):
        return out_ok(node, 4) and not node.kwargs.get("implicit", False)

    def cat(node):
        tensors = node.args[0]
        dim = node.args[1] if len(node.args) > 1 else 0
        return (
            static_float(val(node), 4)
            and all(static_float(val(t), 4) for t in tensors)
            and all(val(t).dim() == val(node).dim() for t in tensors)
            and isinstance(dim, int)
        )

    def conv(node):
        x, w, b, stride, padding, dilation, transposed, output_padding, groups = node.args
        return (
            out_ok(node)
            and val(x).dim() == 4
            and not transposed
            and len(stride) == 2
            and len(padding) == 2
            and len(dilation) == 2
            and (b is None or hasattr(b, "meta"))
        )

    def avg_pool(node):
        args = list(node.args) + [None] * (7 - len(node.args))
        x, kernel, stride, padding, ceil_mode, _count, divisor = args
        return out_ok(node) and val(x).dim() == 4 and not ceil_mode and (divisor is None or divisor > 0)

    def max_pool(node):
        # max_pool2d_with_indices (its values alone read), or max_pool2d,
        # which the exporter keeps since the runtime has a kernel for it.
        args = list(node.args) + [None] * (6 - len(node.args))
        ceil_mode = args[5]
        with_indices = node.target is a.max_pool2d_with_indices.default
        result = val(node)[0] if with_indices else val(node)
        return (
            static_float(result)
            and val(node.args[0]).dim() == 4
            and not ceil_mode
            and (first_output_only(node) if with_indices else True)
        ) and static_float(val(node.args[0]))

    def adaptive(node):
        return out_ok(node) and val(node.args[0]).dim() == 4

    def mean(node):
        if not out_ok(node) or node.kwargs.get("dtype") is not None or len(node.args) < 2:
            return False
        return dim_run(node.args[1], val(node.args[0]).dim()) is not None

    def softmax(node):
        return out_ok(node) and len(node.args) == 3 and not node.args[2]

    def layer_norm(node):
        x, shape, weight, bias, _eps = node.args
        return (
            static_float(val(node)[0])
            and static_float(val(x))
            and first_output_only(node)
            and all(w is None or static_float(val(w)) for w in (weight, bias))
        )

    def sym_size(node):
        # Read from the symbol inside the partition; only when what uses it
        # (a view's size) goes to the device too.
        return (
            static_float(val(node.args[0]))
            and symbol(val(node)) is not None
            and all(u.target in table and table[u.target](u) for u in node.users)
        )

    table = {
        a.sym_size.int: sym_size,
        a.add.Tensor: elementwise,
        a.sub.Tensor: elementwise,
        a.mul.Tensor: elementwise,
        a.div.Tensor: elementwise,
        a.relu.default: unary,
        a.sigmoid.default: unary,
        a.silu.default: unary,
        a.hardswish.default: unary,
        a.hardtanh.default: clamp,
        a.clamp.default: clamp,
        a.gelu.default: gelu,
        a.mm.default: mm,
        a.bmm.default: bmm,
        a.addmm.default: addmm,
        a.view.default: view,
        a._unsafe_view.default: view,
        a.clone.default: view,
        a.alias.default: view,
        a.squeeze.dim: view,
        a.squeeze.dims: view,
        a.unsqueeze.default: view,
        a.permute.default: permute,
        a.transpose.int: permute,
        a.t.default: permute,
        a.expand.default: expand,
        a.cat.default: cat,
        a.convolution.default: conv,
        a.avg_pool2d.default: avg_pool,
        a.max_pool2d_with_indices.default: max_pool,
        a.max_pool2d.default: max_pool,
        a._adaptive_avg_pool2d.default: adaptive,
        a.mean.dim: mean,
        a._softmax.default: softmax,
        a._log_softmax.default: softmax,
        a.native_layer_norm.default: layer_norm,
    }
    return table


def dim_run(dims, rank):
    """(first, last) of `dims` when they are one run of adjacent dims."""
    if dims is None or len(dims) == 0:
        return (0, rank - 1) if rank > 0 else None
    norm = sorted(d % rank for d in dims)
    if norm != list(range(norm[0], norm[-1] + 1)):
        return None
    return norm[0], norm[-1]
