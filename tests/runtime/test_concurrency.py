"""Instances that share weights (issue 12): one loaded program, a method
instance per thread, run concurrently, constants and packed weights once in
memory; and each instance's own thread pool (build feature threads) under
the same load.

concurrent_instances.c loads a program once (borrowing the file's bytes, so
the packed weights are used in place), computes a reference on one
instance, then runs 4 threads, each with its own instance, over many
iterations on interleaved input sets and compares every output with the
reference bit for bit. It runs linked against the full runtime under test
(PARE_RUNTIME_LIB, e.g. Bazel's //runtime:full) and, compiled together with
the runtime's sources, under ThreadSanitizer, after a planted race proves
ThreadSanitizer reports in that build. The reference itself is compared
with torch.

(make sanitize leaves this file out: it builds its own ThreadSanitizer
runtime here, and ASan and TSan do not mix in one process.)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import runtime_build
import torch
from runtime_testing import pal_stats

from pare.program import ProgramBuilder
from tools.tracer.exporter import export_model
from tools.tracer.model_spec import load_model_spec

REPO = runtime_build.REPO
DRIVER = Path(__file__).with_name("concurrent_instances.c")
CC = runtime_build.CXX.replace("clang++", "clang")
MODELS = {
    "demo": REPO / "apps/demo/model.py",  # conv, depthwise, pooling, linear, gelu, softmax
    "fast_kernels": REPO / "tests/tracer/models/fast_kernels.py",  # the vector kernels on awkward shapes
    "winograd_stages": REPO / "tests/tracer/models/winograd_stages.py",  # every Winograd stage split
}
THREADS = 4
TSAN_EXIT = 86
TSAN_OPTIONS = f"halt_on_error=1:exitcode={TSAN_EXIT}:second_deadlock_stack=1"


def _run(cmd: list, **kwargs) -> subprocess.CompletedProcess:
    # Never the ASan preload of a sanitized pytest process.
    env = {**runtime_build.compiler_env(), **kwargs.pop("env", {})}
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, timeout=900, **kwargs)


def _compile(cmd: list) -> None:
    result = _run(cmd)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed:\n{result.stderr}")


def _compile_driver(out: Path, flags: list, objects: list, link: list) -> None:
    """DRIVER compiled with `flags` and the house warnings, linked with `objects` and then `link`."""
    _compile([CC, "-std=c11", *flags, "-Wall", "-Wextra", "-Werror", f"-I{REPO}", DRIVER, *objects, "-o", out, *link])


@pytest.fixture(scope="module")
def plain_driver(runtime_lib, tmp_path_factory) -> Path:
    """The driver linked against the full runtime library under test."""
    out = tmp_path_factory.mktemp("plain") / "concurrent_instances"
    _compile_driver(out, ["-O2"], [], [runtime_lib, f"-Wl,-rpath,{runtime_lib.parent}", "-lpthread"])
    return out


@pytest.fixture(scope="module")
def tsan_driver(pytestconfig, tmp_path_factory) -> Path:
    """The driver and the full runtime's sources compiled with
    -fsanitize=thread into one executable."""
    objects = runtime_build.library_objects(
        runtime_build.cache_root(pytestconfig),
        "full",
        selection_dir=runtime_build.DEFAULT_SELECTION,
        opt="-O1",
        sanitize=("thread",),
    )
    # The runtime's own code is instrumented, not only the driver's.
    method_o = next(o for o in objects if o.name == "runtime_executor_method.cc.o")
    symbols = _run([runtime_build.CXX.replace("clang++", "llvm-nm"), "--undefined-only", method_o]).stdout
    assert "__tsan_read" in symbols and "__tsan_func_entry" in symbols, symbols[:2000]
    out = tmp_path_factory.mktemp("tsan") / "concurrent_instances"
    _compile_driver(out, ["-O1", "-g", "-fsanitize=thread"], objects, ["-fuse-ld=lld", "-lpthread", "-lm"])
    return out


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(request, tmp_path_factory):
    """(program file, inputs file, shape, torch outputs) for K = 4 input sets."""
    spec = load_model_spec(MODELS[request.param])
    program = export_model(spec).program
    shape = tuple(spec.inputs[0][0].shape)
    g = torch.Generator().manual_seed(7)
    sets = [torch.randn(shape, generator=g) for _ in range(4)]
    with torch.no_grad():
        want = [spec.module(x).numpy() for x in sets]
    d = tmp_path_factory.mktemp(request.param)
    (d / "model.pare").write_bytes(program)
    (d / "inputs.bin").write_bytes(b"".join(x.numpy().astype(np.float32).tobytes() for x in sets))
    return d / "model.pare", d / "inputs.bin", "x".join(map(str, shape)), want


def _check(driver: Path, model, iterations: int, env=None, pool: int = 1) -> str:
    program, inputs, shape, want = model
    reference = program.with_name(f"reference_{driver.parent.name}.bin")
    result = _run([driver, program, inputs, shape, THREADS, iterations, reference, pool], env=env or {})
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        result.stdout.strip()
        == f"threads={THREADS} pool={pool} runs={THREADS * iterations} mismatches=0 sets={len(want)}"
    )
    got = np.fromfile(reference, np.float32).reshape(len(want), *want[0].shape)
    for k, w in enumerate(want):
        np.testing.assert_allclose(got[k], w, rtol=1e-4, atol=1e-5, err_msg=f"input set {k}")
    return result.stderr


@pytest.mark.parametrize("pool", [1, 2])
def test_instances_on_four_threads_match_one_instance_bit_for_bit(plain_driver, model, pool):
    # pool 2: each instance also runs its kernels on 2 threads of its own.
    _check(plain_driver, model, iterations=500 if pool == 1 else 150, pool=pool)


def test_thread_sanitizer_reports_a_planted_race(tsan_driver):
    # The wiring check: a sanitizer build that cannot fail proves nothing.
    result = _run([tsan_driver, "--plant-race"], env={"TSAN_OPTIONS": TSAN_OPTIONS})
    assert result.returncode == TSAN_EXIT and "WARNING: ThreadSanitizer: data race" in result.stderr, (
        result.stdout + result.stderr
    )


@pytest.mark.parametrize("pool", [1, 2])
def test_instances_on_four_threads_under_thread_sanitizer(tsan_driver, model, pool):
    stderr = _check(
        tsan_driver, model, iterations=100 if pool == 1 else 40, env={"TSAN_OPTIONS": TSAN_OPTIONS}, pool=pool
    )
    assert "ThreadSanitizer" not in stderr


def _large_weights_program() -> bytes:
    """Two prepacked layers with 4.5 MB of weights and a small activation."""
    rng = np.random.default_rng(3)
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [1, 16, 24, 24])
    conv = m.conv2d_prepack(
        rng.standard_normal((256, 16, 3, 3), np.float32), np.zeros(256, np.float32), [1, 1], [1, 1], [1, 1], 1
    )
    y = m.op("pare::conv2d_prepacked", x, conv)
    y = m.op("aten::mean.dim", y, [2, 3])
    fc = m.linear_prepack(rng.standard_normal((4096, 256), np.float32) / 16, None)
    m.output(m.op("pare::linear_prepacked", y, fc))
    return pb.to_bytes()


def test_four_instances_hold_the_weights_once(test_double_runtime):
    # The recording PAL counts every byte the runtime holds. The program is
    # loaded with PARE_LOAD_COPY, so its bytes (weights included) are the
    # runtime's own allocation; each instance adds only its value slots,
    # plans and arena, never a copy of a weight.
    rt = test_double_runtime
    rt._lib.pare_test_pal_reset()
    base = pal_stats(rt).live_bytes
    program = rt.load(_large_weights_program())  # copied: the runtime owns the bytes
    program_bytes = pal_stats(rt).live_bytes - base
    x = np.random.default_rng(4).standard_normal((1, 16, 24, 24)).astype(np.float32)
    methods, non_arena = [], []
    for _ in range(4):
        method = program.method()
        method.run(x)  # plans: its blocks live outside the arena until the next run
        methods.append((method, method.run(x)[0]))  # steady state: everything in the arena
        arenas = sum(m.memory_stats().arena_bytes for m, _ in methods)
        non_arena.append(pal_stats(rt).live_bytes - base - arenas)
    for _, out in methods[1:]:
        np.testing.assert_array_equal(out, methods[0][1])
    weights = 256 * 16 * 9 * 4 + 4096 * 256 * 4
    assert program_bytes > weights
    per_instance = [(b - a) for a, b in zip(non_arena, non_arena[1:])]
    # Each further instance holds far less than the weights: its own slots
    # and plans (the same for every instance), nothing proportional to them.
    assert len(set(per_instance)) == 1 and per_instance[0] < weights / 100, (per_instance, weights)
    assert non_arena[3] <= 1.05 * non_arena[0], non_arena
    for m, _ in methods:
        m.close()
    program.close()
    assert pal_stats(rt).live_bytes == base
