"""x86_64 ISA levels (--//runtime:x86_64_isa, rules/private/isa.bzl): the
baseline runtime carries no AVX instruction; the auto runtime (the default)
keeps its AVX code inside the x86-64-v3 and v4 copies of the GEMM kernels,
runs the best copy the CPU has and the one pare_set_max_isa caps it at; the
v3 runtime runs the 6x16 AVX2+FMA GEMM tile; on every copy their float32
GEMM, convolution and prepacked products stay within the float32
dot-product bound of a float64 reference; and a v3 runtime is refused, with
the fix, on a CPU without AVX2+FMA.

A copy the CPU lacks is a platform limit (cpu:avx2, cpu:avx512): its cases
skip, and the skip gate's summary counts them; the suite must run every copy
the host has (isa_coverage, docs/testing.md "Skips").

The whole fp_ops suite also runs on the v3 runtime (//tests:kernels_v3_test)
and on the auto runtime capped at SSE2 (//tests:kernels_baseline_test);
these tests add the tile's edge shapes. Speed is a benchmark:
python -m tools.bench.sgemm."""

import re
import subprocess
from pathlib import Path

import pytest
import runtime_build
import torch
import torch.nn.functional as F
from runtime_testing import (
    assert_within_dot_bound,
    conv_program,
    linear_program,
    make_tensor,
    run_op,
    runtime_isa_limit,
)

import pare.runtime
from pare.program import ProgramBuilder
from pare.runtime import PareError, Runtime
from tests import skip_gate
from tests.conftest import require_tool

# Each copy runs where the host has it and skips as a platform limit where
# it lacks it (the summary lists such skips), rather than testing another
# copy in its place; and the suite must run every copy the host runs.
needs_v3_cpu = pytest.mark.platform_limit("cpu:avx2")
needs_v4_cpu = pytest.mark.platform_limit("cpu:avx512")
pytestmark = [
    pytest.mark.platform_limit("arch:x86_64"),
    pytest.mark.isa_coverage("x86_64_baseline", "x86_64_v3", "x86_64_v4"),
]


def disassembly(lib) -> str:
    objdump = require_tool("llvm-objdump-16", "llvm-objdump", package="llvm-16")
    return subprocess.run(
        [objdump, "-d", "--no-show-raw-insn", str(lib)], capture_output=True, text=True, check=True
    ).stdout


def test_baseline_runtime_has_no_avx_instruction(runtime_baseline_lib):
    rt = Runtime(runtime_baseline_lib)
    assert rt.isa == "x86_64_baseline" and rt.kernel_isa == "x86_64_baseline"
    text = disassembly(runtime_baseline_lib)
    assert "%xmm" in text  # SSE2 kernels are there
    assert "%ymm" not in text and "vfmadd" not in text


# An instruction the x86-64-v3 level adds (VEX-encoded SSE/AVX, BMI1/2,
# LZCNT, MOVBE), in llvm-objdump's AT&T syntax.
V3_INSTRUCTION = re.compile(r"^\s*[0-9a-f]+:\s+(v[a-z0-9]+|shlx|shrx|sarx|andn|bzhi|pdep|pext|lzcnt|movbe)\b|%ymm")


def functions_with_v3_code(lib: Path, pattern: re.Pattern | str = V3_INSTRUCTION) -> dict[str, int]:
    """Demangled function name -> count of instructions matching `pattern`
    (default: those x86-64-v3 adds), for every function of `lib` (its
    unstripped twin, whose symbols name the functions) that has any."""
    twin = Path(lib).parent / "unstripped" / Path(lib).name
    lib = twin if twin.exists() else Path(lib)
    objdump = require_tool("llvm-objdump-16", "llvm-objdump", package="llvm-16")
    text = subprocess.run(
        [objdump, "-d", "-C", "--no-show-raw-insn", str(lib)], capture_output=True, text=True, check=True
    ).stdout
    pattern = re.compile(pattern)
    counts: dict[str, int] = {}
    function = None
    for line in text.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if header:
            function = header.group(1)
        elif function and pattern.search(line):
            counts[function] = counts.get(function, 0) + 1
    return counts


