"""Plans for the ops lowering rewrites into others before the runtime sees
them (lowering.REWRITES; docs/tracer.md, "Lowering"): index.Tensor with
None entries, as_strided (tools/tracer/strided.py works out the views),
unfold, and max_pool2d_with_indices without a reader of its indices. Each
returns a plan (tools/tracer/plans.py) for lowering to emit."""

from __future__ import annotations

import operator
from collections.abc import Callable

import torch
from torch.fx import Node
from torch.fx.experimental.symbolic_shapes import is_concrete_int, statically_known_true

from tools.tracer.nodes import nodes_in
from tools.tracer.plans import (
    AsStridedCopy,
    AsStridedViews,
    IndexWithNone,
    InputSize,
    MaxPoolValues,
    OpPlan,
    Plan,
    Unsupported,
)
from tools.tracer.strided import NoViewRewrite, as_strided_views

aten = torch.ops.aten


def max_pool_values_plan(node: Node, fuse: Callable[[Node, Node], None]) -> Plan | None:
    """nn.MaxPool2d without return_indices exports as
    max_pool2d_with_indices and a getitem of its values: where that is all
    that reads it, aten::max_pool2d (the same arguments) computes no
    indices, stores none and plans no memory for them. `fuse(getitem,
    node)` makes each getitem pass the values on. None: the indices are
    read (or the tuple is), so the op stays."""
    users = list(node.users)
    if not users or not all(u.target is operator.getitem and u.args[1] == 0 for u in users):
        return None
    for user in users:
        fuse(user, node)
    kwargs = dict(node.kwargs)
    return MaxPoolValues(deps=tuple(nodes_in((node.args, kwargs))), args=tuple(node.args), kwargs=kwargs)


def index_with_none_plan(node: Node) -> Plan:
    """x[:, i, j] is index.Tensor(x, [None, i, j]); the program format has
    no None inside a tensor list, so it becomes permute (indexed dims
    first), index.Tensor without None, and a permute putting the index
    dims where torch puts them (at the first indexed dim when the indexed
    dims are adjacent, else first)."""
    x, indices = node.args[0], list(node.args[1])
    rank = x.meta["val"].dim()
    indexed = [d for d, i in enumerate(indices) if i is not None]
    rest = [d for d in range(rank) if d not in indexed]
    index_rank = max(i.meta["val"].dim() if isinstance(i, Node) else 0 for i in indices if i is not None)
    before = indexed[0] if indexed == list(range(indexed[0], indexed[-1] + 1)) else 0
    after = (
        [index_rank + d for d in range(before)]
        + list(range(index_rank))
        + list(range(index_rank + before, index_rank + len(rest)))
    )
    tensors = tuple(i for i in indices if i is not None)
    return IndexWithNone(
        deps=(x, *[t for t in tensors if isinstance(t, Node)]), order=indexed + rest, tensors=tensors, after=after
    )


def as_strided_plan(node: Node) -> Plan:
    """as_strided re-viewing its input's elements becomes slice, permute
    and view (tools/tracer/strided.py). Any other pattern (overlapping
    windows, as unfold makes; repeated elements) over an input that is
    contiguous in torch runs as the runtime's aten::as_strided, a copy of
    the window, whose storage is its input's elements in row-major order
    (runtime/kernels/indexing/as_strided.cc): torch's storage from the
    input's first element on. Over any other input the pattern is
    reported as unsupported, naming it."""
    x = node.args[0]
    source, result = (x.meta.get("val") if isinstance(x, Node) else None), node.meta.get("val")
    if not isinstance(source, torch.Tensor) or not isinstance(result, torch.Tensor):
        return Unsupported(what="aten::as_strided on a value without shape metadata")
    try:
        steps = as_strided_views(
            source.shape,
            source.stride(),
            source.storage_offset(),
            result.shape,
            result.stride(),
            result.storage_offset(),
        )
    except NoViewRewrite as e:
        why = _as_strided_copy_refused(source, result)
        if why is None:
            return _as_strided_copy_plan(node, source, result)
        return Unsupported(
            what=(
                f"aten::as_strided (size {_shape_text(result.shape)}, stride {_shape_text(result.stride())}, "
                f"offset {result.storage_offset()} over an input of size {_shape_text(source.shape)}, stride "
                f"{_shape_text(source.stride())}): {e}, so it is no slice/permute/view of its input, and "
                f"{why}, so Pare cannot run it as a copy either; express it with view, permute, narrow or "
                "select in the model, or make its input contiguous (.contiguous())"
            ),
        )
    sizes = infer_computed_size(node.args[1])
    return AsStridedViews(deps=(x, *nodes_in(sizes)), steps=steps, sizes=sizes)


