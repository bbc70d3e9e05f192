"""trace and check on real runtimes: the manifest's content, determinism,
numerics against torch, dynamic shapes at sizes never exported, several
dtype methods, and numeric mismatches."""

from __future__ import annotations

import pytest
import torch
import yaml
from torch import nn
from torchgen.selective_build.selector import SelectiveBuilder  # torch's wheel
from tracer_testlib import exported, spec_from, spec_of

import codegen
from pare.program import read as read_program
from pare.runtime import Runtime
from tools.tracer import NumericMismatchError, TracerError, check_model, trace_model
from tools.tracer import passes as graph_passes
from tools.tracer.numerics import Tolerance
from tools.tracer.paths import load_inventory
from tools.tracer.runner import to_numpy_input


@pytest.fixture(scope="module")
def mlp_trace(tracing_lib):
    return trace_model(spec_of("tiny_mlp"), runtime=tracing_lib, passes="none")


def test_trace_writes_what_the_runtime_executed(mlp_trace):
    m = mlp_trace.manifest
    assert list(m.operators) == [
        "aten::_softmax",
        "aten::add.Tensor",
        "aten::addmm",
        "aten::mul.Tensor",
        "aten::relu",
        "aten::sym_size.int",
    ]
    for op in m.operators.values():
        assert op.is_root_operator and not op.is_used_for_training and not op.include_all_overloads
        assert op.debug_info == ("tests/tracer/models/tiny_mlp.py:forward",)
    assert m.kernel_metadata["mm_kernel"] == ("Float",)
    assert m.kernel_metadata["softmax_kernel"] == ("Float",)
    assert set(m.kernel_metadata) >= {"add_kernel", "mul_kernel", "relu_kernel"}
    assert not m.include_all_operators and not m.include_all_non_op_selectives
    # Greedy by size lays the MLP's arena out smaller than first fit: the runtime keeps that layout. Its two input
    # shapes (batch 1 and 3) need a plan each: dynamic_shapes.
    assert m.custom_classes == frozenset() and m.build_features == frozenset({"dynamic_shapes", "greedy_planner"})
    (info,) = m.debug_info
    assert '"model": "tests/tracer/models/tiny_mlp.py"' in info and '"passes": []' in info
    assert [c.ok for c in mlp_trace.checks] == [True, True]


def test_manifest_text_is_canonical_and_round_trips(mlp_trace):
    text = mlp_trace.manifest.dump()
    data = yaml.safe_load(text)
    assert list(data) == [
        "include_all_operators",
        "include_all_non_op_selectives",
        "debug_info",
        "operators",
        "kernel_metadata",
        "custom_classes",
        "build_features",
    ]
    assert codegen.loads(text).dump() == text


def test_trace_is_byte_identical_across_runs(mlp_trace, tracing_lib):
    again = trace_model(spec_of("tiny_mlp"), runtime=tracing_lib, passes="none")
    assert again.manifest.dump() == mlp_trace.manifest.dump()


def test_prepack_trace_selects_the_class(tracing_lib):
    m = trace_model(spec_of("tiny_mlp"), runtime=tracing_lib).manifest
    assert m.custom_classes == frozenset({"LinearPackedParams"})
    assert {"pare::linear_prepack", "pare::linear_prepacked"} <= set(m.operators)
    assert "aten::addmm" not in m.operators
    assert m.kernel_metadata["prepacked_kernel"] == ("Float",)


def test_several_dtype_methods_record_every_dtype(tracing_lib):
    result = trace_model(spec_of("multi_dtype"), runtime=tracing_lib)
    m = result.manifest
    assert m.kernel_metadata["add_kernel"] == ("Double", "Float", "Long")
    assert m.kernel_metadata["relu_kernel"] == ("Double", "Float", "Long")
    assert m.operators["aten::relu"].debug_info == (
        "tests/tracer/models/multi_dtype.py:forward",
        "tests/tracer/models/multi_dtype.py:forward_int64_int64",
        "tests/tracer/models/multi_dtype.py:forward_float64_float64",
    )
    assert [(c.index, c.method) for c in result.checks] == [
        (0, "forward"),
        (1, "forward_int64_int64"),
        (2, "forward"),
        (3, "forward_float64_float64"),
    ]