def test_auto_runtime_keeps_avx_inside_its_v3_and_v4_kernels(runtime, runtime_lib):
    # The default level: SSE2 code, a second copy of the GEMM's kernels
    # compiled for x86-64-v3 and an AVX-512 tile, which only a CPU with
    # those extensions runs. An inline function shared by the copies and
    # kept out of line could otherwise carry AVX code into the SSE2 path
    # (SIGILL on an older CPU).
    assert runtime.isa == "x86_64_auto"
    v3 = functions_with_v3_code(runtime_lib)
    # A copy's function, or a template instantiated over one of its lambdas.
    outside = sorted(f for f in v3 if "::x86_64_v3::" not in f and "::x86_64_v4::" not in f)
    assert not outside, f"x86-64-v3 instructions outside the v3 and v4 kernels: {outside[:5]}"
    assert any(f.startswith("pare::gemm::x86_64_v3::tile(") for f in v3)
    assert any(f.startswith("pare::gemm::x86_64_v3::sgemm_narrow(") for f in v3)
    lines = disassembly(runtime_lib).splitlines()
    assert any("vfmadd231ps" in line and "%zmm" in line for line in lines)  # the v4 tile (the library is stripped)
    zmm = {f for f, n in functions_with_v3_code(runtime_lib, r"%zmm").items() if n}
    assert zmm and all("::x86_64_v4::" in f for f in zmm), sorted(zmm)[:5]


@pytest.mark.parametrize(
    "cap",
    ["x86_64_baseline", pytest.param("x86_64_v3", marks=needs_v3_cpu), pytest.param("x86_64_v4", marks=needs_v4_cpu)],
)
def test_auto_runtime_capped_at_a_copy_the_cpu_has_runs_that_copy(runtime, cap):
    try:
        runtime.set_max_isa(cap)
        assert runtime.kernel_isa == cap
    finally:
        runtime.set_max_isa("x86_64_v4")  # process-wide: leave the other tests uncapped


def test_auto_runtime_runs_the_best_copy_this_cpu_has(runtime):
    # The runtime's CPUID and XGETBV against /proc/cpuinfo: uncapped (or
    # capped above the CPU), it runs the best copy the host runs.
    assert runtime.kernel_isa == skip_gate.host_isa_copies()[-1]


def test_auto_runtime_cap_errors_and_the_environment(runtime, monkeypatch):
    try:
        with pytest.raises(PareError, match=r"'arm64_neon' is not an instruction set of this x86_64_auto runtime"):
            runtime.set_max_isa("arm64_neon")
        with pytest.raises(PareError, match=r"'avx512' is not .*; use x86_64_baseline, x86_64_v3 or x86_64_v4") as e:
            runtime.set_max_isa("avx512")
        assert e.value.status_name == "InvalidArgument"
        # $PARE_MAX_ISA caps a runtime when it is created.
        monkeypatch.setenv(pare.runtime.MAX_ISA_ENV, "x86_64_baseline")
        assert Runtime(runtime.path).kernel_isa == "x86_64_baseline"
    finally:
        runtime.set_max_isa("x86_64_v4")


@needs_v3_cpu
def test_a_v3_runtime_cannot_be_capped_at_sse2(runtime_v3):
    assert runtime_v3.kernel_isa == "x86_64_v3"
    with pytest.raises(PareError, match=r"built for x86_64_v3 and has no kernels below it; use a runtime built at"):
        runtime_v3.set_max_isa("x86_64_baseline")
    runtime_v3.set_max_isa("x86_64_v3")


def test_v3_runtime_runs_the_fma_tile(runtime_v3_lib):
    lines = disassembly(runtime_v3_lib).splitlines()
    fma = [i for i, line in enumerate(lines) if "vfmadd231ps" in line and "%ymm" in line]
    if runtime_build.sanitizers():
        # make sanitize: ASan checks every load, so the loop's shape is not
        # kept; the 8-lane fused multiply-adds are.
        assert fma, "no ymm FMA in the (sanitized) v3 runtime"
        return
    # The micro-kernel's inner loop (the library is stripped, so found by its
    # shape): 12 ymm FMAs, one per accumulator, within 20 instructions.
    assert any(fma[j + 11] - fma[j] < 20 for j in range(len(fma) - 11)), "no 6x16 FMA tile in the v3 runtime"


def test_v3_runtime_is_refused_on_a_cpu_without_avx2(runtime_v3_lib, monkeypatch):
    monkeypatch.setattr(pare.runtime, "host_cpu_flags", lambda: frozenset({"sse2", "avx"}))
    with pytest.raises(PareError, match=r"built for x86_64_v3 .* lacks avx2, fma, .*x86_64_isa=auto \(the default\)"):
        Runtime(runtime_v3_lib)


