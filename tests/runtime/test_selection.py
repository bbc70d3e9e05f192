"""Selective build: what a build lacks fails cleanly and names the fix, two
differently selected runtimes coexist in one process, the inventory follows
the selection, and unselected code is absent from the binary."""

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import runtime_build
import torch
import torch.nn.functional as F
from runtime_testing import (
    SELECTIVE_CLASSES,
    SELECTIVE_FEATURES,
    SELECTIVE_KERNEL_DTYPES,
    SELECTIVE_OPS,
    assert_same,
    conv_program,
    depth_tolerances,
    fragmenting_program,
    make_tensor,
    run_op,
    symbolic_view_program,
)

from pare.program import ProgramBuilder
from pare.runtime import PareError, Runtime
from tests.conftest import require_tool


def mul_program(dtype):
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input(dtype, [None])
    m.output(m.op("aten::mul.Tensor", x, x))
    return pb.to_bytes()


def test_unknown_operator_fails_at_load_naming_it(runtime):
    pb = ProgramBuilder()
    m = pb.method()
    m.output(m.op("aten::frobnicate.default", m.input("Float", [2])))
    with pytest.raises(PareError, match=r"operator aten::frobnicate.default is not implemented") as e:
        runtime.load(pb.to_bytes())
    assert e.value.status_name == "OperatorNotFound"


def test_unselected_operator_fails_at_load_with_the_fix(selective_runtime):
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [2])
    m.output(m.op("aten::add.Tensor", x, x))
    with pytest.raises(PareError) as e:
        selective_runtime.load(pb.to_bytes())
    assert e.value.status_name == "OperatorNotSelected"
    assert (
        "the manifest (tests/runtime custom selection) does not select aten::add.Tensor: re-trace the model or add it to the manifest"
        in str(e.value)
    )


def test_unselected_dtype_names_tag_dtype_and_fix(selective_runtime):
    method = selective_runtime.load(mul_program("Double")).method()
    with pytest.raises(PareError) as e:
        method.run(np.ones(3))
    assert e.value.status_name == "DtypeNotSelected"
    message = str(e.value)
    assert message.startswith("aten::mul.Tensor: dtype Double of kernel tag mul_kernel is not selected")
    assert "add Double to kernel_metadata[mul_kernel] in the manifest" in message
    assert "(method 'forward', instruction 0)" in message
    # The selected dtypes of the same kernel still work.
    (y,) = selective_runtime.load(mul_program("Float")).method().run(np.full(3, 3, np.float32))
    assert y.tolist() == [9, 9, 9]


def test_unselected_non_root_operator_fails_naming_it(selective_runtime):
    # aten::add.Scalar is selected but forwards to aten::add.Tensor, which is not.
    pb = ProgramBuilder()
    m = pb.method()
    m.output(m.op("aten::add.Scalar", m.input("Float", [2]), 1))
    method = selective_runtime.load(pb.to_bytes()).method()
    with pytest.raises(PareError) as e:
        method.run(np.ones(2, np.float32))
    assert e.value.status_name == "OperatorNotSelected"
    assert (
        "aten::add.Scalar: calls aten::add.Tensor, which the manifest (tests/runtime custom selection) does not select"
        in str(e.value)
    )


def test_unselected_class_fails_at_load(selective_runtime):
    pb = ProgramBuilder()
    m = pb.method()
    m.input("Float")
    packed = m.conv2d_prepack(np.ones((2, 1, 1, 1), np.float32), None, [1, 1], [0, 0], [1, 1], 1)
    m.output(packed)
    with pytest.raises(PareError, match="the manifest does not select custom class Conv2dPackedParams") as e:
        selective_runtime.load(pb.to_bytes())
    assert e.value.status_name == "ClassNotSelected"


def test_unselected_feature(selective_runtime):
    method = selective_runtime.load(mul_program("Float")).method()
    with pytest.raises(
        PareError,
        match="does not select build feature op_profiling: add it to build_features "
        r"in the manifest \(tools.tracer trace --features op_profiling",
    ) as e:
        method.set_profiling(True)
    assert e.value.status_name == "FeatureNotSelected"
    out = np.empty(4, np.float32)
    with pytest.raises(
        PareError,
        match="does not select build feature output_buffers: add it to build_features "
        r"in the manifest \(tools.tracer trace --features output_buffers",
    ) as e:
        method.set_output_buffer(0, out)
    assert e.value.status_name == "FeatureNotSelected"
    # Nothing was bound: the output is the runtime's own.
    (y,) = method.run(np.full(4, 3, np.float32))
    assert y.tolist() == [9, 9, 9, 9]
    assert not np.shares_memory(y, out)


def test_without_greedy_planner_every_plan_is_first_fit(selective_runtime, runtime):
    # A program where greedy by size wins (48 KB against first fit's 52 KB, tests/runtime/runtime_testing.py):
    # the full runtime keeps the greedy layout, one without build feature greedy_planner plans first fit,
    # with the same results.
    program, w = fragmenting_program("aten::mul.Tensor")
    x = np.linspace(-2, 2, 1024, dtype=np.float32)
    want = (np.maximum(x, 0)[:, None] * w) * (x[:, None] * w)
    full = runtime.load(program).method()
    np.testing.assert_array_equal(full.run(x)[0], want)
    assert full.memory_stats().planned_arena_bytes == 48 * 1024
    method = selective_runtime.load(program).method()
    for _ in range(2):  # the planning run, then a replay in its layout
        np.testing.assert_array_equal(method.run(x)[0], want)
    s = method.memory_stats()
    assert (s.planned_arena_bytes, s.first_fit_arena_bytes, s.greedy_arena_bytes) == (52 * 1024, 52 * 1024, 0)
    assert s.temporary_blocks == 0
    with pytest.raises(
        PareError,
        match="does not select build feature greedy_planner: add it to build_features "
        r"in the manifest \(tools.tracer trace --features greedy_planner",
    ) as e:
        method.set_planner("greedy_by_size")
    assert e.value.status_name == "FeatureNotSelected"
    method.set_planner("first_fit")  # the one layout it has
    np.testing.assert_array_equal(method.run(x)[0], want)
    assert method.memory_stats().planned_arena_bytes == 52 * 1024