def test_dynamic_batch_runs_at_sizes_never_exported(full_lib):
    # Exported from batches 2 and 4; run at 1, 7 and 3 on the full runtime.
    spec = spec_of("reshape_dynamic")
    method = Runtime(full_lib).load(exported("reshape_dynamic").program).method("forward")
    for batch in (1, 7, 3):
        x = torch.randn(batch, 5, 8, generator=torch.Generator().manual_seed(batch))
        (y,) = method.run(to_numpy_input(x))
        expected = spec.module(x).detach()
        assert y.shape == (batch, 5, 6)
        torch.testing.assert_close(torch.from_numpy(y), expected, rtol=1e-2, atol=1e-3)  # through float16


ELEMENTWISE_MATH_OPS = [
    *(f"aten::{name}" for name in ("acos", "asin", "atan", "atan2", "sinh", "cosh", "tan", "asinh", "acosh")),
    *(f"aten::{name}" for name in ("atanh", "expm1", "log1p", "log2", "log10", "trunc", "isnan", "isinf")),
    "aten::bitwise_xor.Tensor",
]


def test_elementwise_math_ops_are_traced_selected_and_match_torch(tracing_lib, full_lib):
    # Issue 49's elementwise batch end to end: traced into the manifest
    # with the dtype each kernel ran on, then checked against torch.
    result = trace_model(spec_of("elementwise_math"), runtime=tracing_lib)
    m = result.manifest
    assert set(ELEMENTWISE_MATH_OPS) <= set(m.operators)
    assert m.kernel_metadata["atan2_kernel"] == ("Float",)
    assert m.kernel_metadata["bitwise_xor_kernel"] == ("Long",)
    assert m.kernel_metadata["isnan_kernel"] == ("Float",)
    assert all(c.ok for c in result.checks)
    checks = check_model(spec_of("elementwise_math"), full_lib)
    assert [o.line().split(":")[0] for o in checks[0].outputs] == [
        "output 0 Float[4, 6]",
        "output 1 Bool[4, 6]",
        "output 2 Long[4, 6]",
    ]
    assert all(c.ok for c in checks)


def test_a_gan_generator_with_instance_norm_is_traced_and_matches_torch(tracing_lib, full_lib):
    # InstanceNorm2d exports to _native_batch_norm_legit.no_stats (issue 49).
    result = trace_model(spec_of("gan_generator"), runtime=tracing_lib)
    assert "aten::_native_batch_norm_legit.no_stats" in result.manifest.operators
    assert result.manifest.kernel_metadata["batch_norm_kernel"] == ("Float",)
    assert all(c.ok for c in result.checks)
    assert all(c.ok for c in check_model(spec_of("gan_generator"), full_lib))


def test_index_heavy_post_processing_is_traced_and_matches_torch(tracing_lib, full_lib):
    # topk, sort and scatter_add (issue 49): traced with their dtypes, then
    # every output, indices included, checked against torch.
    result = trace_model(spec_of("postprocess"), runtime=tracing_lib)
    m = result.manifest
    assert {"aten::topk", "aten::sort", "aten::sort.stable", "aten::gather", "aten::scatter_add"} <= set(m.operators)
    assert m.kernel_metadata["topk_kernel"] == ("Float",)
    assert m.kernel_metadata["sort_kernel"] == ("Float", "Short")
    assert all(c.ok for c in result.checks)
    checks = check_model(spec_of("postprocess"), full_lib)
    assert [o.line() for o in checks[0].outputs][-2:] == [
        "output 7 Short[2, 40]: ok, exact",
        "output 8 Long[2, 40]: ok, exact",
    ]
    assert all(c.ok for c in checks)