def test_a_suite_on_a_v3_runtime_is_a_platform_limit_on_a_cpu_without_avx2(monkeypatch):
    # tests/runtime/conftest.py marks every test of a suite whose runtimes
    # are built for an ISA level with the limit under which the CPU cannot
    # run them (//tests:kernels_v3_test); the skip gate skips them there.
    assert runtime_isa_limit(None) is None and runtime_isa_limit("") is None
    assert runtime_isa_limit("x86_64_v3") == "cpu:avx2"
    monkeypatch.setattr(pare.runtime, "host_cpu_flags", lambda: frozenset({"sse2", "avx"}))
    assert skip_gate.LIMITS["cpu:avx2"].holds() and skip_gate.LIMITS["cpu:avx512"].holds()
    monkeypatch.setattr(pare.runtime, "host_cpu_flags", lambda: frozenset(pare.runtime.ISA_CPU_FEATURES["x86_64_v3"]))
    assert not skip_gate.LIMITS["cpu:avx2"].holds() and skip_gate.LIMITS["cpu:avx512"].holds()
    assert skip_gate.host_isa_copies() == ["x86_64_baseline", "x86_64_v3"]
    monkeypatch.setattr(
        pare.runtime,
        "host_cpu_flags",
        lambda: frozenset(pare.runtime.ISA_CPU_FEATURES["x86_64_v3"]) | skip_gate.AVX512_FLAGS,
    )
    assert skip_gate.host_isa_copies() == ["x86_64_baseline", "x86_64_v3", "x86_64_v4"]
    with pytest.raises(ValueError, match=r"PARE_RUNTIME_ISA=x86_64_v9: unknown ISA level; expected one of x86_64_v3"):
        runtime_isa_limit("x86_64_v9")


@pytest.fixture(scope="module")
def runtime_v3(runtime_v3_lib):
    skip_gate.skip_if_limit("cpu:avx2")
    rt = Runtime(runtime_v3_lib)
    assert rt.isa == "x86_64_v3"
    return rt


# The runtime and cap of each copy a test runs on: the v3 runtime's, and the
# auto runtime's AVX-512, v3 and SSE2 copies.
KERNELS = {"v3": "x86_64_v3", "auto_v4": "x86_64_v4", "auto_v3": "x86_64_v3", "auto_sse2": "x86_64_baseline"}


@pytest.fixture(
    params=[
        pytest.param("v3", marks=[needs_v3_cpu, pytest.mark.isa_level_build]),
        pytest.param("auto_v4", marks=needs_v4_cpu),
        pytest.param("auto_v3", marks=needs_v3_cpu),
        "auto_sse2",
    ]
)
def kernels(request, runtime):
    """The runtime whose GEMM tiles a test checks: the v3 runtime's, and the
    auto runtime's capped at v4 (its AVX-512 tile), at v3 and at SSE2. Each
    runs the copy it names, or skips where the CPU lacks it."""
    if request.param == "v3":
        rt = request.getfixturevalue("runtime_v3")
    else:
        rt = runtime
        runtime.set_max_isa(KERNELS[request.param])
        request.addfinalizer(lambda: runtime.set_max_isa("x86_64_v4"))
    assert rt.kernel_isa == KERNELS[request.param]
    return rt


# m, k, n around the 6x16 tile, the 256-deep and 72-row / 256-column blocks,
# and the 512-column blocks of a CPU with more than 1 MB of L2
# (gemm::blocking_for): 512 columns exactly, one more, and two blocks and
# an edge.
GEMM_SHAPES = [
    (1, 1, 1),
    (6, 16, 16),
    (5, 3, 31),
    (7, 257, 17),
    (13, 300, 33),
    (72, 256, 256),
    (73, 513, 272),
    (13, 260, 512),
    (79, 257, 513),
    (7, 300, 1100),
    (1, 1000, 100),
    (0, 4, 3),
    (3, 0, 5),
]


@pytest.mark.parametrize("m,k,n", GEMM_SHAPES)
def test_tile_mm(kernels, m, k, n):
    a, b = make_tensor((m, k), torch.float32, 3, -1, 1), make_tensor((k, n), torch.float32, 4, -1, 1)
    got = run_op(kernels, "aten::mm", a, b)
    assert_within_dot_bound(got, a.double() @ b.double(), a.double().abs() @ b.double().abs(), k)