def test_without_dynamic_shapes(selective_runtime, runtime):
    # Symbolic sizes: the full runtime runs them; one without build feature dynamic_shapes refuses the program at
    # load, naming the fix.
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    (y,) = runtime.load(symbolic_view_program()).method().run(x)
    np.testing.assert_array_equal(y, x.reshape(3, 2, 2))
    with pytest.raises(
        PareError,
        match="does not select build feature dynamic_shapes: add it to build_features "
        r"in the manifest \(tools.tracer trace --features dynamic_shapes",
    ) as e:
        selective_runtime.load(symbolic_view_program())
    assert e.value.status_name == "FeatureNotSelected"
    # One plan kept: inputs alternating between two shapes re-plan at every change, with the same results; the
    # full runtime keeps a plan per shape and plans each once.
    for rt, plans in ((runtime, 2), (selective_runtime, 4)):
        method = rt.load(mul_program("Float")).method()
        for n in (3, 5, 3, 5):
            x = np.arange(n, dtype=np.float32) - 1
            (y,) = method.run(x)
            np.testing.assert_array_equal(y, x * x)
        assert method.memory_stats().num_plans == plans
        method.run(np.ones(5, np.float32))  # the last shape again: its plan is replayed
        assert method.memory_stats().num_plans == plans


def test_selected_class_still_works(selective_runtime):
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [1, 2])
    packed = m.linear_prepack(np.eye(2, dtype=np.float32), None)
    m.output(m.op("pare::linear_prepacked", x, packed))
    (y,) = selective_runtime.load(pb.to_bytes()).method().run(np.array([[3, 4]], np.float32))
    assert y.tolist() == [[3, 4]]


def test_inventory_follows_the_selection(runtime, selective_runtime):
    full = runtime.inventory()
    sel = selective_runtime.inventory()
    assert set(sel.ops) == set(SELECTIVE_OPS)
    assert [o for o in full.ops if o in SELECTIVE_OPS] == list(sel.ops)  # same order as the .def files
    expected = {
        tag: tuple(d for d in full.kernel_dtypes[tag] if d in dts) for tag, dts in SELECTIVE_KERNEL_DTYPES.items()
    }
    assert sel.kernel_dtypes == expected
    assert sel.classes == tuple(SELECTIVE_CLASSES)
    assert sel.features == tuple(SELECTIVE_FEATURES)
    assert len(full.ops) >= len(sel.ops) + 5


def test_two_differently_selected_runtimes_in_one_process(runtime, selective_runtime):
    full_method = runtime.load(mul_program("Double")).method()
    sel_double = selective_runtime.load(mul_program("Double")).method()
    sel_float = selective_runtime.load(mul_program("Float")).method()
    for i in range(3):  # interleave calls into both libraries
        assert full_method.run(np.full(2, i, np.float64))[0].tolist() == [i * i] * 2
        assert sel_float.run(np.full(2, i, np.float32))[0].tolist() == [i * i] * 2
        with pytest.raises(PareError, match="mul_kernel"):
            sel_double.run(np.full(2, i, np.float64))
    assert runtime.inventory().ops != selective_runtime.inventory().ops


def _nm() -> str:
    return require_tool("llvm-nm-16", "llvm-nm", package="llvm-16")


def _symbols(lib) -> list[str]:
    """Demangled names from a library's full symbol table (empty when stripped)."""
    out = subprocess.run(
        [_nm(), "-C", "--format=just-symbols", str(lib)], capture_output=True, text=True, check=True
    ).stdout
    return out.splitlines()


def _unstripped_symbols(lib: Path) -> list[str]:
    """The symbols of lib, or of its unstripped twin when lib is stripped.

    Kernels are hidden, so only the full symbol table names them. A runtime
    compiled by tests/runtime/conftest.py keeps it; Bazel's selective_runtime
    ships stripped libraries, with the unstripped twin beside them
    (<platform>/unstripped/<name>), and tools/run_tests.sh points
    PARE_RUNTIME_LIB at such a stripped library.
    """
    symbols = _symbols(lib)
    if symbols:
        return symbols
    twin = lib.parent / "unstripped" / lib.name
    assert twin.is_file(), (
        f"{lib} is stripped and has no unstripped twin at {twin}: point PARE_RUNTIME_LIB at "
        "a selective_runtime output (bazel-bin/runtime/full/linux_x86_64/libpare_full.so) "
        "or unset it"
    )
    symbols = _symbols(twin)
    assert symbols, f"{twin} has no symbol table either"
    return symbols


def _has(symbols: list[str], qualified_name_regex: str) -> bool:
    # As the verifier matches (docs/selection.md): the symbol's own qualified
    # name, after an optional return type, so `f(pare::classes::X const&)` or
    # `selective_class_<pare::classes::X>` are not symbols of class X.
    pattern = re.compile(r"^(?:[^()]* )?" + qualified_name_regex)
    return any(pattern.search(s) for s in symbols)


