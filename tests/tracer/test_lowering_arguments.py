"""Optional and list arguments round-trip through the program format.

The tracer leaves trailing arguments that have defaults to the kernel, so
programs do not depend on how many optional arguments a PyTorch version
spells out. An argument *without* a default is always written, None
included: `upsample_bilinear2d.vec(input, output_size?, align_corners,
scale_factors?)` with only a size given ends in a None the kernel counts on
(found on torchvision's LR-ASPP and DeepLabV3, docs/model_zoo.md).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from tracer_testlib import spec_from

from pare import program as pp
from tools.tracer import check_model, paths
from tools.tracer.exporter import export_model


def _overload(name: str) -> torch._ops.OpOverload:
    base, _, overload = name[len("aten::") :].partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def _required_optional_last() -> set[str]:
    """Runtime operators whose last positional argument is optional with no default."""
    found = set()
    for name in paths.load_inventory().ops:
        if not name.startswith("aten::"):
            continue
        positional = [a for a in _overload(name)._schema.arguments if not a.kwarg_only]
        last = positional[-1]
        if str(last.type).startswith("Optional[") and not last.has_default_value():
            found.add(name)
    return found


# Each operator found by the audit, with a model reaching it with that argument None.
CASES = {
    "aten::_cdist_forward": lambda x: torch.cdist(x.flatten(2), x.flatten(2) + 1),  # compute_mode=None
    "aten::upsample_bilinear2d.vec": lambda x: F.interpolate(x, size=(7, 5), mode="bilinear", align_corners=False),
    "aten::upsample_nearest2d.vec": lambda x: F.interpolate(x, size=(6, 9), mode="nearest"),
}


def test_audit_every_operator_with_a_required_optional_last_argument_has_a_case():
    assert _required_optional_last() == set(CASES), (
        "an operator's last argument is optional without a default: add it to CASES so a test proves its None "
        "round-trips"
    )


class _Apply(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


@pytest.mark.parametrize("op", sorted(CASES))
def test_required_none_is_written_and_the_kernel_runs_it(op, full_lib):
    g = torch.Generator().manual_seed(3)
    spec = spec_from(_Apply(CASES[op]), [(torch.rand(2, 3, 4, 4, generator=g),)])
    (method,) = pp.read(export_model(spec).program).methods
    (call,) = [ins for ins in method.instructions if ins.op == op]
    assert len(call.inputs) == len(_overload(op)._schema.arguments)  # the trailing None is in the program
    assert method.values[call.inputs[-1]].kind == pp.NONE
    assert all(c.ok for c in check_model(spec, full_lib))


def test_scale_factor_form_still_matches_torch(full_lib):
    spec = spec_from(
        _Apply(lambda x: F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=True)),
        [(torch.rand(1, 2, 3, 5, generator=torch.Generator().manual_seed(4)),)],
    )
    assert all(c.ok for c in check_model(spec, full_lib))