@pytest.mark.parametrize("m,k,n", [(5, 33, 17), (70, 257, 9), (2, 300, 600)])
def test_tile_addmm_alpha_beta(kernels, m, k, n):
    bias = make_tensor((n,), torch.float32, 5, -1, 1)
    a, b = make_tensor((m, k), torch.float32, 6, -1, 1), make_tensor((k, n), torch.float32, 7, -1, 1)
    got = run_op(kernels, "aten::addmm", bias, a, b, 0.5, 2.0)  # beta, alpha
    exact = 0.5 * bias.double() + 2.0 * (a.double() @ b.double())
    magnitude = 0.5 * bias.double().abs() + 2.0 * (a.double().abs() @ b.double().abs())
    assert_within_dot_bound(got, exact, magnitude, k + 2)


CONV_CASES = [  # x, w, stride, padding, groups: odd channels, stride 2, groups, depthwise, 1x1, 7x7, batch > 1
    ((2, 3, 7, 7), (5, 3, 3, 3), 1, 1, 1),
    ((1, 17, 9, 11), (19, 17, 3, 3), 2, 1, 1),
    ((2, 12, 10, 10), (18, 4, 3, 3), 1, 0, 3),
    ((1, 24, 13, 13), (24, 1, 3, 3), 2, 1, 24),
    ((1, 33, 1, 1), (40, 33, 1, 1), 1, 0, 1),
    ((3, 5, 7, 7), (70, 5, 7, 7), 1, 3, 1),
    ((1, 64, 20, 20), (70, 64, 3, 3), 1, 1, 1),  # depth 576 > one 256-deep block
    ((1, 3, 9, 70), (5, 3, 3, 3), 2, 1, 1),  # stride 2 across rows wider than a panel (im2col's strided copies)
    ((2, 33, 2, 2), (13, 33, 1, 1), 1, 0, 1),  # 1x1 over 4 pixels: the narrow GEMM
    ((1, 33, 2, 3), (13, 33, 1, 1), 1, 0, 1),  # ... over 6: pixel rows
    ((1, 300, 1, 1), (40, 300, 1, 1), 1, 0, 1),  # ... over 1 pixel, 2 depth blocks, a tail of depths
    ((2, 13, 2, 2), (13, 1, 5, 5), 1, 2, 13),  # depthwise over a tiny plane: vectors across channels
    # Depthwise at stride 2 over rows of several vectors, odd and even padding (the deinterleaved rows).
    ((1, 8, 9, 41), (8, 1, 3, 3), 2, 1, 8),
    ((1, 4, 11, 38), (4, 1, 5, 5), 2, 2, 4),
    # Planes whose rows are narrower than a vector (3x3, 1x3 and 9x1 outputs): a row's last vector may only
    # run into the plane's later rows, never past the plane.
    ((2, 9, 5, 5), (9, 1, 3, 3), 2, 1, 9),
    ((1, 6, 1, 5), (12, 1, 3, 3), 2, 1, 6),
    ((1, 5, 9, 1), (5, 1, 3, 3), 1, 1, 5),
    # Rows of whole 16-lane vectors and a masked last one, in blocks of four rows and a leftover (the AVX-512
    # copy): 3x3 over 37 = 2 x 16 + 5 columns and 13 rows at stride 1, 20 = 16 + 4 over 6 rows at stride 2; 5x5
    # and 7x7 likewise.
    ((1, 3, 13, 37), (3, 1, 3, 3), 1, 1, 3),
    ((2, 2, 12, 40), (2, 1, 3, 3), 2, 1, 2),
    ((1, 3, 13, 37), (3, 1, 5, 5), 1, 2, 3),
    ((1, 2, 14, 41), (2, 1, 7, 7), 2, 3, 2),
]


@pytest.mark.parametrize("x_shape,w_shape,stride,padding,groups", CONV_CASES)
def test_tile_convolution(kernels, x_shape, w_shape, stride, padding, groups):
    x, w = make_tensor(x_shape, torch.float32, 8, -1, 1), make_tensor(w_shape, torch.float32, 9, -1, 1)
    b = make_tensor((w_shape[0],), torch.float32, 10, -1, 1)
    got = run_op(kernels, "aten::convolution", x, w, b, [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], groups)
    exact = F.conv2d(x.double(), w.double(), b.double(), stride, padding, 1, groups)
    magnitude = F.conv2d(x.double().abs(), w.double().abs(), b.double().abs(), stride, padding, 1, groups)
    assert_within_dot_bound(got, exact, magnitude, w[0].numel() + 1)