def _assert_only_in_full(full: list[str], sel: list[str], codes, what: str) -> None:
    """Each of codes (qualified-name regexes, as _has takes) is in the full
    runtime's symbols and not in the selective one's."""
    for code in codes:
        assert _has(full, code), code
        assert not _has(sel, code), f"{code}: unselected {what} is still linked"


@pytest.mark.absent_code
def test_unselected_code_is_absent_from_the_binary(runtime_lib, selective_lib):
    full = _unstripped_symbols(runtime_lib)
    sel = _unstripped_symbols(selective_lib)
    kernel = r"pare::kernels::{}\("
    for op in ("aten_add_Tensor", "aten_mm", "aten_addmm", "aten__softmax", "pare_conv2d_prepacked"):
        assert _has(full, kernel.format(op)), op
        assert not _has(sel, kernel.format(op)), f"unselected kernel {op} is still linked"
    for op in ("aten_mul_Tensor", "aten_relu", "aten_add_Scalar", "pare_linear_prepacked"):
        assert _has(sel, kernel.format(op)), op
    case = r"pare::dispatch_case<pare::tags::{}, {}[,>]"
    assert _has(full, case.format("mul_kernel", "double")) and _has(full, case.format("mul_kernel", "float"))
    assert _has(sel, case.format("mul_kernel", "float")) and _has(sel, case.format("mul_kernel", "long"))
    assert not _has(sel, case.format("mul_kernel", "double")), "unselected dtype specialisation is still linked"
    assert not _has(sel, case.format("mul_kernel", r"pare::Half"))
    assert not _has(sel, r"pare::dispatch_case<pare::tags::(add_kernel|mm_kernel|softmax_kernel),")
    klass = r"pare::classes::{}(?:::|$)"
    assert _has(full, klass.format("Conv2dPackedParams")) and _has(full, klass.format("LinearPackedParams"))
    assert _has(sel, klass.format("LinearPackedParams"))
    assert not _has(sel, klass.format("Conv2dPackedParams")), "unselected class is still linked"
    # The int8 layers (classes, kernel tags and the int8 GEMM): none in a float-only selection.
    int8_code = (
        klass.format("QConv2dPackedParams"),
        klass.format("QLinearPackedParams"),
        case.format("qconv2d_kernel", "signed char"),
        case.format("qlinear_kernel", "signed char"),
        r"pare::kernels::qgemm::gemm_rows\(",
        # The quantize pass's other int8 ops (qelementwise.cc, qlinear_dynamic.cc).
        *(
            kernel.format(op)
            for op in ("pare_qadd", "pare_qmul", "pare_qmean", "pare_qavg_pool2d", "pare_qlut", "pare_qlinear_dynamic")
        ),
    )
    _assert_only_in_full(full, sel, int8_code, "int8 code")
    # Weight-only linears (weight_only_linear.cc and every ISA copy of its row kernel).
    _assert_only_in_full(
        full, sel, (kernel.format("pare_weight_only_linear"), r"pare::kernels::weight_only::"), "weight-only code"
    )
    # The fused attention (nn/sdpa.cc, the fuse_attention pass's op): none in a runtime without attention.
    _assert_only_in_full(full, sel, (kernel.format("pare_sdpa"), case.format("sdpa_kernel", "float")), "attention code")
    # The fused RMSNorm and rotary embedding (nn/rms_norm.cc, nn/rope.cc, the fuse_norms pass's ops).
    norm_code = [
        code
        for op, tag in (("pare_rms_norm", "rms_norm_kernel"), ("pare_rope", "rope_kernel"))
        for code in (kernel.format(op), case.format(tag, "float"))
    ]
    _assert_only_in_full(full, sel, norm_code, "norm code")
    # Build feature threads (unselected): the pool and the split machinery.
    thread_code_patterns = (
        r"pare::ThreadPool::",
        r"pare::KernelContext::run_chunks\(",
        r"pare::KernelContext::threaded_chunks\(",
        r"pare::gemm::sgemm_parallel\(",
    )
    _assert_only_in_full(full, sel, thread_code_patterns, "feature threads")
    # Build feature state (unselected): its C API entry points stay (answering
    # FeatureNotSelected), the state tables' decoding and the state's upkeep go.
    state_code_patterns = (
        r"pare::Loader::decode_states\(",
        r"pare::Method::write_back_state\(",
        r"pare::Method::state_storage_for\(",
        r"pare::Method::find_state\(",
    )
    _assert_only_in_full(full, sel, state_code_patterns, "feature state")
    assert "pare_method_reset_state" in sel  # the entry point itself stays
    # Build feature greedy_planner (unselected): the second layout goes, the planner's entry point stays.
    assert _has(full, r"pare::MemoryPlanner::lay_out_greedily\(")
    assert not _has(sel, r"pare::MemoryPlanner::lay_out_greedily\("), "unselected greedy_planner is still linked"
    assert "pare_method_set_planner" in sel
    # Build feature dynamic_shapes (unselected): symbolic sizes' resolution goes.
    assert _has(full, r"pare::Method::resolve_symbolic_lists\(")
    assert not _has(sel, r"pare::Method::resolve_symbolic_lists\("), "unselected dynamic_shapes is still linked"


