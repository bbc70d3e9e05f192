"""The LLM app (apps/stories, docs/llm.md "The LLM app"): its generation
loop in C (apps/stories/generate.c, the C API only) built against the app's
linux_x86_64 runtime gives pare.generate's greedy tokens on that runtime,
prompt after prompt on one method instance (the state reset between); that
runtime follows torch eager step by step on the app's model, and so does
its android_arm64 runtime under qemu."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import torch

from pare.generate import generate
from pare.runtime import Runtime
from tests.conftest import REPO_ROOT, bazel_build, require_tool
from tests.runtime import runtime_build
from tools.bundle import load_bundle
from tools.generate import TorchDecoder, compare, tolerance
from tools.tracer import check_model, export_model
from tools.tracer.model_spec import load_model_spec

APP = REPO_ROOT / "apps" / "stories"
CC = runtime_build.CXX.replace("clang++", "clang")
NEW_TOKENS = 16


@pytest.fixture(scope="module")
def app_bundle() -> Path:
    """The app's runtime bundle: the one of $PARE_STORIES_RUNTIME_LIB, else Bazel's //apps/stories:runtime."""
    value = os.environ.get("PARE_STORIES_RUNTIME_LIB")
    if value:
        return Path(value).parent.parent  # <bundle>/linux_x86_64/<library>
    return bazel_build("//apps/stories:runtime") / "apps/stories/runtime"


@pytest.fixture(scope="module")
def app_runtime(app_bundle):
    return load_bundle(app_bundle).platform("linux_x86_64").shared


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The app's spec and its program file, exported once."""
    spec = load_model_spec(APP / "model.py")
    program = tmp_path_factory.mktemp("stories") / "stories.pare"
    program.write_bytes(export_model(spec).program)
    return spec, program


@pytest.fixture(scope="module")
def prompts(app):
    """The spec's first representative tokens and a longer seeded prompt."""
    spec, _ = app
    gen = torch.Generator().manual_seed(3)
    return [
        [int(t) for t in spec.inputs[0][0].reshape(-1)],
        torch.randint(0, spec.module.config.vocab, (21,), generator=gen).tolist(),
    ]


@pytest.fixture(scope="module")
def generate_c(app_runtime, tmp_path_factory):
    """apps/stories/generate.c linked against the app's runtime, with the house warnings."""
    out = tmp_path_factory.mktemp("generate_c") / "generate"
    cmd = [CC, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{REPO_ROOT}", APP / "generate.c", "-o", out]
    cmd += [app_runtime, f"-Wl,-rpath,{app_runtime.parent}"]
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=runtime_build.compiler_env())
    assert result.returncode == 0, result.stderr
    return out


def _run_c(generate_c, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(generate_c), *map(str, args)],
        capture_output=True,
        text=True,
        env=runtime_build.compiler_env(),
        timeout=600,
    )


def test_the_c_loop_gives_pare_generates_tokens_prompt_after_prompt(app_runtime, app, prompts, generate_c):
    _, program = app
    method = Runtime(app_runtime).load(program.read_bytes()).method()
    want = [generate(method, prompt, NEW_TOKENS).tokens for prompt in prompts]
    # One process and one method instance, the longer prompt first: each prompt
    # gives what a fresh generation gives (the loop resets the state before it).
    args = [",".join(map(str, p)) for p in (prompts[1], prompts[0])]
    result = _run_c(generate_c, program, NEW_TOKENS, *args)
    assert result.returncode == 0, result.stderr
    got = [[int(t) for t in line.split()] for line in result.stdout.splitlines()]
    assert got == [want[1], want[0]]
    assert result.stderr.count("decode 15 tokens:") == 2, result.stderr


def test_the_app_runtime_follows_torch_eager(app_runtime, app, prompts):
    spec, program = app
    method = Runtime(app_runtime).load(program.read_bytes()).method()
    rtol, atol = tolerance(spec)
    check = compare(method, TorchDecoder(spec.module), prompts[0], NEW_TOKENS, rtol, atol)
    assert check.ok, check.failure
    # Pare's greedy tokens are torch's up to the first near-tie.
    agree = check.near_ties[0] + 1 if check.near_ties else NEW_TOKENS
    assert generate(method, prompts[0], NEW_TOKENS).tokens[:agree] == check.tokens[:agree]


def test_the_app_runtime_runs_its_model_on_android_arm64_under_qemu(app_bundle, app):
    """The shipped android_arm64 library (its weight-only kernel's arm64 copy
    included) through the emulator harness: the spec's sequence, every step
    against torch eager."""
    require_tool("qemu-aarch64", "qemu-aarch64-static", package="qemu-user")
    if not os.environ.get("PARE_HARNESS_DIR"):  # unset: the harness runner uses Bazel's output
        bazel_build("//tools/android_harness:harness")
    spec, program = app
    lib = load_bundle(app_bundle).platform("android_arm64").shared
    checks = check_model(spec, lib, program=program.read_bytes())
    assert len(checks) == len(spec.inputs) and all(c.ok for c in checks), [c.line() for c in checks if not c.ok]


@pytest.mark.parametrize(
    "args, message",
    [
        (["0", "1,2"], "MAX_NEW_TOKENS must be a whole number >= 1, got 0"),
        (["4", "1,,2"], "prompt 1,,2: give token ids >= 0 separated by commas"),
        (["4", "1,40000"], "prompt 1,40000: IndexOutOfRange:"),
    ],
)
def test_the_c_loop_names_a_bad_argument(app, generate_c, args, message):
    _, program = app
    result = _run_c(generate_c, program, *args)
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_the_c_loop_names_an_unreadable_program(generate_c, tmp_path):
    result = _run_c(generate_c, tmp_path / "missing.pare", 4, "1,2")
    assert result.returncode == 2 and "pare_program_load_file(" in result.stderr and "File" in result.stderr