def test_tile_non_contiguous_mm(kernels):
    a = make_tensor((40, 21), torch.float32, 11, -1, 1).t()  # [21, 40], column-major
    b = make_tensor((40, 70), torch.float32, 12, -1, 1)[:, ::2]  # [40, 35], strided columns
    got = run_op(kernels, "aten::mm", a, b)
    assert_within_dot_bound(got, a.double() @ b.double(), a.double().abs() @ b.double().abs(), 40)


@pytest.mark.parametrize("in_shape,out_features", [((5, 33), 17), ((70, 257), 9), ((1, 300), 600), ((2, 70), 100)])
def test_tile_linear_prepacked(kernels, in_shape, out_features):
    x = make_tensor(in_shape, torch.float32, 13, -1, 1)
    w = make_tensor((out_features, in_shape[-1]), torch.float32, 14, -1, 1)
    b = make_tensor((out_features,), torch.float32, 15, -1, 1)
    (y,) = kernels.load(linear_program(w, b, in_shape)).method().run(x.numpy())
    exact = F.linear(x.double(), w.double(), b.double())
    magnitude = F.linear(x.double().abs(), w.double().abs(), b.double().abs())
    assert_within_dot_bound(torch.from_numpy(y), exact, magnitude, in_shape[-1] + 1)


@pytest.mark.parametrize("x_shape,w_shape,stride,padding,groups", CONV_CASES)
def test_tile_conv2d_prepacked(kernels, x_shape, w_shape, stride, padding, groups):
    x, w = make_tensor(x_shape, torch.float32, 16, -1, 1), make_tensor(w_shape, torch.float32, 17, -1, 1)
    b = make_tensor((w_shape[0],), torch.float32, 18, -1, 1)
    program = conv_program(w, b, (stride, stride), (padding, padding), (1, 1), groups)
    (y,) = kernels.load(program).method().run(x.numpy())
    exact = F.conv2d(x.double(), w.double(), b.double(), stride, padding, 1, groups)
    magnitude = F.conv2d(x.double().abs(), w.double().abs(), b.double().abs(), stride, padding, 1, groups)
    assert_within_dot_bound(torch.from_numpy(y), exact, magnitude, w[0].numel() + 1)