def test_a_dlrm_recommender_is_traced_and_matches_torch(tracing_lib, full_lib):
    # nn.EmbeddingBag exports to _embedding_bag, the pairwise interaction
    # keeps triu_indices (issue 49): traced with their dtypes, then checked
    # against torch on the full runtime.
    result = trace_model(spec_of("dlrm_tiny"), runtime=tracing_lib)
    m = result.manifest
    assert {"aten::_embedding_bag", "aten::triu_indices", "aten::bmm"} <= set(m.operators)
    assert m.kernel_metadata["embedding_bag_kernel"] == ("Float",)
    assert m.kernel_metadata["triu_indices_kernel"] == ("Long",)
    assert all(c.ok for c in result.checks)
    assert all(c.ok for c in check_model(spec_of("dlrm_tiny"), full_lib))


QUANTIZED_OPS = {
    "quantized_decomposed::quantize_per_tensor",
    "quantized_decomposed::dequantize_per_tensor",
    "quantized_decomposed::dequantize_per_channel",
}


def test_a_pt2e_quantized_cnn_is_traced_and_matches_torch(tracing_lib, full_lib):
    # Issue 44, the reference path: PareQuantizer, calibrate, convert_pt2e;
    # the quantize/dequantize ops run on the quantized family's kernels over
    # int8 tensors, the float ops between them on the float kernels (the
    # quantize pass blocklisted: tests/tracer/test_quantize_pass.py has its int8 layers).
    reference = ",".join(graph_passes.resolve("default", skip="quantize"))
    result = trace_model(spec_of("quantized_cnn"), runtime=tracing_lib, passes=reference)
    m = result.manifest
    assert QUANTIZED_OPS <= set(m.operators)
    assert {"aten::convolution", "aten::addmm", "aten::add.Tensor"} <= set(m.operators)
    assert m.kernel_metadata["quantize_per_tensor_kernel"] == ("Char",)
    assert m.kernel_metadata["dequantize_per_tensor_kernel"] == ("Char",)
    # int8 weights, int32 biases (PareQuantizer's default)
    assert m.kernel_metadata["dequantize_per_channel_kernel"] == ("Char", "Int")
    # The manifest loads in torchgen and codegen selects the family by (tag, dtype).
    sb = SelectiveBuilder.from_yaml_dict(yaml.safe_load(m.dump()))
    assert sb.is_operator_selected("quantized_decomposed::dequantize_per_channel")
    assert sb.is_kernel_dtype_selected("quantize_per_tensor_kernel", "Char")
    assert not sb.is_kernel_dtype_selected("quantize_per_tensor_kernel", "Byte")
    selection = codegen.resolve(m, load_inventory())
    assert "quantized_decomposed::quantize_per_tensor" in selection.operators
    assert selection.is_kernel_dtype_selected("dequantize_per_channel_kernel", "Int")
    assert not selection.is_kernel_dtype_selected("choose_qparams_kernel", "Float")
    assert all(c.ok for c in result.checks)
    checks = check_model(spec_of("quantized_cnn"), full_lib, passes=reference)
    line = checks[0].outputs[0].line()
    assert line.startswith("output 0 Float[2, 10]: ok, quantized (step ") and "within 3 steps" in line
    assert all(c.ok for c in checks)
    # The weights stay int8 constants in the program (not folded to float).
    (method,) = read_program(exported("quantized_cnn", passes=reference).program).methods
    constants = [v for v in method.values if v.constant and v.dtype == "Char"]
    assert sorted(tuple(v.sizes) for v in constants) == [(8, 3, 3, 3), (8, 8, 3, 3), (10, 8)]


