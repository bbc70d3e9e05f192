"""Replays saved fuzz inputs through the normal runtime and codegen: every
crash a fuzz target found (fuzz/regressions/<target>/, each fixed) and every
seed (fuzz/corpus/<target>/). Each must end in a clean result: the program
loads and runs, or fails with PareError and a message; the manifest works,
or fails with a one-line CodegenError. A crash here (the process dying)
fails the run too.

Each loader input is replayed twice: through the Python binding as
fuzz/loader_fuzzer.cc runs a program with no control block (every method,
inputs of the declared dtype, Float where any is allowed, and size, 2 then
3 where any is allowed, small values), and through the harness itself
(fuzz/replay_main.cc, built against the same runtime), which also obeys
the control block after the program: strides, output buffers, threads,
planners, instruction-set caps and misuse, with the harness's own checks
of what the C API promises."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from fuzz import codegen_checks
from pare.runtime import PareError

REPO = Path(__file__).absolute().parents[2]


MAX_INPUT_ELEMENTS = 4096  # loader_fuzzer.cc's kMaxInputElements
NUMPY = {
    "Byte": np.uint8,
    "Char": np.int8,
    "Short": np.int16,
    "Int": np.int32,
    "Long": np.int64,
    "Half": np.float16,
    "Float": np.float32,
    "Double": np.float64,
    "Bool": np.bool_,
}


def _inputs(target: str) -> list[Path]:
    files = []
    for root in (REPO / "fuzz" / "regressions" / target, REPO / "fuzz" / "corpus" / target):
        if root.is_dir():
            files += sorted(p for p in root.iterdir() if p.is_file() and not p.name.startswith("."))
    return files


def _id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.name}"


def _input_array(info, dynamic: int, salt: int):
    dtype = info.dtype or "Float"
    shape = [dynamic if s is None else s for s in (info.shape if info.shape is not None else (None, None))]
    if any(s > MAX_INPUT_ELEMENTS for s in shape) or np.prod(shape, dtype=np.int64) > MAX_INPUT_ELEMENTS:
        return None
    values = (np.arange(int(np.prod(shape, dtype=np.int64))) + salt) % 5 - 2
    if dtype == "Bool":
        return (values > 0).reshape(shape)
    if dtype == "BFloat16":
        return (0.5 * values).astype(np.float32).reshape(shape), "BFloat16"
    if dtype not in NUMPY:
        return None
    scale = 0.5 if np.issubdtype(NUMPY[dtype], np.floating) else 1
    return (values * scale + (2 if dtype == "Byte" else 0)).astype(NUMPY[dtype]).reshape(shape)


def replay_program(runtime, data: bytes) -> None:
    try:
        program = runtime.load(data)
    except PareError as e:
        assert str(e), "a load failure must say why"
        return
    for name in program.method_names[:8]:
        try:
            method = program.method(name)
        except PareError as e:
            assert str(e), "a method failure must say why"
            continue
        for dynamic, salt in ((2, 0), (3, 1)):
            inputs = [_input_array(method.input_info(i), dynamic, salt) for i in range(method.num_inputs)]
            if any(x is None for x in inputs):
                break
            try:
                method.run(*inputs)
            except PareError as e:
                assert str(e), "an execute failure must say why"


@pytest.mark.parametrize("path", _inputs("loader"), ids=_id)
def test_loader_input_is_clean(runtime, path):
    replay_program(runtime, path.read_bytes())


@pytest.mark.parametrize("path", _inputs("loader"), ids=_id)
def test_loader_input_is_clean_in_the_harness(loader_replay, path):
    # Under PARE_SANITIZE the replay is sanitized too (it inherits the ASan
    # preload, options and log directory): a report fails here and in
    # tools/sanitize.sh's log check. Leaks count, as in the fuzzer (only the
    # Python process keeps memory alive at exit).
    env = dict(os.environ)
    if "ASAN_OPTIONS" in env:
        env["ASAN_OPTIONS"] = env["ASAN_OPTIONS"].replace("detect_leaks=0", "detect_leaks=1")
    result = subprocess.run([loader_replay, path], capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, (
        f"{path.name}: the harness failed (exit {result.returncode}):\n{result.stderr[-4000:]}"
    )


@pytest.mark.parametrize("path", _inputs("manifest"), ids=_id)
def test_manifest_input_is_clean(path):
    codegen_checks.manifest_target(path.read_bytes())


@pytest.mark.parametrize("path", _inputs("codegen"), ids=_id)
def test_codegen_input_is_clean(path):
    codegen_checks.codegen_target(path.read_bytes())