@needs_v4_cpu
@pytest.mark.parametrize("kernel", [3, 5, 7])
@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_v4_copy_gives_the_v3_copys_bits(runtime, kernel, stride):
    # The AVX-512 loops sum each output's taps in the v3 copy's order, fused
    # as its are (depthwise_x86_64_v4.cc), over rows of whole and masked
    # vectors, blocks of four rows and leftovers, a bias and relu6.
    x = make_tensor((2, 5, 30, 45), torch.float32, 50, -2, 2)
    w, b = make_tensor((5, 1, kernel, kernel), torch.float32, 51, -1, 1), make_tensor((5,), torch.float32, 52, -1, 1)
    pb = ProgramBuilder()
    m = pb.method()
    packed = m.conv2d_prepack(w, b, [stride] * 2, [kernel // 2] * 2, [1, 1], 5)
    m.output(m.op("pare::conv2d_prepacked", m.input("Float"), packed, 0.0, 6.0))
    program = pb.to_bytes()
    outputs = {}
    try:
        for isa in ("x86_64_v4", "x86_64_v3"):
            runtime.set_max_isa(isa)
            (outputs[isa],) = runtime.load(program).method().run(x.numpy())
    finally:
        runtime.set_max_isa("x86_64_v4")
    assert outputs["x86_64_v4"].tobytes() == outputs["x86_64_v3"].tobytes()


# Convolutions packed for pixel rows on their im2col matrix: 1 to 4
# pixels (the few-rows kernels, over 32-column tiles and a short one), 9
# (a full panel and three rows), two depth blocks.
PIXEL_ROWS_CASES = [  # x, w, stride, padding
    ((1, 9, 1, 1), (70, 9, 3, 3), 1, 1),
    ((1, 30, 1, 2), (64, 30, 3, 3), 1, 1),
    ((1, 40, 3, 1), (40, 40, 3, 3), 1, 1),
    ((1, 16, 4, 4), (33, 16, 3, 3), 2, 1),
    ((1, 8, 3, 3), (32, 8, 3, 3), 1, 1),
]


@pytest.mark.parametrize("x_shape,w_shape,stride,padding", PIXEL_ROWS_CASES)
def test_tile_conv2d_pixel_rows(kernels, x_shape, w_shape, stride, padding):
    x, w = make_tensor(x_shape, torch.float32, 22, -1, 1), make_tensor(w_shape, torch.float32, 23, -1, 1)
    b = make_tensor((w_shape[0],), torch.float32, 24, -1, 1)
    program = conv_program(w, b, (stride, stride), (padding, padding), (1, 1), 1, pixel_rows=True)
    (y,) = kernels.load(program).method().run(x.numpy())
    exact = F.conv2d(x.double(), w.double(), b.double(), stride, padding)
    magnitude = F.conv2d(x.double().abs(), w.double().abs(), b.double().abs(), stride, padding)
    assert_within_dot_bound(torch.from_numpy(y), exact, magnitude, w[0].numel() + 1)


PREPACKED_X = make_tensor((5, 300), torch.float32, 19, -1, 1)
PREPACKED_W = make_tensor((37, 300), torch.float32, 20, -1, 1)
PREPACKED_B = make_tensor((37,), torch.float32, 21, -1, 1)


@pytest.fixture(scope="module")
def prepacked_program() -> bytes:
    return linear_program(PREPACKED_W, PREPACKED_B, (5, 300))


def test_one_prepacked_program_for_every_isa(kernels, prepacked_program):
    # Weights are packed ahead of time (pare/packing.py) in one layout for
    # every build: the same program bytes (built once for the module), a
    # linear layer whose columns and depth are no multiple of any tile (and
    # span two depth blocks), run on every copy (and on arm64:
    # test_portability.py).
    x, w, b = PREPACKED_X, PREPACKED_W, PREPACKED_B
    (y,) = kernels.load(prepacked_program).method().run(x.numpy())
    exact = F.linear(x.double(), w.double(), b.double())
    magnitude = F.linear(x.double().abs(), w.double().abs(), b.double().abs())
    assert_within_dot_bound(torch.from_numpy(y), exact, magnitude, 301)


# gemm::blocking_for, the loop blocking chosen from the L2's size (a pure
# constexpr function, checked at compile time): the Zen 5's constants (1 MB)
# for 1 MB or less and an unknown cache (0, arm64), wider B blocks and
# the AVX-512 tile's two A panels a call above;
# always whole register tiles and A panels, and a wider B block and the A
# block within half the L2 that chose them.
BLOCKING_CHECKS = r"""
#include "runtime/kernels/common/gemm.h"
namespace g = pare::gemm;
static_assert(g::blocking_for(0).mc == 72 && g::blocking_for(0).nc == 256, "unknown cache: the Zen 5's");
static_assert(g::blocking_for(512 << 10).nc == 256, "Zen 3, 512 KB");
static_assert(g::blocking_for(1 << 20).mc == 72 && g::blocking_for(1 << 20).nc == 256, "Zen 5, 1 MB");
static_assert(g::blocking_for(1280 << 10).mc == 72 && g::blocking_for(1280 << 10).nc == 512, "Ice Lake SP, 1.25 MB");
static_assert(g::blocking_for(2 << 20).nc == 512, "Sapphire Rapids, 2 MB");
static_assert(!g::blocking_for(0).pairs && !g::blocking_for(1 << 20).pairs, "unknown and Zen 5: one A panel a tile");
static_assert(g::blocking_for(1280 << 10).pairs && g::blocking_for(2 << 20).pairs, "Ice Lake SP and up: two");
constexpr bool sane(int64_t l2) {
  const g::Blocking b = g::blocking_for(l2);
  return b.mc > 0 && b.mc % g::kMR == 0 && b.nc > 0 && b.nc % g::kTileCols == 0 &&
         (l2 <= (1 << 20) || (b.nc + b.mc) * g::kKC * 4 <= l2 / 2);
}
static_assert(sane(0) && sane(256 << 10) && sane(512 << 10) && sane(1 << 20) && sane((1 << 20) + 1) &&
                  sane(1280 << 10) && sane(2 << 20) && sane(32 << 20), "whole tiles, within the cache");
"""


def test_gemm_blocking_follows_the_l2(tmp_path):
    cxx = require_tool(runtime_build.CXX, package="clang-16")
    src = tmp_path / "blocking.cc"
    src.write_text(BLOCKING_CHECKS)
    flags = [
        *runtime_build.HOUSE_FLAGS,
        "-fsyntax-only",
        f"-I{runtime_build.REPO}",
        f"-I{runtime_build.DEFAULT_SELECTION}",
    ]
    r = subprocess.run([cxx, *flags, str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