def test_select_link_names_what_is_wrong(tmp_path):
    # rules/private/select_link.sh, the app's selection step (docs/bazel.md).
    script = runtime_build.SELECT_LINK
    tools = ["llvm-link-16", "opt-16", "llvm-nm-16", "llvm-ar-16", "gnu", runtime_build.CXX]
    usage = subprocess.run(["sh", str(script), str(tmp_path / "out.a"), *tools, "-O2"], capture_output=True, text=True)
    assert usage.returncode == 2 and "usage: select_link.sh" in usage.stderr
    no_roots = subprocess.run(
        ["sh", str(script), str(tmp_path / "out.a"), *tools, "--", "--", "a.bc"], capture_output=True, text=True
    )
    assert no_roots.returncode == 2 and "usage: select_link.sh" in no_roots.stderr
    # Roots that define no C API: nothing would stay visible.
    unit = tmp_path / "unit.c"
    unit.write_text("int helper(int x) { return x + 1; }\n")
    bitcode = tmp_path / "unit.o"
    subprocess.run([runtime_build.CXX, "-x", "c", "-O2", "-flto=full", "-c", str(unit), "-o", str(bitcode)], check=True)
    no_api = subprocess.run(
        ["sh", str(script), str(tmp_path / "out.a"), *tools, "-O2", "--", str(bitcode), "--", str(bitcode)],
        capture_output=True,
        text=True,
        env=runtime_build.compiler_env(),
    )
    assert no_api.returncode == 1 and "the roots define no pare_* C API function" in no_api.stderr
    assert not (tmp_path / "out.a").exists()


def _pool_program(kernel, ceil_mode=False):
    pb = ProgramBuilder()
    m = pb.method()
    values, indices = m.op(
        "aten::max_pool2d_with_indices", m.input("Float"), kernel, kernel, [0, 0], [1, 1], ceil_mode, returns=2
    )
    m.output(values, indices)
    return pb.to_bytes()


def _assert_pools_like_torch(rt, x, kernel, ceil_mode=False):
    values, indices = rt.load(_pool_program(kernel, ceil_mode)).method().run(x.numpy())
    want = torch.ops.aten.max_pool2d_with_indices(x, kernel, kernel, [0, 0], [1, 1], ceil_mode)
    np.testing.assert_array_equal(values, want[0].numpy())
    np.testing.assert_array_equal(indices, want[1].numpy())


def test_an_unselected_2x2_pool_loop_runs_the_general_loop(
    runtime_lib, selective_lib, selective_runtime, tracing_runtime
):
    # nn.MaxPool2d(2)'s loop has a tag of its own (max_pool2d_2x2_kernel,
    # runtime/kernels/nn/max_pool.cc), dispatched ahead of the general
    # loop's (max_pool2d_kernel). The tracing build records only the loop
    # that ran: a 2x2 pool without ceil_mode takes the 2x2 loop whatever the
    # input's size, so its trace has no general loop; with ceil_mode an odd
    # size needs the general loop, so the trace records both. The selective
    # runtime selects max_pool2d_kernel but not the 2x2 loop: it lacks its
    # code and still pools 2x2 correctly on the general loop.
    x = torch.randn(2, 3, 8, 6, generator=torch.Generator().manual_seed(90))
    for rt in (selective_runtime, tracing_runtime):
        _assert_pools_like_torch(rt, x, [2, 2])
    traced = {}
    for kernel, ceil_mode in (([2, 2], False), ([2, 2], True), ([3, 3], False)):
        program = tracing_runtime.load(_pool_program(kernel, ceil_mode))
        program.method().run(x.numpy())
        traced[(kernel[0], ceil_mode)] = program.trace().kernel_dtypes
    assert traced[(2, False)]["max_pool2d_2x2_kernel"] == ("Float",)
    assert "max_pool2d_kernel" not in traced[(2, False)]
    assert traced[(2, True)]["max_pool2d_2x2_kernel"] == ("Float",)
    assert traced[(2, True)]["max_pool2d_kernel"] == ("Float",)
    assert "max_pool2d_2x2_kernel" not in traced[(3, False)]
    case = r"pare::dispatch_case<pare::tags::{}, float[,>]"
    full, sel = _unstripped_symbols(runtime_lib), _unstripped_symbols(selective_lib)
    assert _has(full, case.format("max_pool2d_2x2_kernel")) and _has(sel, case.format("max_pool2d_kernel"))
    assert not _has(sel, case.format("max_pool2d_2x2_kernel")), "an unselected 2x2 loop is still linked"


@pytest.mark.absent_code
def test_a_runtime_of_2x2_pools_alone_has_no_general_loop(selection_cache):
    # What a model whose pools are all nn.MaxPool2d(2) traces (the demo):
    # the 2x2 loop's tag alone. Its runtime pools 2x2 at any size (odd ones
    # too) and carries none of the general loop; another pool fails with
    # the not-selected message naming the general loop's tag.
    sel = runtime_build.write_selection(
        selection_cache / "selection_pool_2x2",
        ["aten::max_pool2d_with_indices"],
        {"max_pool2d_2x2_kernel": ["Float"]},
        [],
        [],
    )
    lib = runtime_build.build(selection_cache, "pool_2x2", selection_dir=sel)
    rt = Runtime(lib)
    generator = torch.Generator().manual_seed(91)
    for shape in ((1, 2, 8, 8), (2, 3, 9, 7), (1, 1, 2, 34)):
        _assert_pools_like_torch(rt, torch.randn(*shape, generator=generator), [2, 2])
    symbols = _unstripped_symbols(lib)
    assert _has(symbols, r"pare::dispatch_case<pare::tags::max_pool2d_2x2_kernel, float[,>]")
    assert not _has(symbols, r"pare::dispatch_case<pare::tags::max_pool2d_kernel, ")
    assert not any("max_pool_plane<" in s and "max_pool_plane_2x2" not in s for s in symbols)
    with pytest.raises(PareError, match="dtype Float of kernel tag max_pool2d_kernel is not selected"):
        _assert_pools_like_torch(rt, torch.randn(1, 2, 8, 8, generator=generator), [3, 3])


