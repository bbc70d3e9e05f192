"""Rewriting `aten::as_strided` into view ops the runtime has.

Pare's values are logical tensors: the runtime has no shared storage, so it
cannot run `as_strided`, whose meaning depends on the input's memory layout
in torch. torch.export emits it where a decomposition restores a memory
format, e.g. `adaptive_avg_pool2d` on a channels-last input (ConvNeXt's
LayerNorm-over-channels permutes) becomes `mean` then `as_strided` to
channels-last strides.

Such an `as_strided` re-views elements of its input. With the input's torch
layout (sizes, strides, offset from the exported graph's metadata) each
output dim of size > 1 that steps like an input dim of size > 1 (same stride)
is that input dim, or a slice of it; the storage offset picks the start of
every slice and the index of every input dim that is dropped. The rewrite is
then: slice per input dim, permute into the output's order, view to the
output's sizes. Anything else (an output dim no input dim steps like,
overlapping or out-of-range reads) has no such rewrite and is reported with
the pattern.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch.fx.experimental.symbolic_shapes import statically_known_true


@dataclass(frozen=True)
class Slice:
    dim: int
    start: int
    end: int


@dataclass(frozen=True)
class Permute:
    order: tuple[int, ...]


class NoViewRewrite(ValueError):
    """`as_strided` reads its input in a pattern slice/permute/view cannot express."""


def _equal(a: Any, b: Any) -> bool:
    return bool(statically_known_true(a == b))


def _is_one(size: Any) -> bool:
    return _equal(size, 1)


def _concrete(x: Any) -> int | None:
    try:
        return int(x)
    except (TypeError, ValueError, RuntimeError):  # an unbacked or free symbol
        return None


def as_strided_views(in_sizes, in_strides, in_offset, out_sizes, out_strides, out_offset) -> list:
    """The ops (Slice, Permute; a final view to `out_sizes` is implied) that
    turn the input into `as_strided(input, out_sizes, out_strides,
    out_offset)`; raises NoViewRewrite when there are none. Sizes and strides
    may be SymInts (dynamic dims); offsets must be known."""
    if len(in_sizes) != len(in_strides) or len(out_sizes) != len(out_strides):
        raise NoViewRewrite("sizes and strides differ in length")
    delta_in, delta_out = _concrete(in_offset), _concrete(out_offset)
    if delta_in is None or delta_out is None:
        raise NoViewRewrite("the storage offset is symbolic")
    delta = delta_out - delta_in
    if delta < 0:
        raise NoViewRewrite("it starts before the input's first element")
    in_dims = [d for d in range(len(in_sizes)) if not _is_one(in_sizes[d])]
    out_dims = [d for d in range(len(out_sizes)) if not _is_one(out_sizes[d])]
    if any(_equal(s, 0) for s in (*in_sizes, *out_sizes)):
        raise NoViewRewrite("a dim has size 0")

    # Match every output dim to an unused input dim that steps the same,
    # preferring one of the same size (a full dim, no slice).
    match: dict[int, int] = {}  # output dim -> input dim
    for o in out_dims:
        candidates = [i for i in in_dims if i not in match.values() and _equal(in_strides[i], out_strides[o])]
        full = [i for i in candidates if _equal(in_sizes[i], out_sizes[o])]
        if full:
            match[o] = full[0]
            continue
        fits = [i for i in candidates if _fits(out_sizes[o], in_sizes[i])]
        if not fits:
            raise NoViewRewrite(
                f"output dim {o} (size {out_sizes[o]}, stride {out_strides[o]}) steps like no input dim"
            )
        match[o] = fits[0]

    # The offset is where every input dim starts: decompose it over the
    # input's strides, largest first.
    start = {i: 0 for i in in_dims}
    if delta:
        strides = {i: _concrete(in_strides[i]) for i in in_dims}
        if any(s is None or s <= 0 for s in strides.values()):
            raise NoViewRewrite("an offset into an input with symbolic or non-positive strides")
        for i in sorted(in_dims, key=lambda i: -strides[i]):
            start[i], delta = divmod(delta, strides[i])
        if delta:
            raise NoViewRewrite("the storage offset falls between elements of the input")

    ops: list = []
    matched_input = {i: o for o, i in match.items()}
    for i in in_dims:
        length = out_sizes[matched_input[i]] if i in matched_input else 1
        full = start[i] == 0 and _equal(length, in_sizes[i])
        if full:
            continue
        size_i, length_i = _concrete(in_sizes[i]), _concrete(length)
        if size_i is None or length_i is None or start[i] + length_i > size_i:
            raise NoViewRewrite(f"it reads past the end of input dim {i}")
        ops.append(Slice(i, start[i], start[i] + length_i))
    order = [match[o] for o in out_dims]
    order += [d for d in range(len(in_sizes)) if d not in order]
    if order != sorted(order):
        ops.append(Permute(tuple(order)))
    return ops


def _fits(length: Any, size: Any) -> bool:
    length, size = _concrete(length), _concrete(size)
    return length is not None and size is not None and length <= size
