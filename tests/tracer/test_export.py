"""export: grouping into methods, dynamic dims, lowering, prepacking, the
missing-op report. Checked on the program's structure (pare.program.read);
test_trace.py runs the programs."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from tracer_testlib import exported, spec_from, spec_of

from pare import packing
from pare import program as pp
from tests.runtime.runtime_testing import MutatedBuffers
from tools.tracer import MissingOpsError, TracerError, export_model, group_inputs


def ops_of(method: pp.MethodInfo) -> list[str]:
    return [ins.op for ins in method.instructions]


def method(info: pp.ProgramInfo, name: str) -> pp.MethodInfo:
    return next(m for m in info.methods if m.name == name)


def test_dynamic_batch_and_constants():
    info = pp.read(exported("tiny_mlp", passes="none").program)
    (m,) = info.methods
    assert m.name == "forward"
    (x,) = m.inputs
    assert m.values[x].describe() == "Tensor Float[?, 12]"  # the batch dim varies across inputs: any size
    # nn.Linear decomposes to addmm(bias, x, permute(weight)); the permute of a
    # constant is folded at export, so the runtime needs no permute kernel.
    assert ops_of(m) == [
        "aten::sym_size.int",
        "aten::addmm",
        "aten::relu",
        "aten::mul.Tensor",
        "aten::add.Tensor",
        "aten::addmm",
        "aten::_softmax",
    ]
    weights = [v for v in m.values if v.kind == pp.TENSOR and v.constant]
    assert sorted(v.sizes for v in weights) == [[5], [12, 24], [24], [24, 5]]  # weights transposed at export
    # The second output is the batch size: the sym_size.int instruction's int.
    assert m.values[m.outputs[1]].kind == pp.INT
    assert m.instructions[0].outputs == [m.outputs[1]]


def test_computed_view_size_becomes_minus_one_and_sym_size_feeds_the_other():
    info = pp.read(exported("reshape_dynamic").program)
    (m,) = info.methods
    views = [ins for ins in m.instructions if ins.op == "aten::view"]
    sizes = [m.values[v.inputs[1]].payload for v in views]
    sym = next(ins for ins in m.instructions if ins.op == "aten::sym_size.int").outputs[0]
    assert sizes == [[-1, 8], [f"%{sym}", 5, 6]]
    casts = [ins for ins in m.instructions if ins.op == "aten::_to_copy"]
    assert [m.values[c.inputs[1]].payload for c in casts] == [5, 6]  # ScalarType codes: Half, Float


def test_dtype_signatures_become_methods():
    spec = spec_of("multi_dtype")
    groups = group_inputs(spec)
    assert [(g.name, g.indices, g.dynamic_dims) for g in groups] == [
        ("forward", (0, 2), ((0,), (0,))),
        ("forward_int64_int64", (1,), ((), ())),
        ("forward_float64_float64", (3,), ((), ())),
    ]
    info = pp.read(exported("multi_dtype").program)
    assert [m.name for m in info.methods] == ["forward", "forward_int64_int64", "forward_float64_float64"]
    assert [
        method(info, "forward_int64_int64").values[i].describe() for i in method(info, "forward_int64_int64").inputs
    ] == ["Tensor Long[2, 4]"] * 2


def test_export_is_deterministic():
    first = exported("tiny_mlp").program
    again = export_model(spec_of("tiny_mlp")).program
    assert first == again


def test_prepack_rewrites_linear_onto_packed_weights():
    info = pp.read(exported("tiny_mlp").program)
    (m,) = info.methods
    assert m.num_init == 2
    assert ops_of(m)[:2] == ["pare::linear_prepack", "pare::linear_prepack"]
    assert ops_of(m).count("pare::linear_prepacked") == 2
    assert "aten::addmm" not in ops_of(m)
    # The [out, in] = [24, 12] nn.Linear weight, packed at export as the
    # GEMM's B (pare/packing.py): 12 depths x 24 columns padded to 32.
    w, _, in_features, out_features = (m.values[i] for i in m.instructions[0].inputs)
    assert w.constant and w.sizes == [packing.packed_b_size(12, 24)] == [384]
    assert (in_features.payload, out_features.payload) == (12, 24)


def test_prepack_rewrites_conv2d_and_leaves_non_constant_weights_alone():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, stride=2, padding=1)
            self.dw = nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False)

        def forward(self, x, w):
            y = self.dw(self.conv(x))
            return y, torch.nn.functional.conv2d(x, w)  # weight is an input: not prepackable

    torch.manual_seed(0)
    spec = spec_from(Net(), [(torch.rand(1, 3, 8, 8), torch.rand(2, 3, 3, 3))])
    with pytest.raises(MissingOpsError) as e:  # the second conv stays aten::convolution
        export_model(spec, inventory=_inventory_without("aten::convolution"))
    assert list(e.value.missing) == ["aten::convolution"]
    assert len(e.value.missing["aten::convolution"]) == 1


def _inventory_without(*ops):
    import dataclasses

    from tools.tracer import paths

    inv = paths.load_inventory()
    return dataclasses.replace(inv, ops={k: v for k, v in inv.ops.items() if k not in ops})


def test_prepacked_conv_program_structure():
    torch.manual_seed(0)
    conv = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.ReLU())
    spec = spec_from(conv, [(torch.rand(1, 3, 8, 8),), (torch.rand(2, 3, 8, 8),)])
    info = pp.read(export_model(spec).program)
    (m,) = info.methods
    assert ops_of(m) == ["pare::conv2d_prepack", "pare::conv2d_prepacked"]  # the relu fused (fuse_clamp)
    args = [m.values[i].payload for i in m.instructions[0].inputs[2:7]]
    assert args == [[2, 2], [1, 1], [1, 1], 1, [4, 3, 3, 3]]  # stride, padding, dilation, groups, weight sizes
    assert m.values[m.instructions[0].inputs[7]].payload == packing.LAYOUT_GEMM_A  # the layout, said not inferred
    weight = m.values[m.instructions[0].inputs[0]]  # packed at export: 4 rows padded to 6, depth 3 * 3 * 3
    assert weight.sizes == [packing.packed_a_size(4, 27)] == [162]
    assert weight.payload.tolist() == packing.pack_a(conv[0].weight.detach().reshape(4, 27).numpy()).tolist()
    assert m.values[m.instructions[0].outputs[0]].describe() == "Object Conv2dPackedParams"
    clamp = [m.values[i].payload for i in m.instructions[1].inputs[2:]]
    assert clamp == [0.0, float("inf")]  # output_min, output_max


def test_missing_ops_are_listed_with_counts_and_source_lines():
    with pytest.raises(MissingOpsError) as e:
        export_model(spec_of("missing_ops"))
    err = e.value
    assert sorted(err.missing) == ["aten::_linalg_det", "aten::special_bessel_j0"]
    assert len(err.missing["aten::special_bessel_j0"]) == 2
    lines = str(err).splitlines()
    assert "lacks 2 operators" in lines[0] and "add kernels" in lines[0]
    det = next(line for line in lines if "aten::_linalg_det" in line)
    assert "x1" in det and "missing_ops.py:9 `d = torch.linalg.det(x)`" in det
    bessel = next(line for line in lines if "special_bessel_j0" in line)
    assert "x2" in bessel and "missing_ops.py:10" in bessel and "missing_ops.py:11" in bessel


def test_missing_op_names_the_submodule_when_the_line_is_a_container_call():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(4, 4), nn.Softsign())

        def forward(self, x):
            return self.body(x)

    spec = spec_from(Block(), [(torch.rand(2, 4),)], name="block.py")
    with pytest.raises(MissingOpsError) as e:
        export_model(spec, inventory=_inventory_without("aten::abs"))
    assert "in body.1 (Softsign)" in str(e.value)


def test_scalar_bitwise_ops_and_prod_of_every_element_trace():
    """`i & 3` (and | ^) export as bitwise_*.Scalar and torch.prod(x) as
    aten::prod (the .default overload): the runtime has kernels for them, so
    no MissingOpsError, and the dtype= argument reaches the kernel."""

    class M(nn.Module):
        def forward(self, i, x):
            return (i & 3) | (i ^ 5), i | 1, torch.prod(x), torch.prod(i, dtype=torch.float64)

    spec = spec_from(M(), [(torch.tensor([[5, -6, 7]]), torch.rand(2, 3))])
    (m,) = pp.read(export_model(spec).program).methods
    assert sorted(ops_of(m)) == [
        "aten::bitwise_and.Scalar",
        "aten::bitwise_or.Scalar",
        "aten::bitwise_or.Tensor",
        "aten::bitwise_xor.Scalar",
        "aten::prod",
        "aten::prod",
    ]
    prods = [ins for ins in m.instructions if ins.op == "aten::prod"]
    assert [[m.values[a].payload for a in p.inputs[1:]] for p in prods] == [[], [7]]  # ScalarType code: Double
    ands = [ins for ins in m.instructions if ins.op == "aten::bitwise_and.Scalar"]
    assert [m.values[a].payload for a in ands[0].inputs[1:]] == [3]


def test_symint_arithmetic_is_reported_with_its_line():
    with pytest.raises(MissingOpsError) as e:
        export_model(spec_of("symint_arith"))
    (what,) = e.value.missing
    assert what.startswith("SymInt arithmetic `*` (operator.mul)")
    assert "symint_arith.py:10" in str(e.value) and "keep that dim static" in str(e.value)


def test_assertions_and_dead_code_are_dropped_and_layout_copies_elided():
    class M(nn.Module):
        def forward(self, x):
            unused = torch.relu(x) * 3  # noqa: F841 (dead: never reaches an output)
            y = (x + 1).clone().contiguous()
            return y.to(torch.float32), nn.functional.dropout(y, 0.5, training=False)

    spec = spec_from(M(), [(torch.rand(2, 3),), (torch.rand(5, 3),)])
    (m,) = pp.read(export_model(spec).program).methods
    assert ops_of(m) == ["aten::add.Tensor"]
    assert m.outputs[0] == m.outputs[1] == m.instructions[0].outputs[0]


def test_kwargs_defaults_and_dropped_device_arguments():
    class M(nn.Module):
        def forward(self, x):
            return x.to(dtype=torch.float64, device="cpu"), x.to(torch.int32).to(torch.bool)

    spec = spec_from(M(), [(torch.rand(2, 3),)])
    (m,) = pp.read(export_model(spec).program).methods
    casts = [ins for ins in m.instructions if ins.op == "aten::_to_copy"]
    assert len(casts) == 3
    args = [[m.values[a].payload if m.values[a].kind != pp.NONE else None for a in c.inputs[1:]] for c in casts]
    # dtype kept (ScalarType code), layout/device/pin_memory dropped; trailing defaults left to the kernel.
    assert args == [[7], [3], [11]]


def test_multi_output_ops_and_getitem():
    class M(nn.Module):
        def forward(self, x):
            a, b = torch.split(x, [1, 2], dim=1)
            return torch.relu(b), a

    spec = spec_from(M(), [(torch.rand(2, 3),)])
    (m,) = pp.read(export_model(spec).program).methods
    split = next(ins for ins in m.instructions if ins.op.startswith("aten::split"))
    items = m.values[split.outputs[0]].payload  # a Tensor[] of 2 tensor values
    assert len(items) == 2
    relu = next(ins for ins in m.instructions if ins.op == "aten::relu")
    assert relu.inputs == [items[1]] and m.outputs[1] == items[0]


def test_rank_mismatch_within_a_dtype_signature_is_a_user_error():
    spec = spec_from(nn.ReLU(), [(torch.rand(2, 3),), (torch.rand(2, 3, 4),)])
    with pytest.raises(TracerError, match="input 0 has different ranks .* same rank, or trace the variants"):
        group_inputs(spec)


def test_specialised_dynamic_dim_is_a_user_error():
    class Fixed(nn.Module):
        def forward(self, x):
            return x.view(2, 3) + 1  # only works for batch 2

    spec = spec_from(Fixed(), [(torch.rand(2, 3),), (torch.rand(4, 3),)])
    with pytest.raises(TracerError, match=r"input 0 dim 0 varies .*(specialised it to|torch.export failed)"):
        export_model(spec)


def test_unexportable_model_is_summarised():
    class DataDependent(nn.Module):
        def forward(self, x):
            if x.sum() > 0:  # data-dependent control flow
                return x + 1
            return x - 1

    spec = spec_from(DataDependent(), [(torch.rand(2, 3),)])
    with pytest.raises(TracerError, match="torch.export failed for method forward: .*--traceback"):
        export_model(spec)


def test_a_mutated_buffer_becomes_state():
    info = pp.read(export_model(spec_from(MutatedBuffers(), [(torch.rand(4),)])).program)
    assert info.version == (1, 2)
    (method,) = info.methods
    states = {name: (method.values[value], update, in_place) for name, value, update, in_place in method.states}
    assert set(states) == {"count", "history"}
    count, count_update, count_in_place = states["count"]
    assert count.constant and count.payload.tolist() == [0.0] and count_update is not None
    assert count_in_place  # add(count, 1) writes over count, which nothing reads later
    history, history_update, history_in_place = states["history"]
    assert history.payload.tolist() == [0.0] * 4 and history_update is not None
    # The old history is read after the new one is computed: written back by a copy.
    assert not history_in_place


def test_unsupported_dtype_is_a_user_error():
    # complex64 is Pare's one complex dtype (docs/complex.md); complex128 is not.
    class Complex(nn.Module):
        def forward(self, x):
            return torch.view_as_real(torch.view_as_complex(x) * 2)

    spec = spec_from(Complex(), [(torch.rand(3, 2, dtype=torch.float64),)])
    with pytest.raises(TracerError, match="complex128, which Pare does not support; use one of"):
        export_model(spec)


def test_ops_the_runtime_implements_are_not_decomposed():
    spec = spec_from(nn.Sequential(nn.Hardswish(), nn.Upsample(scale_factor=2.0)), [(torch.rand(1, 2, 4, 4),)])
    (m,) = pp.read(export_model(spec).program).methods
    assert ops_of(m) == ["aten::hardswish", "aten::upsample_nearest2d.vec"]
    # A runtime without hardswish gets torch's core-ATen decomposition instead.
    (m,) = pp.read(export_model(spec, inventory=_inventory_without("aten::hardswish")).program).methods
    assert "aten::hardswish" not in ops_of(m) and "aten::clamp" in ops_of(m)


@pytest.mark.parametrize(
    "index,expected",
    [
        (lambda x, i, j: x[:, i], ["aten::permute", "aten::index.Tensor", "aten::permute"]),
        (lambda x, i, j: x[i, :, j], ["aten::permute", "aten::index.Tensor"]),  # torch puts index dims first
        (lambda x, i, j: x[i], ["aten::index.Tensor"]),
    ],
)
def test_index_with_none_is_rewritten_without_none(index, expected):
    class M(nn.Module):
        def forward(self, x, i, j):
            return index(x, i, j)

    spec = spec_from(M(), [(torch.rand(3, 4, 5), torch.tensor([[0, 2], [1, 1]]), torch.tensor([4, 0]))])
    (m,) = pp.read(export_model(spec).program).methods
    assert ops_of(m) == expected
    lists = [m.values[ins.inputs[1]] for ins in m.instructions if ins.op == "aten::index.Tensor"]
    assert all(v.kind == pp.TENSOR_LIST for v in lists)
