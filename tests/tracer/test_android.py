"""check on an Android arm64 runtime, run under qemu-aarch64 through the
emulator harness's `run` mode (an emulated stand-in for a device). Uses
PARE_ANDROID_RUNTIME_LIB and PARE_HARNESS_DIR when set; otherwise builds
Bazel's //runtime:full (android_arm64) and //tools/android_harness:harness.

Every test runs twice: on the shipped build, and on the same runtime built
with UBSan in trap mode (//runtime:full_android_arm64_ubsan_trap; no
sanitizer runtime for arm64 is installed here):
undefined behaviour on the arm64 paths (NEON kernels, arm64's own
conversions) executes a `brk` and ends the harness with an error. That
build also checks the demo and more test models, and a planted overflow
proves a trap is reported (docs/testing.md, "Sanitizers")."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from tracer_testlib import exported, spec_of

from tests.conftest import REPO_ROOT, bazel_build, require_tool
from tests.runtime.runtime_testing import half_rounding_cases, single_op_program
from tools.android_harness import run as harness
from tools.tracer import check_model
from tools.tracer.model_spec import load_model_spec
from tools.tracer.runner import library_kind

UBSAN_TRAP_TARGET = "//runtime:full_android_arm64_ubsan_trap"
# Checked on the UBSan build besides the tests below: the demo app and the
# test models of tests/tracer/models/ (spec_of) that cover what the others do not.
UBSAN_MODELS = ["demo", "tiny_mlp", "winograd_stages", "reshape_dynamic"]


def _harness() -> None:
    require_tool("qemu-aarch64", "qemu-aarch64-static", package="qemu-user")
    if not os.environ.get("PARE_HARNESS_DIR"):  # unset: the harness runner uses Bazel's output
        bazel_build("//tools/android_harness:harness")


@pytest.fixture(scope="module")
def ubsan_lib() -> Path:
    """//runtime:full for android_arm64 with UBSan in trap mode."""
    _harness()
    bundle = bazel_build(UBSAN_TRAP_TARGET) / "runtime" / "full_android_arm64_ubsan_trap"
    return bundle / "android_arm64" / "libpare_full_android_arm64_ubsan_trap.so"


@pytest.fixture(scope="module", params=["shipped", "ubsan_trap"])
def android_lib(request) -> Path:
    if request.param == "ubsan_trap":
        return request.getfixturevalue("ubsan_lib")
    _harness()
    if os.environ.get("PARE_ANDROID_RUNTIME_LIB"):
        return Path(os.environ["PARE_ANDROID_RUNTIME_LIB"])
    return bazel_build("//runtime:full") / "runtime" / "full" / "android_arm64" / "libpare_full.so"


def _ubsan_traps(lib: Path) -> int:
    """How many UBSan trap instructions (brk #0x55xx on AArch64) lib holds."""
    objdump = require_tool("llvm-objdump-16", "llvm-objdump", package="llvm-16")
    text = subprocess.run([objdump, "-d", str(lib)], capture_output=True, text=True, check=True).stdout
    return len(re.findall(r"\bbrk\s+#0x55[0-9a-f]{2}\b", text))


def test_the_ubsan_build_is_instrumented_and_a_trap_is_reported(ubsan_lib, tmp_path):
    assert _ubsan_traps(ubsan_lib) > 1000, "the UBSan build holds no trap: --//runtime:ubsan_trap reached no compile"
    # A planted signed overflow, compiled the same way, ends the harness with an error.
    canary = tmp_path / "libcanary.so"
    (tmp_path / "canary.c").write_text(
        "int pare_canary_add(int x) { return x + 2147483647; }  /* overflows for x > 0 */\n"
    )
    subprocess.run(
        [
            require_tool("clang-16", package="clang-16"),
            "--target=aarch64-linux-android24",
            "-O1",
            "-fsanitize=undefined",
            "-fsanitize-trap=undefined",
            "-shared",
            "-nostdlib",
            "-fuse-ld=lld",
            "-o",
            str(canary),
            str(tmp_path / "canary.c"),
        ],
        check=True,
    )
    assert _ubsan_traps(canary) == 1
    assert harness.call_i32(canary, "pare_canary_add", -1) == 2147483646  # no overflow: no trap
    with pytest.raises(harness.HarnessError, match=r"harness failed"):
        harness.call_i32(canary, "pare_canary_add", 1)