def _mean_program(dims, keepdim=True):
    pb = ProgramBuilder()
    m = pb.method()
    m.output(m.op("aten::mean.dim", m.input("Float"), dims, keepdim, None))
    return pb.to_bytes()


def _assert_means_like_torch(rt, x, dims):
    (got,) = rt.load(_mean_program(dims)).method().run(x.numpy())
    want = torch.mean(x.double(), dims, keepdim=True).float()
    # Float32 sums of at most a few hundred elements: a few ulps of the float64 mean.
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)


def test_a_mean_over_contiguous_elements_traces_the_row_loop_alone(tracing_runtime):
    # A mean whose reduced elements are contiguous (global average pooling:
    # dims [-1, -2] of NCHW) has a dispatch of its own, mean_rows_kernel,
    # ahead of mean_kernel's general loop (runtime/kernels/reduction/
    # accumulate.cc). Reduced dims that are not one block are copied to the
    # end first, so they take it too; kept dims after the reduced ones need
    # the general loop's columns.
    x = torch.randn(2, 3, 5, 7, generator=torch.Generator().manual_seed(92))
    traced = {}
    for dims in ([-1, -2], [0, 2], [1]):
        _assert_means_like_torch(tracing_runtime, x, dims)
        program = tracing_runtime.load(_mean_program(dims))
        program.method().run(x.numpy())
        traced[tuple(dims)] = program.trace().kernel_dtypes
    assert traced[(-1, -2)] == {"mean_rows_kernel": ("Float",)}
    assert traced[(0, 2)] == {"copy_kernel": ("Float",), "mean_rows_kernel": ("Float",)}
    assert traced[(1,)] == {"mean_kernel": ("Float",)}


@pytest.mark.absent_code
def test_a_runtime_of_row_means_alone_has_no_column_loop(selection_cache):
    # What the demo traces (nn.AdaptiveAvgPool2d(1)): mean_rows_kernel alone.
    # Its runtime averages contiguous elements like torch, carries no
    # dispatch case of the general loop, and a mean over another dim fails
    # with the not-selected message naming the general loop's tag.
    sel = runtime_build.write_selection(
        selection_cache / "selection_mean_rows", ["aten::mean.dim"], {"mean_rows_kernel": ["Float"]}, [], []
    )
    lib = runtime_build.build(selection_cache, "mean_rows", selection_dir=sel)
    rt = Runtime(lib)
    generator = torch.Generator().manual_seed(93)
    for shape, dims in (((1, 4, 7, 7), [-1, -2]), ((2, 3, 1, 40), [2, 3]), ((3, 300), [1]), ((4, 2500), [1])):
        _assert_means_like_torch(rt, torch.randn(*shape, generator=generator), dims)
    symbols = _unstripped_symbols(lib)
    assert _has(symbols, r"pare::dispatch_case<pare::tags::mean_rows_kernel, float[,>]")
    assert not _has(symbols, r"pare::dispatch_case<pare::tags::mean_kernel, ")
    with pytest.raises(PareError, match="dtype Float of kernel tag mean_kernel is not selected"):
        _assert_means_like_torch(rt, torch.randn(2, 3, 4, generator=generator), [1])


