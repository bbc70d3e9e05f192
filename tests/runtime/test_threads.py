"""Build feature threads (issue 12): a method runs its kernels on a thread
pool, and its outputs are bitwise identical for every thread count.

GEMM (linear, 1x1 and im2col convolution, mm, bmm) splits C by whole
register tiles, columns or rows; depthwise convolution, max and average
pooling split planes. Every shape below is large enough for the cost
model to split it (checked: a split run is not just the serial one), and
each output is compared bit for bit across 1 to 4 threads, and with torch.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch
from runtime_testing import pal_stats

from pare.program import ProgramBuilder
from pare.runtime import PareError
from tools.tracer.exporter import export_model
from tools.tracer.model_spec import load_model_spec
from tools.tracer.runner import set_inputs

REPO = __import__("runtime_build").REPO
THREAD_COUNTS = (1, 2, 3, 4)


def _outputs_for_each_thread_count(program, inputs):
    """{threads: outputs} from one method per thread count."""
    results = {}
    for threads in THREAD_COUNTS:
        method = program.method()
        method.set_num_threads(threads)
        assert method.num_threads == threads
        results[threads] = method.run(*inputs)
        results[threads] = method.run(*inputs)  # replaying the plan, as in steady state
        method.close()
    return results


def _assert_bitwise_identical(results):
    for threads, outs in results.items():
        for k, (a, b) in enumerate(zip(results[1], outs)):
            np.testing.assert_array_equal(a, b, err_msg=f"output {k} with {threads} threads")


def _linear_program(m, k, n, rng):
    pb = ProgramBuilder()
    mb = pb.method()
    x = mb.input("Float", [m, k])
    w = rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    mb.output(mb.op("pare::linear_prepacked", x, mb.linear_prepack(w, b)))
    return pb.to_bytes(), (torch.from_numpy(w), torch.from_numpy(b))


@pytest.mark.parametrize(
    "m,k,n",
    [
        (1, 512, 1000),  # a classifier head: columns split
        (600, 512, 8),  # 8 columns, 600 rows: rows split
        (37, 300, 77),  # odd sizes: partial tiles at every chunk's end
    ],
)
def test_linear_is_bitwise_identical_for_every_thread_count(runtime, m, k, n):
    rng = np.random.default_rng(m + n)
    data, (w, b) = _linear_program(m, k, n, rng)
    x = rng.standard_normal((m, k)).astype(np.float32)
    results = _outputs_for_each_thread_count(runtime.load(data), [x])
    _assert_bitwise_identical(results)
    want = (torch.from_numpy(x).double() @ w.double().T + b.double()).numpy()
    np.testing.assert_allclose(results[1][0], want, rtol=1e-4, atol=1e-4)


def test_mm_bmm_and_convolutions_are_bitwise_identical_for_every_thread_count(runtime):
    rng = np.random.default_rng(1)
    pb = ProgramBuilder()
    mb = pb.method()
    a = mb.input("Float", [200, 96])
    b = mb.input("Float", [96, 150])
    img = mb.input("Float", [1, 8, 40, 36])
    batched = mb.input("Float", [3, 64, 80])
    weights = {
        "dense": rng.standard_normal((24, 8, 3, 3)).astype(np.float32),
        "pointwise": rng.standard_normal((40, 8, 1, 1)).astype(np.float32),
        "depthwise": rng.standard_normal((16, 1, 5, 5)).astype(np.float32),  # channel multiplier 2
        "grouped": rng.standard_normal((12, 4, 3, 3)).astype(np.float32),
    }
    mm = mb.op("aten::mm", a, b)
    bmm = mb.op("aten::bmm", batched, mb.op("aten::transpose.int", batched, 1, 2))
    convs = [
        mb.op("pare::conv2d_prepacked", img, mb.conv2d_prepack(weights["dense"], None, [1, 1], [1, 1], [1, 1], 1)),
        mb.op("pare::conv2d_prepacked", img, mb.conv2d_prepack(weights["pointwise"], None, [1, 1], [0, 0], [1, 1], 1)),
        mb.op("pare::conv2d_prepacked", img, mb.conv2d_prepack(weights["depthwise"], None, [2, 2], [2, 2], [1, 1], 8)),
        mb.op("aten::convolution", img, weights["grouped"], None, [1, 1], [1, 1], [1, 1], False, [0, 0], 2),
        # Winograd: 360 tiles in 3 blocks, each block's stages split over the threads.
        mb.op(
            "pare::conv2d_prepacked",
            img,
            mb.conv2d_prepack(weights["dense"], None, [1, 1], [1, 1], [1, 1], 1, winograd=True),
        ),
        # Pixel rows: the transposed product's output channels split over the threads.
        mb.op(
            "pare::conv2d_prepacked",
            img,
            mb.conv2d_prepack(weights["pointwise"], None, [1, 1], [0, 0], [1, 1], 1, pixel_rows=True),
        ),
    ]
    pooled = [
        mb.op("aten::max_pool2d_with_indices", img, [3, 3], [2, 2], [1, 1], returns=2)[0],
        mb.op("aten::avg_pool2d", img, [3, 3], [1, 1], [1, 1]),
        mb.op("aten::max_pool2d_with_indices", img, [2, 2], returns=2)[0],
    ]
    mb.output(mm, bmm, *convs, *pooled)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in ((200, 96), (96, 150), (1, 8, 40, 36), (3, 64, 80))]
    results = _outputs_for_each_thread_count(runtime.load(pb.to_bytes()), inputs)
    _assert_bitwise_identical(results)
    a_t, b_t, img_t, batched_t = (torch.from_numpy(x).double() for x in inputs)
    w = {name: torch.from_numpy(v).double() for name, v in weights.items()}
    F = torch.nn.functional
    want = [
        a_t @ b_t,
        batched_t @ batched_t.transpose(1, 2),
        F.conv2d(img_t, w["dense"], padding=1),
        F.conv2d(img_t, w["pointwise"]),
        F.conv2d(img_t, w["depthwise"], stride=2, padding=2, groups=8),
        F.conv2d(img_t, w["grouped"], padding=1, groups=2),
        F.conv2d(img_t, w["dense"], padding=1),
        F.conv2d(img_t, w["pointwise"]),
        F.max_pool2d(img_t, 3, 2, 1),
        F.avg_pool2d(img_t, 3, 1, 1),
        F.max_pool2d(img_t, 2),
    ]
    for k, (got, expected) in enumerate(zip(results[1], want)):
        np.testing.assert_allclose(got, expected.numpy(), rtol=1e-4, atol=1e-4, err_msg=f"output {k}")


@pytest.mark.parametrize("tile", [2, 4])
@pytest.mark.parametrize(
    "c,o,h,w",
    [
        (64, 24, 40, 36),  # several blocks of tiles
        (300, 70, 12, 12),  # one block; input channels past a depth block (256), 70 rows: a partial register tile
        (48, 13, 9, 50),  # odd sizes: tiles clipped at the bottom and right edges
    ],
)
def test_winograd_stages_split_and_stay_bitwise_identical(runtime, tile, c, o, h, w):
    # The planes and the input transform split by input channel, the
    # products by output rows, the output transform by output channel
    # (winograd.h, Scratch): the input transform's V rows are per chunk,
    # so a split plans a larger arena.
    rng = np.random.default_rng(c + o + tile)
    weight = (rng.standard_normal((o, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    pb = ProgramBuilder()
    mb = pb.method()
    img = mb.input("Float", [1, c, h, w])
    packed = mb.conv2d_prepack(weight, bias, [1, 1], [1, 1], [1, 1], 1, winograd=tile)
    mb.output(mb.op("pare::conv2d_prepacked", img, packed, -2.5, 2.5))
    program = runtime.load(pb.to_bytes())
    x = rng.standard_normal((1, c, h, w)).astype(np.float32)
    results = _outputs_for_each_thread_count(program, [x])
    _assert_bitwise_identical(results)
    arenas = {}
    for threads in (1, 2):
        method = program.method()
        method.set_num_threads(threads)
        method.run(x)
        arenas[threads] = method.memory_stats().planned_arena_bytes
        method.close()
    assert arenas[1] < arenas[2], arenas
    want = torch.clamp(
        torch.nn.functional.conv2d(
            torch.from_numpy(x).double(), torch.from_numpy(weight).double(), torch.from_numpy(bias).double(), padding=1
        ),
        -2.5,
        2.5,
    )
    # Outputs of about unit size: F(4x4, 3x3)'s bound (winograd.h) is
    # below 1e-4 here; 1e-3 leaves room without hiding a wrong tile.
    np.testing.assert_allclose(results[1][0], want.numpy(), rtol=0, atol=1e-3)


@pytest.mark.parametrize("activation", ["hardswish", "sigmoid", "gelu"])
def test_fused_epilogues_are_bitwise_identical_for_every_thread_count(runtime, activation):
    # Residual add, clamp and activation over a 92,160-element output: the
    # GEMM adds the residual and clamps in each thread's part of the
    # product, and the activation splits too (elementwise, in 64-float
    # chunks).
    rng = np.random.default_rng(5)
    w = rng.standard_normal((64, 8, 3, 3)).astype(np.float32) / 8
    bias = rng.standard_normal(64).astype(np.float32)
    pb = ProgramBuilder()
    mb = pb.method()
    img = mb.input("Float", [1, 8, 40, 36])
    res = mb.input("Float", [1, 64, 40, 36])
    packed = mb.conv2d_prepack(w, bias, [1, 1], [1, 1], [1, 1], 1)
    mb.output(mb.op("pare::conv2d_prepacked", img, packed, -3.0, 3.0, activation, res))
    inputs = [
        rng.standard_normal((1, 8, 40, 36)).astype(np.float32),
        rng.standard_normal((1, 64, 40, 36)).astype(np.float32),
    ]
    results = _outputs_for_each_thread_count(runtime.load(pb.to_bytes()), inputs)
    _assert_bitwise_identical(results)
    x, r = (torch.from_numpy(a).double() for a in inputs)
    y = torch.clamp(
        torch.nn.functional.conv2d(x, torch.from_numpy(w).double(), torch.from_numpy(bias).double(), padding=1) + r,
        -3,
        3,
    )
    want = {"hardswish": torch.nn.functional.hardswish, "sigmoid": torch.sigmoid, "gelu": torch.nn.functional.gelu}[
        activation
    ](y)
    np.testing.assert_allclose(results[1][0], want.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("model", ["apps/demo/model.py", "tests/tracer/models/fast_kernels.py"])
def test_exported_models_are_bitwise_identical_for_every_thread_count(runtime, model):
    spec = load_model_spec(REPO / model)
    exported = export_model(spec)
    program = runtime.load(exported.program)
    for inputs in spec.inputs:
        results = {}
        for threads in THREAD_COUNTS:
            method = program.method()
            method.set_num_threads(threads)
            set_inputs(method, inputs)
            method.execute()
            results[threads] = [method.output(i) for i in range(method.num_outputs)]
            method.close()
        _assert_bitwise_identical(results)
        with torch.no_grad():
            want = spec.module(*inputs)
        np.testing.assert_allclose(results[4][0], want.numpy(), rtol=1e-4, atol=1e-5)


def test_pool_threads_start_split_the_work_and_join(runtime):
    # A method owns threads - 1 OS threads; the process's count shows them
    # start and join. The split itself shows in the plan: each chunk packs
    # into scratch of its own, so a split product plans a larger arena.
    import time
    from pathlib import Path

    def os_threads() -> int:
        return len(list(Path("/proc/self/task").iterdir()))

    data, _ = _linear_program(64, 512, 512, np.random.default_rng(2))
    program = runtime.load(data)
    x = np.ones((64, 512), np.float32)
    before = os_threads()
    arenas = {}
    for threads in (1, 4, 2):
        method = program.method()
        method.set_num_threads(threads)
        assert os_threads() == before + threads - 1
        method.run(x)
        arenas[threads] = method.memory_stats().planned_arena_bytes
        method.close()
        # pthread_join returns when the kernel clears the thread's id, a
        # moment before its task leaves /proc/self/task: wait for that.
        for _ in range(500):
            if os_threads() == before:
                break
            time.sleep(0.01)
        assert os_threads() == before
    assert arenas[1] < arenas[2] < arenas[4], arenas


def test_thread_count_errors(runtime):
    method = runtime.load(_linear_program(2, 8, 8, np.random.default_rng(0))[0]).method()
    for bad in (0, 65, True, 2.0):
        with pytest.raises(ValueError, match=r"threads must be an int in \[1, 64\]"):
            method.set_num_threads(bad)
    lib = runtime._lib
    assert lib.pare_method_set_num_threads(method._handle, 0) == 0x10  # InvalidArgument
    assert "thread count 0 must be in [1, 64]" in lib.pare_method_error_message(method._handle).decode()
    assert lib.pare_method_set_num_threads(None, 2) == 0x10
    assert lib.pare_method_num_threads(None) == 0
    assert method.num_threads == 1


def test_selective_runtime_without_threads_refuses_more_than_one(selective_runtime):
    pb = ProgramBuilder()
    mb = pb.method()
    x = mb.input("Float", [4])
    mb.output(mb.op("aten::mul.Tensor", x, x))
    method = selective_runtime.load(pb.to_bytes()).method()
    method.set_num_threads(1)  # always fine
    with pytest.raises(
        PareError,
        match="does not select build feature threads: add it to build_features in the "
        r"manifest \(tools.tracer trace --features threads",
    ) as e:
        method.set_num_threads(2)
    assert e.value.status_name == "FeatureNotSelected"
    assert method.num_threads == 1
    assert method.run(np.full(4, 3, np.float32))[0].tolist() == [9, 9, 9, 9]


def test_tracing_records_threads(tracing_runtime):
    program = tracing_runtime.load(_linear_program(2, 8, 8, np.random.default_rng(0))[0])
    method = program.method()
    method.set_num_threads(1)
    assert "threads" not in program.trace().features
    method.set_num_threads(2)
    assert "threads" in program.trace().features


def test_pool_memory_is_the_pals_and_freed(test_double_runtime):
    rt = test_double_runtime
    rt._lib.pare_test_pal_reset()
    base = pal_stats(rt).live_blocks
    data, _ = _linear_program(64, 256, 256, np.random.default_rng(3))
    program = rt.load(data)
    method = program.method()
    x = np.ones((64, 256), np.float32)
    serial = method.run(x)[0]
    blocks = pal_stats(rt).live_blocks
    method.set_num_threads(3)
    # The pool, its monitor, its worker records and 2 threads.
    assert pal_stats(rt).live_blocks == blocks + 5
    np.testing.assert_array_equal(method.run(x)[0], serial)  # plans again: scratch per chunk
    method.execute()  # replays, in the arena resized to the new plan
    calls = pal_stats(rt).malloc_calls
    for _ in range(50):
        method.execute()
    assert pal_stats(rt).malloc_calls == calls, "a steady-state threaded call must not allocate"
    method.close()
    program.close()
    assert pal_stats(rt).live_blocks == base


def test_out_of_memory_starting_threads_is_clean(test_double_runtime):
    rt = test_double_runtime
    lib = rt._lib
    lib.pare_test_pal_fail_after.argtypes = [ctypes.c_int64]
    data, _ = _linear_program(8, 64, 64, np.random.default_rng(4))
    program = rt.load(data)
    x = np.ones((8, 64), np.float32)
    want = program.method().run(x)[0]
    for ok_allocations in range(5):
        method = program.method()
        lib.pare_test_pal_fail_after(ok_allocations)
        with pytest.raises(PareError) as e:
            method.set_num_threads(3)
        lib.pare_test_pal_fail_after(-1)
        assert e.value.status_name == "OutOfMemory", e.value
        assert method.num_threads == 1
        np.testing.assert_array_equal(method.run(x)[0], want)  # still works, on one thread
        method.close()
    program.close()