@pytest.mark.parametrize("model", UBSAN_MODELS)
def test_models_match_torch_on_the_ubsan_build(ubsan_lib, model):
    spec = load_model_spec(REPO_ROOT / "apps" / "demo" / "model.py") if model == "demo" else spec_of(model)
    checks = check_model(spec, ubsan_lib)
    assert checks and all(c.ok for c in checks), [c.line() for c in checks if not c.ok]


def test_check_runs_the_android_runtime_under_the_harness(android_lib):
    assert library_kind(android_lib) == "android_arm64"
    checks = check_model(spec_of("multi_dtype"), android_lib)
    assert [c.method for c in checks] == ["forward", "forward_int64_int64", "forward", "forward_float64_float64"]
    assert all(c.ok for c in checks)


def test_a_stateful_model_is_checked_as_one_sequence_under_the_harness(android_lib):
    # tests/mobile/state/kv_cache.py: a prefill and a decode step, then more decode
    # steps; each call replays the calls before it on one method instance.
    spec = load_model_spec(REPO_ROOT / "tests" / "mobile" / "state" / "kv_cache.py")
    generator = torch.Generator().manual_seed(2)
    decode = tuple((torch.randn(1, 1, 8, generator=generator), torch.tensor([p])) for p in (4, 5))
    spec = dataclasses.replace(spec, inputs=(*spec.inputs, *decode))
    checks = check_model(spec, android_lib)
    assert [c.index for c in checks] == [0, 1, 2, 3] and all(c.ok for c in checks), [c.line() for c in checks]


def test_harness_run_mode_outputs_and_errors(android_lib):
    program = exported("tiny_mlp").program
    x = harness.TensorData(6, (2, 12), bytes(2 * 12 * 4))  # zeros
    probs, batch = harness.run_program(android_lib, program, "forward", [x])
    assert batch == 2
    assert probs.dtype == 6 and probs.sizes == (2, 5) and len(probs.data) == 2 * 5 * 4
    with pytest.raises(harness.HarnessError, match="pare_method_create failed: .*nope"):
        harness.run_program(android_lib, program, "nope", [x])
    with pytest.raises(harness.HarnessError, match="pare_method_set_input failed"):
        harness.run_program(android_lib, program, "forward", [harness.TensorData(6, (2, 7), bytes(2 * 7 * 4))])


@pytest.mark.parametrize("model", ["fast_kernels", "depthwise_rows"])
def test_fast_kernels_match_torch_on_android_arm64(android_lib, model):
    # The NEON builds of the vectorised depthwise kernels and the GEMM tile,
    # on odd shapes (tests/tracer/models/fast_kernels.py), and the depthwise
    # rows' 16-output step on wide rows (depthwise_rows.py).
    checks = check_model(spec_of(model), android_lib)
    assert checks and all(c.ok for c in checks), [c.line() for c in checks if not c.ok]


def test_float_to_half_is_bit_for_bit_with_arm64_fcvt(android_lib):
    # arm64 converts Float to Half in hardware (runtime/core/scalar_type.h):
    # c10::Half's bits at every rounding boundary, NaN canonicalised.
    x, want = half_rounding_cases()
    program, _ = single_op_program("aten::_to_copy", [x, torch.float16])
    (out,) = harness.run_program(
        android_lib, program, "forward", [harness.TensorData(6, tuple(x.shape), x.numpy().tobytes())]
    )
    got = np.frombuffer(out.data, dtype=np.uint16)
    assert out.dtype == 5 and got.shape == want.shape
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:5]