def test_only_the_c_api_is_exported(runtime_lib, selective_lib):
    for lib in (runtime_lib, selective_lib):
        out = subprocess.run(
            [_nm(), "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True
        ).stdout
        names = [line.split()[-1] for line in out.splitlines() if line.strip()]
        assert names and all(n.startswith("pare_") for n in names), [n for n in names if not n.startswith("pare_")]
        assert not any(n.startswith("pare_pal_") for n in names), "the PAL must stay hidden"


@pytest.mark.parametrize(
    "name,ops,dtypes_for,messages",
    [
        # Every op, no dtype, class or feature: every dispatch case and class
        # body is folded away, and each op fails naming what is missing.
        ("no_dtypes", None, False, True),
        # Nothing at all selected (so no kernel is linked: the runtime is
        # built without them), error messages as identifiers.
        ("empty", [], False, False),
    ],
)
def test_extreme_selections_compile_and_load(selection_cache, runtime, name, ops, dtypes_for, messages):
    import runtime_build

    from pare.runtime import Runtime

    all_ops = list(runtime.inventory().ops)
    root = selection_cache
    sel = runtime_build.write_selection(root / f"selection_{name}", all_ops if ops is None else ops, {}, [], [])
    defines = [] if messages else ["PARE_ENABLE_ERROR_MESSAGES=0"]
    lib = runtime_build.build(root, name, selection_dir=sel, defines=defines, kernels=ops is None)
    rt = Runtime(lib)
    inventory = rt.inventory()
    assert list(inventory.ops) == (all_ops if ops is None else [])
    assert inventory.kernel_dtypes == {} and inventory.classes == () and inventory.features == ()
    with pytest.raises(PareError) as e:
        rt.load(mul_program("Float")).method().run(np.ones(2, np.float32))
    if ops is None:
        assert e.value.status_name == "DtypeNotSelected"
        assert "dtype Float of kernel tag mul_kernel is not selected" in str(e.value)
    else:
        assert e.value.status_name == "OperatorNotSelected"
        # Without messages the runtime says the identifier and arguments
        # (docs/errors.md), which the SDK explains.
        assert e.value.raw_message.startswith("{#") and '"aten::mul.Tensor"' in e.value.raw_message
        assert "does not select aten::mul.Tensor" in str(e.value)


def test_fused_epilogues_are_selected_one_by_one(runtime_lib, selective_lib, selective_runtime, tracing_runtime):
    # Each fused epilogue of a prepacked layer has its own kernel tag: the
    # tracing build records the ones a layer runs, and the selective runtime,
    # which selects prepacked_gelu_kernel only, has no code for the others
    # and names the missing tag when a program asks for one.
    w, b = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2), np.float32([0.5, -0.5, 0.0])
    x = np.float32([[1.5, -2.0], [0.25, 3.0]])

    def program(activation, residual=False):
        pb = ProgramBuilder()
        m = pb.method()
        args = [m.input("Float", [2, 2]), m.linear_prepack(w, b), -np.inf, np.inf, activation]
        if residual:
            args.append(m.input("Float", [2, 3]))
        m.output(m.op("pare::linear_prepacked", *args))
        return pb.to_bytes()

    y = torch.from_numpy(x) @ torch.from_numpy(w).T + torch.from_numpy(b)
    (got,) = selective_runtime.load(program("gelu")).method().run(x)
    np.testing.assert_allclose(got, torch.nn.functional.gelu(y).numpy(), rtol=1e-6, atol=1e-6)
    method = selective_runtime.load(program("hardswish")).method()
    with pytest.raises(PareError) as e:
        method.run(x)
    assert e.value.status_name == "DtypeNotSelected"
    assert str(e.value).startswith(
        "pare::linear_prepacked: dtype Float of kernel tag prepacked_hardswish_kernel is not selected"
    )
    # gelu's tanh form has a tag of its own: selecting the exact gelu does
    # not bring it along.
    method = selective_runtime.load(program("gelu_tanh")).method()
    with pytest.raises(PareError) as e:
        method.run(x)
    assert e.value.status_name == "DtypeNotSelected"
    assert "dtype Float of kernel tag prepacked_gelu_tanh_kernel is not selected" in str(e.value)
    traced = tracing_runtime.load(program("hardswish", residual=True))
    traced.method().run(x, np.ones((2, 3), np.float32))
    kernels = traced.trace().kernel_dtypes
    assert kernels["prepacked_hardswish_kernel"] == kernels["prepacked_residual_kernel"] == ("Float",)
    assert "prepacked_gelu_kernel" not in kernels
    traced = tracing_runtime.load(program("gelu_tanh"))
    (got,) = traced.method().run(x)
    np.testing.assert_allclose(got, torch.nn.functional.gelu(y, approximate="tanh").numpy(), rtol=1e-6, atol=1e-6)
    kernels = traced.trace().kernel_dtypes
    assert kernels["prepacked_gelu_tanh_kernel"] == ("Float",) and "prepacked_gelu_kernel" not in kernels
    case = r"pare::dispatch_case<pare::tags::{}, float[,>]"
    full, sel = _unstripped_symbols(runtime_lib), _unstripped_symbols(selective_lib)
    assert _has(full, case.format("prepacked_hardswish_kernel")) and _has(sel, case.format("prepacked_gelu_kernel"))
    assert _has(full, case.format("prepacked_gelu_tanh_kernel"))
    for tag in (
        "prepacked_hardswish_kernel",
        "prepacked_residual_kernel",
        "prepacked_sigmoid_kernel",
        "prepacked_gelu_tanh_kernel",
    ):
        assert not _has(sel, case.format(tag)), f"unselected epilogue {tag} is still linked"


@pytest.mark.absent_code
def test_conv3d_code_is_absent_from_a_conv2d_only_runtime(selection_cache, runtime_lib):
    """A runtime selecting aten::convolution with convolution_kernel only (a
    2-d app) has none of the 3-d code: 5-d convolutions report the tag to
    select, and no 3-d symbol is linked (the full runtime has them)."""
    root = selection_cache
    sel = runtime_build.write_selection(
        root / "selection_conv2d_only", ["aten::convolution"], {"convolution_kernel": ["Float"]}, [], []
    )
    lib = runtime_build.build(root, "conv2d_only", selection_dir=sel)
    rt = Runtime(lib)
    assert rt.inventory().kernel_dtypes == {"convolution_kernel": ("Float",)}
    x, w = make_tensor((1, 4, 5, 6, 6), torch.float32, 53), make_tensor((6, 2, 3, 3, 3), torch.float32, 54)
    x2, w2 = x[:, :, 0].contiguous(), w[:, :, 0].contiguous()  # contiguous: no copy_kernel needed
    got = run_op(rt, "aten::convolution", x2, w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2)
    assert_same(got, F.conv2d(x2, w2, groups=2), **depth_tolerances(torch.float32, 18))
    with pytest.raises(PareError, match="dtype Float of kernel tag convolution3d_kernel is not selected") as e:
        run_op(rt, "aten::convolution", x, w, None, [1] * 3, [0] * 3, [1] * 3, False, [0] * 3, 2)
    assert e.value.status_name == "DtypeNotSelected"

    nm = require_tool("llvm-nm-16", "llvm-nm", package="llvm-16")

    def symbols(path):
        out = subprocess.run(
            [nm, "-C", "--format=just-symbols", str(path)], capture_output=True, text=True, check=True
        ).stdout
        if not out.strip():  # a stripped Bazel library: its unstripped twin
            return symbols(Path(path).parent / "unstripped" / Path(path).name)
        return out.splitlines()

    full = [s for s in symbols(runtime_lib) if "dispatch_case<pare::tags::convolution3d_kernel, float," in s]
    assert full, "the full runtime lacks the 3-d convolution"
    # Only the tag's inventory entry (its name and dtype list, which the
    # runtime's error messages and inventory read) stays.
    inventory = ("pare::tags::convolution3d_kernel::name", "pare::tags::convolution3d_kernel::dtypes")
    stray = [s for s in symbols(lib) if ("conv3d" in s or "convolution3d" in s) and s not in inventory]
    assert not stray, stray


