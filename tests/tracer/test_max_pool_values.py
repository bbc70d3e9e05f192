"""Max pooling whose indices nothing reads runs as aten::max_pool2d, which
computes no indices: nn.MaxPool2d and F.max_pool2d export as it (the
exporter keeps ops the runtime has kernels for), and a
max_pool2d_with_indices whose values alone are read lowers to it
(tools/tracer/view_rewrites.py, max_pool_values_plan); where the model
reads the indices the op stays. Traced on the instrumentation runtime and
checked against torch."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from tracer_testlib import spec_from

from tools.tracer import check_model, trace_model


class _Pools(nn.Module):
    """A 2x2 pool and ResNet's stem pool (ceil_mode, padding), values only."""

    def forward(self, x):
        y = F.max_pool2d(x * 2, 2)
        return F.max_pool2d(y, 3, stride=2, padding=1, ceil_mode=True) + 1, y.sum()


class _WithIndices(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(2, return_indices=True)

    def forward(self, x):
        values, indices = self.pool(x)
        return values * 2, indices


class _ValuesOfWithIndices(nn.Module):
    """return_indices=True, its indices dropped: the graph keeps
    max_pool2d_with_indices and reads its values alone."""

    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(3, stride=2, padding=1, return_indices=True)

    def forward(self, x):
        values, _ = self.pool(x * 2)
        return values + 1


def _inputs():
    generator = torch.Generator().manual_seed(5)
    return [(torch.randn(1, 3, 9, 12, generator=generator),), (torch.randn(2, 3, 9, 12, generator=generator),)]


def test_pools_whose_indices_nothing_reads_compute_none(tracing_lib, full_lib):
    spec = spec_from(_Pools(), _inputs())
    result = trace_model(spec, runtime=tracing_lib)
    operators = result.manifest.operators
    assert "aten::max_pool2d" in operators and "aten::max_pool2d_with_indices" not in operators
    assert all(c.ok for c in result.checks)
    # The 2x2 pool traces its own loop; the stem pool the general one.
    assert result.manifest.kernel_metadata["max_pool2d_2x2_kernel"] == ("Float",)
    assert result.manifest.kernel_metadata["max_pool2d_kernel"] == ("Float",)
    checks = check_model(spec, full_lib)
    assert len(checks) == 2 and all(c.ok for c in checks)


@pytest.mark.parametrize(
    "module, kept, dropped",
    [
        # Read indices keep the op that returns them.
        (_WithIndices, "aten::max_pool2d_with_indices", "aten::max_pool2d"),
        # max_pool2d_with_indices whose values alone are read lowers to max_pool2d.
        (_ValuesOfWithIndices, "aten::max_pool2d", "aten::max_pool2d_with_indices"),
    ],
)
def test_the_pool_op_follows_what_is_read(tracing_lib, full_lib, module, kept, dropped):
    spec = spec_from(module(), _inputs())
    result = trace_model(spec, runtime=tracing_lib)
    operators = result.manifest.operators
    assert kept in operators and dropped not in operators
    checks = check_model(spec, full_lib)
    assert len(checks) == 2 and all(c.ok for c in checks)