def _as_strided_copy_plan(node: Node, source: torch.Tensor, result: torch.Tensor) -> Plan:
    """aten::as_strided as the runtime's copy kernel: the graph's sizes and
    strides, the storage offset made relative to the input's first element
    (torch's is absolute; None means the input's own)."""
    x, sizes, strides = node.args[0], node.args[1], node.args[2]
    offset = int(result.storage_offset()) - int(source.storage_offset())
    args = (x, list(sizes), list(strides)) + ((offset,) if offset else ())
    return OpPlan(deps=tuple(nodes_in(args)), args=args, kwargs={})


def unfold_plan(node: Node) -> Plan:
    """x.unfold(dim, size, step) (sliding windows, a core ATen view the
    runtime has no kernel for) runs as the runtime's aten::as_strided
    copy with the window's sizes and strides from the graph's metadata,
    when its input is contiguous. A dynamic dim other than the unfolded
    one keeps its size, read from the input with sym_size.int."""
    x, dimension = node.args[0], node.args[1]
    source, result = (x.meta.get("val") if isinstance(x, Node) else None), node.meta.get("val")
    if not isinstance(source, torch.Tensor) or not isinstance(result, torch.Tensor):
        return Unsupported(what="aten::unfold on a value without shape metadata")
    rank = source.dim()
    unfolded = dimension % rank if rank else 0
    why = _as_strided_copy_refused(source, result)
    sizes: list = []
    for i, n in enumerate(result.shape):
        if is_concrete_int(n):
            sizes.append(int(n))
        elif i < rank and i != unfolded:
            sizes.append(InputSize(i))
        else:
            why = why or f"the number of windows along dim {unfolded} is dynamic"
    if why is None and not all(is_concrete_int(st) for st in result.stride()):
        why = "its strides are dynamic"
    if why is not None:
        return Unsupported(
            what=(
                f"aten::unfold (dim {dimension}, size {node.args[2]}, step {node.args[3]} over an input of "
                f"size {_shape_text(source.shape)}, stride {_shape_text(source.stride())}): {why}, so Pare "
                "cannot run it as a copy of the windows; make its input contiguous (.contiguous()) or keep "
                "that dim static"
            ),
        )
    return AsStridedCopy(deps=(x,), sizes=sizes, strides=[int(st) for st in result.stride()])


def infer_computed_size(sizes) -> list:
    computed = [i for i, s in enumerate(sizes) if isinstance(s, Node) and s.target is not aten.sym_size.int]
    if len(computed) == 1 and not any(isinstance(s, int) and s == -1 for s in sizes):
        sizes = list(sizes)
        sizes[computed[0]] = -1
    return list(sizes)


def _as_strided_copy_refused(source: torch.Tensor, result: torch.Tensor) -> str | None:
    """Why the runtime's as_strided (a copy over its input's elements in
    row-major order) would not read what torch's reads, or None when it
    would: the input must be contiguous, and the window must start at or
    after its first element and end before its last (torch may read the
    storage around a view; the runtime has only the view's elements)."""
    try:
        contiguous = bool(statically_known_true(source.is_contiguous()))
    except Exception:  # symbolic strides torch cannot decide
        contiguous = False
    if not contiguous:
        return "its input is not contiguous"
    if not (is_concrete_int(result.storage_offset()) and is_concrete_int(source.storage_offset())):
        return "its storage offset is symbolic"
    offset = int(result.storage_offset()) - int(source.storage_offset())
    if offset < 0:
        return "it starts before its input's first element"
    values = (*result.shape, *result.stride(), *source.shape)
    if all(is_concrete_int(v) for v in values) and all(int(n) > 0 for n in result.shape):
        last = offset + sum((int(n) - 1) * int(s) for n, s in zip(result.shape, result.stride()))
        if last >= source.numel():
            return "it reads past its input's last element"
    # Dynamic sizes: the runtime checks the bounds on every run.
    return None


def _shape_text(dims) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"