@pytest.mark.absent_code
def test_winograd_code_only_in_runtimes_that_select_it(selection_cache, runtime_lib, tracing_runtime):
    """A runtime with prepacked convolutions but no conv2d_winograd_kernel
    or conv2d_winograd4_kernel (a model the winograd pass left alone) has
    none of their code, and names the tag to select when a program with
    transformed filters reaches it; the tracing build records the tag of
    the variant a layer runs."""
    w = make_tensor((16, 16, 3, 3), torch.float32, 55, -1, 1)
    x = make_tensor((1, 16, 8, 8), torch.float32, 56)
    program = conv_program(w, None, [1, 1], [1, 1], [1, 1], 1, winograd=True)
    traced = tracing_runtime.load(program)
    (y,) = traced.method().run(x.numpy())
    assert_same(torch.from_numpy(y), F.conv2d(x, w, padding=1), rtol=1e-4, atol=1e-4)
    assert traced.trace().kernel_dtypes["conv2d_winograd_kernel"] == ("Float",)

    root = selection_cache
    ops = ["pare::conv2d_prepack", "pare::conv2d_prepacked"]
    sel = runtime_build.write_selection(
        root / "selection_conv2d_prepacked", ops, {"prepacked_kernel": ["Float"]}, ["Conv2dPackedParams"], []
    )
    lib = runtime_build.build(root, "conv2d_prepacked", selection_dir=sel)
    loaded = Runtime(lib).load(program)
    with pytest.raises(PareError, match="dtype Float of kernel tag conv2d_winograd_kernel is not selected") as e:
        loaded.method()  # the init section's conv2d_prepack already knows
    assert e.value.status_name == "DtypeNotSelected"
    # The same layer packed for im2col runs on it.
    (y,) = Runtime(lib).load(conv_program(w, None, [1, 1], [1, 1], [1, 1], 1)).method().run(x.numpy())
    assert_same(torch.from_numpy(y), F.conv2d(x, w, padding=1), rtol=1e-4, atol=1e-4)
    # Filters transformed for F(4x4, 3x3) name that variant's tag.
    program4 = conv_program(w, None, [1, 1], [1, 1], [1, 1], 1, winograd=4)
    x4 = make_tensor((1, 16, 16, 16), torch.float32, 57, -1, 1)
    traced = tracing_runtime.load(program4)
    (y,) = traced.method().run(x4.numpy())
    assert_same(torch.from_numpy(y), F.conv2d(x4, w, padding=1), rtol=1e-4, atol=1e-4)
    assert traced.trace().kernel_dtypes["conv2d_winograd4_kernel"] == ("Float",)
    assert "conv2d_winograd_kernel" not in traced.trace().kernel_dtypes
    with pytest.raises(PareError, match="dtype Float of kernel tag conv2d_winograd4_kernel is not selected"):
        Runtime(lib).load(program4).method()
    for tile in (2, 4):
        assert _has(_unstripped_symbols(runtime_lib), rf"pare::winograd::run<{tile}>\(")
    assert not _has(_unstripped_symbols(lib), r"pare::winograd::")


@pytest.mark.absent_code
def test_pixel_rows_code_only_in_runtimes_that_select_it(selection_cache, runtime_lib, tracing_runtime):
    """pixel_rows_kernel, like Winograd: the tracing build records it when a
    1x1 convolution packed for pixel rows runs; a runtime that does not
    select it names it when such a program reaches it, runs the same layer
    packed as A, and has none of the code (the transpose, the three- and
    four-row GEMM kernels)."""
    w = make_tensor((24, 16, 1, 1), torch.float32, 57, -1, 1)
    x = make_tensor((1, 16, 2, 3), torch.float32, 58)
    program = conv_program(w, None, [1, 1], [0, 0], [1, 1], 1, pixel_rows=True)
    traced = tracing_runtime.load(program)
    (y,) = traced.method().run(x.numpy())
    assert_same(torch.from_numpy(y), F.conv2d(x, w), rtol=1e-4, atol=1e-4)
    assert traced.trace().kernel_dtypes["pixel_rows_kernel"] == ("Float",)

    root = selection_cache  # the selection of the Winograd test above: one build for both
    ops = ["pare::conv2d_prepack", "pare::conv2d_prepacked"]
    sel = runtime_build.write_selection(
        root / "selection_conv2d_prepacked", ops, {"prepacked_kernel": ["Float"]}, ["Conv2dPackedParams"], []
    )
    lib = runtime_build.build(root, "conv2d_prepacked", selection_dir=sel)
    with pytest.raises(PareError, match="dtype Float of kernel tag pixel_rows_kernel is not selected") as e:
        Runtime(lib).load(program).method()
    assert e.value.status_name == "DtypeNotSelected"
    (y,) = Runtime(lib).load(conv_program(w, None, [1, 1], [0, 0], [1, 1], 1)).method().run(x.numpy())
    assert_same(torch.from_numpy(y), F.conv2d(x, w), rtol=1e-4, atol=1e-4)
    pixel_rows_code = r"pare::gemm::(pixel_rows|transpose_product)"
    assert _has(_unstripped_symbols(runtime_lib), pixel_rows_code)
    assert not _has(_unstripped_symbols(lib), pixel_rows_code)
    # The three- and four-row kernels are inlined into the tile kernels (the
    # micro-kernel and its wrapper, in each ISA's copy), which are smaller
    # without them.
    tile_code = r"pare::gemm::\w+::(\(anonymous namespace\)::)?(micro_kernel|tile)\("
    assert _symbol_bytes(lib, tile_code) < _symbol_bytes(runtime_lib, tile_code)