# The int8 layers' GEMM on arm64 (runtime/kernels/quantized/qgemm_arm64.inc):
# its SDOT copy where the CPU has the ARMv8.2 dot product, its plain NEON one
# elsewhere. qemu's default CPU model (max) has the dot product; cortex-a57
# is an ARMv8.0 core without it (the runtime finds that through the PAL's
# getauxval); and a cap (pare_set_max_isa) keeps a CPU with it on NEON.
INT8_ARM64_CONFIGS = {
    "sdot": (None, None, "arm64_dotprod"),
    "neon_capped": (None, "arm64_neon", "arm64_neon"),
    "neon_cortex_a57": ("cortex-a57", None, "arm64_neon"),
}
# Convolutions, whose products take the columns GEMM (im2col or the image;
# k = 27, 63, 12, 576: quads of k and a zero-padded last one, 8x12 tiles
# and their edges), and linear layers, the row GEMM (k = 300, 33: full
# 16-byte steps and zero-padded tails, 4x4 tiles and their edges); batch
# 2, groups, stride 2, padding.
# And a depthwise layer x86_64 runs across channels (37 channels, batch 2):
# the plane kernel here, the same bits.
INT8_CONV_CASES = [
    "3x3_odd_channels",
    "stride2_padding",
    "groups3_odd",
    "deep",
    "1x1_stride2",
    "rgb_7x7_chunked_rows",
    "channels_3x3_37_batch2",
    # gemm_columns' 8x12 tiles (qgemm_arm64_columns.inc): 1x1 layers on the
    # image itself (k = 19, 12, 32; 13, 16, 40 channels; 63 pixels batch 2,
    # a last tile of 11 packed byte by byte, 620 pixels), grouped, and two
    # panels of packed pixels.
    "1x1",
    "vnni_1x1_35_pixels",
    "vnni_1x1_many_tiles",
    "1x1_grouped",
    "arm64_3x3_two_panels",
    # The depthwise plane's NEON rows (qgemm_arm64_depthwise.inc): 3x3 and
    # 5x5 at stride 1 and 2, 16-output blocks with an overlapping last one
    # (rows of 29, 19, 18, 30 outputs), 8-output blocks (9) and rows under
    # 8 (7, and channels_3x3_37_batch2 above), no padding, stride (2, 1),
    # channel multiplier 2, batch 2; input zero points -5, 7, -128, 127, 11,
    # 0 (the list's index mod 7 below); and 7x7 and dilation across, which
    # stay on the portable loop.
    "depthwise_wide",
    "depthwise_5x5_stride2_19_wide",
    "depthwise_wide_stride2",
    "depthwise_5x5_wide",
    "depthwise_multiplier2_stride2",
    "depthwise",
    "depthwise_unpadded",
    "depthwise_7x7",
    "vnni_depthwise_stride_2x1",
    "depthwise_dilated",
]
INT8_LINEAR_CASES = [((5, 33), 17), ((1, 300), 64), ((2, 3, 40), 9)]
# aten::max_pool2d's int8 16-byte blocks (NEON), stride 1 and 2, and its scalar loop.
INT8_MAX_POOL_CASES = ["resnet_stem", "3x3_stride1_pad1", "dilated", "stride3_rect"]
# pare::qavg_pool2d: windows hanging over the input's end, both divisors.
INT8_AVG_POOL_CASES = ["ceil_mode_exclude_pad", "divisor_override", "rect_no_batch", "relu"]


def _int8_layers_program():
    """One program whose method runs every case above on its own input:
    the inputs, the program, and torch's reference for each output."""
    from pare.program import ProgramBuilder
    from tests.runtime.kernels import test_quantized_layers as ql

    pb = ProgramBuilder()
    m = pb.method()
    inputs, references, outputs = [], [], []
    for i, name in enumerate(INT8_CONV_CASES):
        case = ql.CONV_CASES[name]
        x_q = ql.int8_tensor(case["x"], 40 + i)
        layer = ql.Layer(
            ql.int8_tensor(
                case["w"], 50 + i, -128, 127
            ),  # -128 weights too: the NEON path's int16 pairs must not overflow
            ql.bias_values(case["w"][0], 60 + i),
            0.02,
            [-128, 127, 11, 0, -5, 7, -128][i % 7],
            ql.conv_op(case),
            out_zero_point=-3,
            seed=70 + i,
        ).calibrate(x_q)
        x = m.input("Char")
        packed = m.qconv2d_prepack(
            layer.w_q,
            *layer.constants(),
            case["stride"],
            case["padding"],
            case["dilation"],
            case["groups"],
            layer.zx,
        )
        outputs.append(m.op("pare::qconv2d_prepacked", x, packed, *layer.output_bounds()))
        inputs.append(x_q)
        references.append(layer.reference(x_q))
    for i, (shape, out_features) in enumerate(INT8_LINEAR_CASES):
        x_q = ql.int8_tensor(shape, 80 + i)
        layer = ql.Layer(
            ql.int8_tensor((out_features, shape[-1]), 90 + i, -127, 127),
            ql.bias_values(out_features, 100 + i),
            0.025,
            [-128, 127, 3][i],
            torch.nn.functional.linear,
            relu=i == 2,
            out_zero_point=-20,
            seed=110 + i,
        ).calibrate(x_q)
        x = m.input("Char")
        packed = m.qlinear_prepack(layer.w_q, *layer.constants())
        outputs.append(m.op("pare::qlinear_prepacked", x, packed, *layer.output_bounds()))
        inputs.append(x_q)
        references.append(layer.reference(x_q))
    from tests.runtime.kernels import test_quantized_elementwise as qe

    for i, name in enumerate(INT8_MAX_POOL_CASES):
        shape, *window = qe.MAX_POOL_CASES[name]
        x_q = qe.int8(shape, 120 + i)
        x = m.input("Char")
        outputs.append(m.op("aten::max_pool2d", x, *window))
        inputs.append(x_q)
        references.append(torch.nn.functional.max_pool2d(x_q.float(), *window).to(torch.int8))
    for i, name in enumerate(INT8_AVG_POOL_CASES):
        shape, *window, (si, zi), (so, zo), clamp = qe.AVG_POOL_CASES[name]
        lo, hi = clamp or (-128, 127)
        x_q = qe.int8(shape, 130 + i)
        x = m.input("Char")
        outputs.append(m.op("pare::qavg_pool2d", x, *window, si, zi, so, zo, lo, hi))
        inputs.append(x_q)
        references.append(qe.quant(torch.nn.functional.avg_pool2d(qe.dq(x_q, si, zi), *window), so, zo, lo, hi))
    m.output(*outputs)
    return inputs, pb.to_bytes(), references