def test_a_dynamically_quantized_linear_is_traced_and_matches_torch(tracing_lib, full_lib):
    # The quantize pass runs it as one int8 layer, its input quantized at run time.
    result = trace_model(spec_of("quantized_cnn_dynamic"), runtime=tracing_lib)
    m = result.manifest
    assert "pare::qlinear_dynamic" in m.operators
    assert not {"quantized_decomposed::choose_qparams.tensor", "aten::addmm"} & set(m.operators)
    assert m.kernel_metadata["qlinear_dynamic_kernel"] == ("QInt8",)
    assert all(c.ok for c in result.checks)
    assert all(c.ok for c in check_model(spec_of("quantized_cnn_dynamic"), full_lib))
    # On the reference path: choose_qparams, quantize and dequantize around the float layer.
    reference = ",".join(graph_passes.resolve("default", skip="quantize"))
    result = trace_model(spec_of("quantized_cnn_dynamic"), runtime=tracing_lib, passes=reference)
    m = result.manifest
    assert {"quantized_decomposed::choose_qparams.tensor", "quantized_decomposed::quantize_per_tensor.tensor"} <= set(
        m.operators
    )
    assert m.kernel_metadata["choose_qparams_kernel"] == ("Float",)
    assert all(c.ok for c in result.checks)


def test_check_passes_on_the_full_runtime(full_lib):
    checks = check_model(spec_of("multi_dtype"), full_lib)
    assert len(checks) == 4 and all(c.ok for c in checks)
    assert [o.line() for o in checks[1].outputs] == ["output 0 Long[2, 4]: ok, exact", "output 1 Long[2, 4]: ok, exact"]


def test_check_runs_a_program_file(full_lib):
    program = exported("tiny_mlp").program
    checks = check_model(spec_of("tiny_mlp"), full_lib, program=program)
    assert all(c.ok for c in checks)
    with pytest.raises(TracerError, match="--program has no method forward_int64_int64"):
        check_model(spec_of("multi_dtype"), full_lib, program=program)


def test_numeric_mismatch_reports_each_output(tracing_lib):
    with pytest.raises(NumericMismatchError) as e:
        trace_model(spec_of("drifting"), runtime=tracing_lib)
    lines = str(e.value).splitlines()
    assert "differ from torch eager beyond tolerance for 1 of 1 inputs" in lines[0]
    assert lines[1].startswith("  inputs[0] (forward) output 0 Float[2, 2]: MISMATCH, max abs err ")
    assert "max rel err" in lines[1] and "(atol 0.0001, rtol 0.0001)" in lines[1]
    # The manifest is still built (what ran is known), for inspection.
    assert "aten::mul.Tensor" in e.value.result.manifest.operators


def test_tolerance_override_is_applied(full_lib):
    # float16 round trip: exact tolerance fails, the default passes.
    with pytest.raises(NumericMismatchError, match=r"\(atol 0, rtol 0\)|must be exact"):
        check_model(spec_of("reshape_dynamic"), full_lib, tolerance=Tolerance(rtol=0, atol=0))


def test_trace_refuses_a_runtime_without_instrumentation(full_lib):
    with pytest.raises(TracerError, match="not an instrumentation build .*PARE_TRACING=1"):
        trace_model(spec_of("tiny_mlp"), runtime=full_lib)


def test_check_refuses_libraries_it_cannot_run(tmp_path):
    macho = tmp_path / "libpare.dylib"
    macho.write_bytes(b"\xcf\xfa\xed\xfe" + bytes(60))
    with pytest.raises(TracerError, match="Mach-O .* cannot run on this machine"):
        check_model(spec_of("tiny_mlp"), macho)
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(TracerError, match="not an ELF shared library"):
        check_model(spec_of("tiny_mlp"), text)
    with pytest.raises(TracerError, match="no such runtime library"):
        check_model(spec_of("tiny_mlp"), tmp_path / "missing.so")