class _Depthwise5x5Stride2(torch.nn.Module):
    """A depthwise 5x5 convolution at stride 2 (EfficientNet's downsampling
    layers), then ReLU."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 8, 5, stride=2, padding=2, groups=8)

    def forward(self, x):
        return torch.relu(self.conv(x))


@pytest.mark.absent_code
def test_depthwise_loops_only_in_runtimes_that_select_them(selection_cache, runtime_lib, tracing_runtime):
    """The depthwise fast path's vector loops, one tag per kernel size and
    stride (common/depthwise.h): a model with a 5x5 stride-2 depthwise layer
    traces to that variant's tag alone, and the runtime built from its
    manifest runs it against torch with that loop and no other; layers whose
    loop a runtime lacks run on the direct loop (aten::convolution) or the
    GEMM (pare::conv2d_prepacked), as torch computes them."""
    from tools.tracer.model_spec import ModelSpec
    from tools.tracer.tracing import trace_model

    torch.manual_seed(61)
    module = _Depthwise5x5Stride2().eval()
    x = make_tensor((2, 8, 13, 11), torch.float32, 62, -1, 1)
    spec = ModelSpec(Path(__file__), module, ((x,),))
    result = trace_model(spec, runtime=tracing_runtime.path)
    manifest = result.manifest
    depthwise_tags = {t: d for t, d in manifest.kernel_metadata.items() if t.startswith("depthwise_")}
    assert depthwise_tags == {"depthwise_5x5_7x7_s2_kernel": ("Float",)}

    root = selection_cache
    ops = [*manifest.operators, "aten::convolution"]
    kernel_dtypes = {t: list(d) for t, d in manifest.kernel_metadata.items()} | {"convolution_kernel": ["Float"]}
    sel = runtime_build.write_selection(
        root / "selection_depthwise_5x5_s2", ops, kernel_dtypes, sorted(manifest.custom_classes), []
    )
    lib = runtime_build.build(root, "depthwise_5x5_s2", selection_dir=sel)
    with torch.no_grad():
        want = module(x)
    (y,) = Runtime(lib).load(result.exported.program).method().run(x.numpy())
    assert_same(torch.from_numpy(y), want, rtol=1e-5, atol=1e-5)
    plane = r"pare::depthwise::\w+::plane<{}, {}>\("
    full, traced = _unstripped_symbols(runtime_lib), _unstripped_symbols(lib)
    for k, stride in ((3, 1), (3, 2), (0, 1), (0, 2)):
        assert _has(full, plane.format(k, stride))
        assert _has(traced, plane.format(k, stride)) == ((k, stride) == (0, 2)), f"plane<{k}, {stride}>"
    # The AVX-512 copy of the 3x3 loops (an x86_64 runtime at level auto:
    # one with the AVX-512 GEMM tile) rides the 3x3 variants' tags too.
    for stride in (1, 2):
        v4_plane = rf"pare::depthwise::x86_64_v4::plane<3, {stride}>\("
        assert _has(full, v4_plane) == _has(full, r"pare::gemm::x86_64_v4::")
        assert not _has(traced, v4_plane)
    # aten::convolution: its 5x5 stride-2 layer on the loop, a 3x3 one (not
    # selected) on the direct loop.
    w3 = make_tensor((8, 1, 3, 3), torch.float32, 63, -1, 1)
    for w, stride, padding in ((module.conv.weight.detach(), 2, 2), (w3, 1, 1)):
        args = (x, w, None, [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], 8)
        got = run_op(Runtime(lib), "aten::convolution", *args)
        assert_same(got, torch.ops.aten.convolution(*args), rtol=1e-5, atol=1e-5)

    # A runtime with prepacked convolutions but no depthwise loop runs each
    # variant's layer on the GEMM.
    sel = runtime_build.write_selection(
        root / "selection_conv2d_prepacked",
        ["pare::conv2d_prepack", "pare::conv2d_prepacked"],
        {"prepacked_kernel": ["Float"]},
        ["Conv2dPackedParams"],
        [],
    )
    lib = runtime_build.build(root, "conv2d_prepacked", selection_dir=sel)
    assert not _has(_unstripped_symbols(lib), r"pare::depthwise::")
    for k, stride, multiplier in ((3, 1, 1), (3, 2, 2), (5, 1, 1), (7, 2, 1)):
        w = make_tensor((8 * multiplier, 1, k, k), torch.float32, 64 + k, -1, 1)
        b = make_tensor((8 * multiplier,), torch.float32, 65, -1, 1)
        program = conv_program(w, b, [stride] * 2, [k // 2] * 2, [1, 1], 8)
        (y,) = Runtime(lib).load(program).method().run(x.numpy())
        want = F.conv2d(x, w, b, stride=stride, padding=k // 2, groups=8)
        assert_same(torch.from_numpy(y), want, rtol=1e-5, atol=1e-5)


def _symbol_bytes(lib: Path, pattern: str) -> int:
    """The size of the functions of `lib` (or of its unstripped twin) whose
    demangled names match `pattern` (re.match; at least one)."""
    lib = Path(lib)
    twin = lib.parent / "unstripped" / lib.name
    out = subprocess.run(
        [_nm(), "-C", "-S", "--defined-only", str(twin if twin.exists() else lib)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    sizes = [int(line.split(" ", 3)[1], 16) for line in out.splitlines() if re.match(pattern, line.split(" ", 3)[-1])]
    assert sizes, f"{lib}: no function matches {pattern}"
    return sum(sizes)