@pytest.fixture(scope="module")
def int8_layers(full_lib):
    """The program, its inputs and torch's references, and the x86_64 full
    runtime's outputs (whose requantization gives the same bits)."""
    from pare.runtime import Runtime

    inputs, program, references = _int8_layers_program()
    x86 = Runtime(full_lib).load(program).method().run(*[x.numpy() for x in inputs])
    return inputs, program, references, x86


@pytest.mark.parametrize("config", list(INT8_ARM64_CONFIGS))
def test_int8_layers_on_arm64_sdot_and_neon_match_torch_and_x86_64(android_lib, int8_layers, config):
    from tests.runtime.kernels.test_quantized_layers import assert_within_one_step

    cpu, cap, want_isa = INT8_ARM64_CONFIGS[config]
    inputs, program, references, x86 = int8_layers
    tensors = [harness.TensorData(1, tuple(x.shape), x.contiguous().numpy().tobytes()) for x in inputs]  # 1: Char
    outputs, kernel_isa = harness.run_program_on(android_lib, program, "forward", tensors, cpu=cpu, max_isa=cap)
    assert kernel_isa == want_isa
    assert len(outputs) == len(references)
    for out, reference, expected in zip(outputs, references, x86):
        got = np.frombuffer(out.data, dtype=np.int8).reshape(out.sizes)
        # Exact int32 sums and the same requantization arithmetic: x86_64's bits.
        assert np.array_equal(got, expected), np.flatnonzero(got != expected)[:5]
        assert_within_one_step(torch.from_numpy(got.copy()), reference)


def _int8_threads_program():
    """test_quantized_layers.py's THREAD_CASES (layers the cost model splits
    over threads) and a classifier's one-row linear layer, each on its own
    input in one method: the inputs and the program."""
    from pare.program import ProgramBuilder
    from tests.runtime.kernels import test_quantized_layers as ql

    pb = ProgramBuilder()
    m = pb.method()
    inputs, outputs = [], []
    for i, case in enumerate(ql.THREAD_CASES.values()):
        x_q, layer, _ = ql.calibrated_conv(case, 140 + 4 * i, [-9, 0, 127, -128][i % 4])
        x = m.input("Char")
        packed = m.qconv2d_prepack(
            layer.w_q, *layer.constants(), case["stride"], case["padding"], case["dilation"], case["groups"], layer.zx
        )
        outputs.append(m.op("pare::qconv2d_prepacked", x, packed, *layer.output_bounds()))
        inputs.append(x_q)
    x_q = ql.int8_tensor((1, 1280), 190)
    layer = ql.Layer(
        ql.int8_tensor((1000, 1280), 191, -127, 127), ql.bias_values(1000, 192), 0.02, 5, torch.nn.functional.linear
    ).calibrate(x_q)
    x = m.input("Char")
    outputs.append(m.op("pare::qlinear_prepacked", x, m.qlinear_prepack(layer.w_q, *layer.constants()), -128, 127))
    inputs.append(x_q)
    m.output(*outputs)
    return inputs, pb.to_bytes()


