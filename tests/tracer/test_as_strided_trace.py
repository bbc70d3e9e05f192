"""aten::as_strided patterns no slice / permute / view expresses
(overlapping windows, repeated elements) and aten::unfold run as the
runtime's as_strided copy kernel (runtime/kernels/indexing/as_strided.cc)
when the input is contiguous, traced on the instrumentation runtime and
checked against torch; over other inputs they stay an error naming the
pattern."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from tracer_testlib import spec_from, spec_of

from tools.tracer import MissingOpsError, check_model, trace_model


def test_sliding_windows_are_traced_and_match_torch(tracing_lib, full_lib):
    result = trace_model(spec_of("sliding_windows"), runtime=tracing_lib)
    m = result.manifest
    assert "aten::as_strided" in m.operators and "aten::unfold" not in m.operators
    assert m.operators["aten::as_strided"].debug_info == ("tests/tracer/models/sliding_windows.py:forward",)
    assert "Float" in m.kernel_metadata["copy_kernel"]  # the windows are strided reads
    assert all(c.ok for c in result.checks)
    checks = check_model(spec_of("sliding_windows"), full_lib)
    assert len(checks) == 2 and all(c.ok for c in checks)  # batch 1 and 3 (a dynamic dim)


class _Windows(nn.Module):
    def __init__(self, size, stride, offset=None, transpose=False):
        super().__init__()
        self.args, self.transpose = (size, stride, offset), transpose

    def forward(self, x):
        y = x * 2
        return torch.as_strided(y.t() if self.transpose else y, *self.args) + 1


@pytest.mark.parametrize(
    "size,stride,offset",
    [
        ((3, 4), (2, 1), 0),  # overlapping windows
        ((4, 5), (0, 1), 2),  # one row repeated (stride 0), from an offset
        ((2, 2, 3), (3, 1, 1), None),
    ],
)
def test_overlapping_patterns_run_as_a_copy(full_lib, size, stride, offset):
    spec = spec_from(_Windows(size, stride, offset), [(torch.rand(10),)])
    assert all(c.ok for c in check_model(spec, full_lib))


def test_reading_past_the_input_is_still_refused(full_lib):
    # x[1:] is contiguous, but torch's windows would read x's storage
    # before it; the runtime has only the slice's elements.
    class Before(nn.Module):
        def forward(self, x):
            return torch.as_strided((x * 2)[2:], (3, 3), (1, 1), 1)

    with pytest.raises(MissingOpsError) as e:
        check_model(spec_from(Before(), [(torch.rand(10),)]), full_lib)
    assert "it starts before its input's first element" in str(e.value)


class _Unfold(nn.Module):
    def __init__(self, transpose: bool):
        super().__init__()
        self.transpose = transpose

    def forward(self, x):
        y = x * 2
        return (y.t() if self.transpose else y).unfold(0, 3, 1) + 1


def test_unfold_runs_as_a_copy_over_a_contiguous_input(full_lib):
    spec = spec_from(_Unfold(transpose=False), [(torch.rand(6, 4),)])
    assert all(c.ok for c in check_model(spec, full_lib))


def test_unfold_over_a_non_contiguous_input_is_refused(full_lib):
    with pytest.raises(MissingOpsError) as e:
        check_model(spec_from(_Unfold(transpose=True), [(torch.rand(6, 4),)]), full_lib)
    text = str(e.value)
    assert "aten::unfold (dim 0, size 3, step 1 over an input of size [4, 6], stride [1, 4])" in text
    assert "its input is not contiguous" in text
