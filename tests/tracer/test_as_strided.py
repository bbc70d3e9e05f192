"""aten::as_strided rewritten into slice / permute / view (tools/tracer/strided.py).

torch.export emits as_strided where a decomposition restores a memory
format: ConvNeXt's adaptive_avg_pool2d on a channels-last tensor became
`mean` + `as_strided` and the tracer reported the op missing
(docs/model_zoo.md). The rewrite is checked three ways: on generated views
against torch.as_strided itself, end to end on the runtime, and on patterns
it must refuse.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from tracer_testlib import spec_from

from tools.tracer import MissingOpsError, check_model
from tools.tracer.strided import NoViewRewrite, Permute, Slice, as_strided_views


def _apply(x: torch.Tensor, steps, size) -> torch.Tensor:
    """What the program does with the rewrite, in torch ops on logical values."""
    for step in steps:
        if isinstance(step, Slice):
            x = x.narrow(step.dim, step.start, step.end - step.start)
        else:
            assert isinstance(step, Permute)
            x = x.permute(step.order)
    return x.reshape(size)


def _rewrite(x: torch.Tensor, size, stride, offset):
    return as_strided_views(x.shape, x.stride(), x.storage_offset(), size, stride, offset)


@st.composite
def _views(draw):
    """x: a non-contiguous view of a storage; (size, stride, offset): a view of x's elements."""
    rank = draw(st.integers(1, 4))
    base = torch.arange(1, 1 + 5**rank, dtype=torch.float64).reshape([5] * rank)
    order = draw(st.permutations(range(rank)))
    x = base.permute(order)
    starts = [draw(st.integers(0, 2)) for _ in range(rank)]
    x = x[tuple(slice(s, None) for s in starts)]
    # y: x permuted, sliced, with some dims selected away and unit dims added.
    y = x.permute(draw(st.permutations(range(rank))))
    for d in range(rank - 1, -1, -1):
        n = y.shape[d]
        start = draw(st.integers(0, n - 1))
        if draw(st.booleans()):
            y = y.select(d, start)
        else:
            y = y.narrow(d, start, draw(st.integers(1, n - start)))
    for _ in range(draw(st.integers(0, 2))):
        y = y.unsqueeze(draw(st.integers(0, y.dim())))
    return x, tuple(y.shape), tuple(y.stride()), y.storage_offset()


@settings(max_examples=300, deadline=None)
@given(_views())
def test_rewrite_reads_what_as_strided_reads(case):
    x, size, stride, offset = case
    expected = torch.as_strided(x, size, stride, offset)
    assert torch.equal(_apply(x, _rewrite(x, size, stride, offset), size), expected)


def test_channels_last_restride_is_a_plain_view():
    # ConvNeXt's pattern: mean over H, W of a channels-last tensor, restrided.
    x = torch.rand(2, 8, 1, 1)
    assert _rewrite(x, (2, 8, 1, 1), (8, 1, 8, 8), 0) == []
    x = torch.rand(2, 4, 5, 3)  # N, H, W, C, contiguous: channels-last storage
    steps = _rewrite(x, (2, 3, 4, 5), (60, 1, 15, 3), 0)  # the NCHW view of the same storage
    assert steps == [Permute((0, 3, 1, 2))]


@pytest.mark.parametrize(
    "size,stride,offset,why",
    [
        ((3, 3), (1, 1), 0, "steps like no input dim"),  # overlapping windows
        ((4, 5), (0, 1), 0, "steps like no input dim"),  # broadcast (stride 0)
        ((2, 5), (5, 1), 20, "reads past the end"),  # beyond the input
        ((2, 2), (5, 1), 2, None),  # a 2x2 block at [0, 2]: a slice
    ],
)
def test_patterns_that_are_not_views_are_refused(size, stride, offset, why):
    x = torch.rand(5, 5)
    if why is None:
        steps = _rewrite(x, size, stride, offset)
        assert torch.equal(_apply(x, steps, size), torch.as_strided(x, size, stride, offset))
        return
    with pytest.raises(NoViewRewrite, match=why):
        _rewrite(x, size, stride, offset)


class _ChannelsLastPool(nn.Module):
    """ConvNeXt's tail: LayerNorm over channels through permutes, then global average pooling."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.LayerNorm(8)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        y = self.norm(self.conv(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return self.pool(y).flatten(1)


def test_convnext_pattern_runs_on_the_runtime_and_matches_torch(full_lib):
    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    spec = spec_from(
        _ChannelsLastPool(), [(torch.rand(1, 3, 6, 6, generator=g),), (torch.rand(2, 3, 6, 6, generator=g),)]
    )
    assert all(c.ok for c in check_model(spec, full_lib))


class _Explicit(nn.Module):
    def __init__(self, size, stride, offset):
        super().__init__()
        self.args = (size, stride, offset)

    def forward(self, x):
        return torch.as_strided(x * 2, *self.args) + 1


def test_explicit_transpose_and_slice_match_torch(full_lib):
    spec = spec_from(_Explicit((3, 2), (1, 4), 1), [(torch.rand(2, 4),)])  # x[:, 1:].T
    assert all(c.ok for c in check_model(spec, full_lib))


class _ExplicitTransposed(_Explicit):
    def forward(self, x):
        return torch.as_strided((x * 2).t(), *self.args) + 1


def test_overlapping_windows_over_a_non_contiguous_input_are_reported_with_the_pattern_and_the_fix(full_lib):
    # Over a contiguous input they run as the runtime's as_strided copy
    # (tests/tracer/test_as_strided_trace.py); over a transposed one torch
    # reads the storage in an order the runtime's values do not keep.
    spec = spec_from(_ExplicitTransposed((3, 3), (1, 1), 0), [(torch.rand(4, 5),)])  # overlapping reads
    with pytest.raises(MissingOpsError) as e:
        check_model(spec, full_lib)
    text = str(e.value)
    assert "aten::as_strided (size [3, 3], stride [1, 1], offset 0 over an input of size [5, 4], stride [1, 5])" in text
    assert "its input is not contiguous" in text
    assert "express it with view, permute, narrow or select" in text