@pytest.mark.parametrize("config", ["sdot", "neon_capped"])
def test_int8_layers_on_arm64_threads_give_x86_64_bits(android_lib, full_lib, config):
    """Build feature threads on arm64 (qconv.cc, qlinear.cc): 3 threads split
    the GEMM's channels at the quads' 8-channel blocks (the layout both
    arm64 copies read), the depthwise planes, the linear layer's channels;
    the outputs are one thread's and x86_64's, bit for bit."""
    from pare.runtime import Runtime

    cpu, cap, want_isa = INT8_ARM64_CONFIGS[config]
    inputs, program = _int8_threads_program()
    x86 = Runtime(full_lib).load(program).method().run(*[x.numpy() for x in inputs])
    tensors = [harness.TensorData(1, tuple(x.shape), x.contiguous().numpy().tobytes()) for x in inputs]  # 1: Char
    for threads in (1, 3):
        outputs, kernel_isa = harness.run_program_on(
            android_lib, program, "forward", tensors, cpu=cpu, max_isa=cap, threads=threads
        )
        assert kernel_isa == want_isa
        assert len(outputs) == len(x86)
        for k, (out, expected) in enumerate(zip(outputs, x86)):
            got = np.frombuffer(out.data, dtype=np.int8).reshape(out.sizes)
            assert np.array_equal(got, expected), (threads, k, np.flatnonzero(got != expected)[:5])


# pare::qlinear_dynamic on arm64 (qgemm_arm64_dynamic.inc: 4 rows by SDOT, 2 by SMULL on ARMv8.0):
# row counts with and without a tail of rows, k with and without a tail of quads (a whole number
# of 4-quad steps: 256), channel blocks with a partial last one, saturation (wide values).
DYNAMIC_LINEAR_CASES = [
    "rows_odd",
    "deep_no_bias",
    "batch_3d",
    "all_positive",
    "rows_13_channels_40",
    "rows_9_channels_33",
    "one_row_one_channel",
    "wide_values",
    "narrow_range",
]


@pytest.mark.parametrize("config", list(INT8_ARM64_CONFIGS))
def test_dynamic_linear_on_arm64_gives_x86_64_bits(android_lib, full_lib, config):
    from pare.program import ProgramBuilder
    from pare.quantized_packing import pack_dynamic_weight
    from pare.runtime import Runtime
    from tests.runtime.kernels import test_quantized_dynamic_linear as qdl

    pb = ProgramBuilder()
    m = pb.method()
    inputs, outputs = [], []
    for i, name in enumerate(DYNAMIC_LINEAR_CASES):
        shape, out_features, with_bias, per_tensor, kind, (qmin, qmax) = qdl.CASES[name]
        w, scales = qdl.weights(out_features, shape[-1], 130 + i, per_tensor)
        bias = torch.randn(out_features, generator=torch.Generator().manual_seed(140 + i)) if with_bias else None
        sums = w.to(torch.int32).sum(dim=1, dtype=torch.int32)
        x = m.input("Float")
        packed = torch.from_numpy(pack_dynamic_weight(w.numpy()))
        outputs.append(m.op("pare::qlinear_dynamic", x, packed, sums, scales, bias, qmin, qmax, qdl.EPS))
        inputs.append(qdl.make_input(shape, kind, 150 + i))
    m.output(*outputs)
    program = pb.to_bytes()
    x86 = Runtime(full_lib).load(program).method().run(*[x.numpy() for x in inputs])
    cpu, cap, want_isa = INT8_ARM64_CONFIGS[config]
    tensors = [harness.TensorData(6, tuple(x.shape), x.contiguous().numpy().tobytes()) for x in inputs]  # 6: Float
    got, kernel_isa = harness.run_program_on(android_lib, program, "forward", tensors, cpu=cpu, max_isa=cap)
    assert kernel_isa == want_isa
    for out, expected in zip(got, x86):
        assert out.dtype == 6 and np.array_equal(np.frombuffer(out.data, dtype=np.float32).reshape(out.sizes), expected)


def test_arm64_runtime_refuses_an_x86_64_cap(android_lib, int8_layers):
    # pare_set_max_isa on arm64 takes arm64_neon and arm64_dotprod only.
    inputs, program, _, _ = int8_layers
    tensors = [harness.TensorData(1, tuple(x.shape), x.contiguous().numpy().tobytes()) for x in inputs]
    with pytest.raises(harness.HarnessError, match=r"pare_set_max_isa failed: InvalidArgument: x86_64_v3"):
        harness.run_program_on(android_lib, program, "forward", tensors, max_isa="x86_64_v3")
    # A cap above the CPU's copy leaves the CPU's (cortex-a57 has no dot product).
    _, kernel_isa = harness.run_program_on(
        android_lib, program, "forward", tensors, cpu="cortex-a57", max_isa="arm64_dotprod"
    )
    assert kernel_isa == "arm64_neon"