def test_index_with_none_matches_torch(full_lib):
    class Indexing(nn.Module):
        def forward(self, x, b, i, j):
            return x[:, i], x[b, :, j], x[..., j], x[:, :, j[0]]

    g = torch.Generator().manual_seed(5)
    i, j = torch.tensor([[0, 2], [1, 3]]), torch.tensor([[4, 0], [1, 2]])
    spec = spec_from(
        Indexing(),
        [
            (torch.rand(3, 4, 5, generator=g), torch.tensor([[0, 2], [1, 1]]), i, j),
            (torch.rand(2, 4, 5, generator=g), torch.tensor([[1, 0], [0, 1]]), i, j),
        ],
    )
    checks = check_model(spec, full_lib)
    assert all(c.ok for c in checks) and len(checks[0].outputs) == 4


def test_post_processing_that_filters_is_traced_and_matches_torch(tracing_lib, full_lib):
    # nonzero's output size depends on the data (issue 49): the inputs keep
    # different numbers of detections, each checked against torch.
    result = trace_model(spec_of("filter_detections"), runtime=tracing_lib)
    m = result.manifest
    assert {"aten::nonzero", "aten::sort.stable", "aten::topk", "aten::where.self"} <= set(m.operators)
    assert m.kernel_metadata["nonzero_kernel"] == ("Bool",)
    assert all(c.ok for c in result.checks)
    checks = check_model(spec_of("filter_detections"), full_lib)
    kept = [c.outputs[0].line() for c in checks]
    assert len(set(kept)) == 3, kept  # three different sizes
    assert all(c.ok for c in checks)


def test_spectra_in_complex64_are_traced_and_match_torch(tracing_lib, full_lib):
    # complex64 inputs, intermediates and outputs (docs/complex.md); the
    # manifest selects ComplexFloat only for the tags that ran on it.
    result = trace_model(spec_of("spectral_ops"), runtime=tracing_lib)
    m = result.manifest
    assert {"aten::_fft_r2c", "aten::_fft_c2r", "aten::_fft_c2c", "aten::view_as_real", "aten::view_as_complex"} <= set(
        m.operators
    )
    complex_tags = {tag for tag, dtypes in m.kernel_metadata.items() if "ComplexFloat" in dtypes}
    assert complex_tags == {"fft_r2c_kernel", "fft_c2r_kernel", "fft_c2c_kernel", "abs_complex_kernel"}
    assert all(c.ok for c in result.checks)
    checks = check_model(spec_of("spectral_ops"), full_lib)
    assert all(c.ok for c in checks) and [o.description for o in checks[0].outputs][2] == "ComplexFloat[3, 33]"


class _KVCache(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.register_buffer("k_cache", torch.zeros(1, 8, 4))

    def forward(self, x, input_pos):
        self.k_cache.index_copy_(1, input_pos, self.proj(x))
        return self.k_cache.sum(1)


def test_a_model_with_state_selects_the_state_feature(tracing_lib):
    torch.manual_seed(0)
    calls = [(torch.randn(1, 3, 4), torch.arange(3)), (torch.randn(1, 1, 4), torch.tensor([3]))]
    m = trace_model(spec_from(_KVCache(), calls), runtime=tracing_lib).manifest
    assert "state" in m.build_features
    assert "aten::index_put" in m.operators


def test_check_runs_a_stateful_model_as_one_sequence(full_lib):
    # A prefill then decode steps: each step's output depends on the cache the
    # previous ones wrote, in the runtime and in torch (on a copy of the module).
    torch.manual_seed(0)
    calls = [(torch.randn(1, 3, 4), torch.arange(3))]
    calls += [(torch.randn(1, 1, 4), torch.tensor([p])) for p in range(3, 7)]
    spec = spec_from(_KVCache(), calls)
    for _ in range(2):  # the spec's module keeps its initial buffers: a second check starts where the first did
        checks = check_model(spec, runtime=full_lib)
        assert [c.index for c in checks] == list(range(5)) and all(c.ok for c in checks)
    assert not spec.module.k_cache.any()
