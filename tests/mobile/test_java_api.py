"""The Java path of app integration, proven on a host JVM (issue 7).

The JNI bridge + full runtime are built for x86_64 Linux, loaded into the
installed JDK with System.load, and driven through org.pare.Module; outputs
are compared with torch, and runtime errors must arrive as PareException
carrying the runtime's message.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from pare.program import ProgramBuilder
from tests.conftest import REPO_ROOT, bazel_build, export_program

JNI_RUNTIME = "apps/demo/runtime_jni/linux_x86_64/libpare_runtime_jni.so"
JAR = "apps/demo/java_api.jar"
STATE_JNI_RUNTIME = "tests/mobile/state/runtime_jni/linux_x86_64/libpare_runtime_jni.so"


@pytest.fixture(scope="module")
def java_runner(tmp_path_factory):
    """run(*args) for JavaApiCheck on the JNI runtime `lib` (bazel-bin
    relative) that `target` builds, with the Java API jar."""
    javac, java = shutil.which("javac"), shutil.which("java")
    if not javac or not java:
        pytest.fail("no JDK on PATH: tools/setup.sh installs openjdk-17-jdk-headless")
    compiled: dict[str, Path] = {}

    def runner(target: str = "//apps/demo:runtime_jni", lib: str = JNI_RUNTIME):
        bin_dir = bazel_build(target, "//apps/demo:java_api")
        if "classes" not in compiled:
            compiled["classes"] = tmp_path_factory.mktemp("java")
            subprocess.run(
                [
                    javac,
                    "--release",
                    "8",
                    "-nowarn",
                    "-cp",
                    str(bin_dir / JAR),
                    "-d",
                    str(compiled["classes"]),
                    str(Path(__file__).with_name("JavaApiCheck.java")),
                ],
                check=True,
                capture_output=True,
            )
        classpath = f"{bin_dir / JAR}:{compiled['classes']}"

        def run(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run(
                [java, "-cp", classpath, "JavaApiCheck", str(bin_dir / lib), *args],
                capture_output=True,
                text=True,
                timeout=120,
            )

        return run

    return runner


@pytest.fixture(scope="module")
def java_check(java_runner):
    return java_runner()


def _linear_relu_program(path: Path, features: int = 6, outputs: int = 3) -> tuple[torch.nn.Module, Path]:
    torch.manual_seed(0)
    layer = torch.nn.Linear(features, outputs)
    pb = ProgramBuilder()
    m = pb.method("forward")
    x = m.input("Float", [None, features])
    # What the tracer writes for linear + relu with the default passes
    # (prepack_weights, fuse_clamp), the ops the demo's runtime selects.
    packed = m.linear_prepack(layer.weight.detach(), layer.bias.detach())
    m.output(m.op("pare::linear_prepacked", x, packed, 0.0, float("inf")))
    path.write_bytes(pb.to_bytes())
    return (lambda t: torch.relu(layer(t))), path


def _one_op_program(path: Path, op: str) -> Path:
    """Writes a program whose forward runs `op` on a Float[2] input to `path`."""
    pb = ProgramBuilder()
    m = pb.method("forward")
    m.output(m.op(op, m.input("Float", [2])))
    path.write_bytes(pb.to_bytes())
    return path


def _parse(stdout: str) -> list[tuple[str, tuple[int, ...], np.ndarray]]:
    lines = stdout.strip().splitlines()
    assert lines[0].startswith("outputs ")
    outs = []
    for line in lines[1:]:
        _, dtype, dims, *values = line.split(" ")
        shape = tuple(int(d) for d in dims.split(",") if d)
        outs.append((dtype, shape, np.array([float(v) for v in values], np.float32).reshape(shape)))
    return outs


def test_forward_matches_torch(java_check, tmp_path):
    model, program = _linear_relu_program(tmp_path / "linear.pare")
    x = torch.randn(4, 6)
    (tmp_path / "x.f32").write_bytes(x.numpy().astype("<f4").tobytes())
    proc = java_check("run", str(program), str(tmp_path / "x.f32"), "4,6")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    [(dtype, shape, values)] = _parse(proc.stdout)
    assert dtype == "FLOAT32" and shape == (4, 3)
    np.testing.assert_allclose(values, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_method_names_from_byte_array(java_check, tmp_path):
    _, program = _linear_relu_program(tmp_path / "linear.pare")
    proc = java_check("methods", str(program))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "methods forward"


def test_corrupt_program_is_a_java_exception(java_check, tmp_path):
    bad = tmp_path / "corrupt.pare"
    bad.write_bytes(b"PARE" + bytes(range(60)))
    proc = java_check("methods", str(bad))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout.startswith("PareException: ")
    assert "program" in proc.stdout.lower()


def test_missing_op_is_a_java_exception(java_check, tmp_path):
    proc = java_check("methods", str(_one_op_program(tmp_path / "missing.pare", "aten::no_such_op")))
    assert proc.returncode == 3
    assert "aten::no_such_op" in proc.stdout


def test_wrong_input_shape_is_a_java_exception(java_check, tmp_path):
    _, program = _linear_relu_program(tmp_path / "linear.pare")
    (tmp_path / "x.f32").write_bytes(np.zeros((2, 5), "<f4").tobytes())
    proc = java_check("run", str(program), str(tmp_path / "x.f32"), "2,5")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout.startswith("PareException: ")


def test_demo_model_through_java_matches_torch(java_check, tmp_path):
    from tools.tracer.model_spec import load_model_spec

    program = export_program("apps/demo/model.py", tmp_path / "demo.pare")
    spec = load_model_spec(REPO_ROOT / "apps/demo/model.py")
    for i, (image,) in enumerate(spec.inputs):
        raw = tmp_path / f"image{i}.f32"
        raw.write_bytes(image.numpy().astype("<f4").tobytes())
        run = java_check("run", str(program), str(raw), ",".join(map(str, image.shape)))
        assert run.returncode == 0, run.stdout + run.stderr
        [(dtype, shape, values)] = _parse(run.stdout)
        with torch.no_grad():
            want = spec.module(image).numpy()
        assert dtype == "FLOAT32" and shape == want.shape
        np.testing.assert_allclose(values, want, rtol=1e-4, atol=1e-6)


def test_unselected_op_is_a_java_exception_naming_it(java_check, tmp_path):
    # aten::tanh exists in the runtime but the demo's manifest does not select it.
    proc = java_check("methods", str(_one_op_program(tmp_path / "tanh.pare", "aten::tanh")))
    assert proc.returncode == 3
    assert "aten::tanh" in proc.stdout and "manifest" in proc.stdout


def test_threads_need_the_feature_and_one_always_works(java_check, tmp_path):
    # The demo's manifest does not select build feature threads: one thread
    # runs, two are a PareException naming the feature and the fix.
    model, program = _linear_relu_program(tmp_path / "linear.pare")
    x = torch.randn(4, 6)
    (tmp_path / "x.f32").write_bytes(x.numpy().astype("<f4").tobytes())
    proc = java_check("run", str(program), str(tmp_path / "x.f32"), "4,6", "1")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    np.testing.assert_allclose(_parse(proc.stdout)[0][2], model(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    proc = java_check("run", str(program), str(tmp_path / "x.f32"), "4,6", "2")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout.startswith("PareException: ") and "does not select build feature threads" in proc.stdout


def test_state_needs_the_feature(java_check, tmp_path):
    # The demo's manifest does not select build feature state: Module.resetState
    # reaches pare_method_reset_state, which answers FeatureNotSelected.
    _, program = _linear_relu_program(tmp_path / "linear.pare")
    proc = java_check("reset-state", str(program))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout.startswith("PareException: ") and "does not select build feature state" in proc.stdout


def test_state_through_java_matches_torch(tmp_path, java_runner):
    # A runtime with build feature state (tests/mobile/state): a prefill and
    # decode steps through Module.forward, each compared with torch eager over
    # the same sequence; then getState, resetState and setState.
    import copy
    import importlib.util

    spec = importlib.util.spec_from_file_location("kv_cache", REPO_ROOT / "tests/mobile/state/kv_cache.py")
    kv_cache = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kv_cache)
    module, _ = kv_cache.build()
    program = export_program(REPO_ROOT / "tests/mobile/state/kv_cache.py", tmp_path / "kv.pare")
    prefill, steps, dim = 3, 4, 8
    x = torch.randn(prefill + steps, dim, generator=torch.Generator().manual_seed(1))
    (tmp_path / "x.f32").write_bytes(x.numpy().astype("<f4").tobytes())
    run = java_runner("//tests/mobile/state:runtime_jni", STATE_JNI_RUNTIME)
    proc = run("state", str(program), str(tmp_path / "x.f32"), str(prefill), str(steps), str(dim))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = [_parse(f"outputs 1\n{line}")[0] for line in proc.stdout.splitlines() if line.startswith("output ")]
    ref = copy.deepcopy(module)
    token = 0
    with torch.no_grad():
        for step in range(steps + 1):
            s = prefill if step == 0 else 1
            want = ref(x[token : token + s].reshape(1, s, dim), torch.arange(token, token + s))
            np.testing.assert_allclose(got[step][2], want.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"step {step}")
            token += s
    np.testing.assert_allclose(got[steps + 1][2], ref.k_cache.numpy(), rtol=1e-6, atol=1e-6)
    assert not got[steps + 2][2].any()  # reset: the initial (zero) cache
    assert (got[steps + 3][2] == 1).all()  # set


# The race tests share one Module between WORKERS threads, each with its own
# input (so runs that overlapped inside the runtime would mix them up): a layer
# large enough that a run spends its time in the kernel, where a close or a
# thread-count change would free or replace what it is using.
WORKERS = 6


def _race(java_check, tmp_path, mode: str) -> tuple[str, dict[str, int]]:
    model, program = _linear_relu_program(tmp_path / "wide.pare", features=256, outputs=256)
    x = torch.randn(WORKERS, 32, 256)
    (tmp_path / "x.f32").write_bytes(x.numpy().astype("<f4").tobytes())
    proc = java_check(mode, str(program), str(tmp_path / "x.f32"), "32,256", str(WORKERS))
    lines = proc.stdout.splitlines()
    # Without the output lines, which are long.
    summary = "\n".join(line for line in lines if not line.startswith("output "))
    assert proc.returncode == 0, summary + proc.stderr[-4000:]
    # Worker 0's output from a run on one thread, before the race: the
    # reference every racing run is compared with bit for bit.
    [(dtype, shape, values)] = _parse("\n".join(lines[:2]))
    assert dtype == "FLOAT32" and shape == (32, 256)
    np.testing.assert_allclose(values, model(x[0]).detach().numpy(), rtol=1e-4, atol=1e-5)
    words = lines[2].split(" ")
    assert words[0] == "race", summary
    return summary, {words[i]: int(words[i + 1]) for i in range(1, len(words), 2)}


def test_close_racing_runs_stops_them_cleanly(java_check, tmp_path):
    # Issue 46: run() was not synchronized, so a close() during a run freed the
    # method the run was using. Now every racing run either returns the right
    # output or throws IllegalStateException; none crashes or returns garbage.
    summary, counts = _race(java_check, tmp_path, "race-close")
    assert counts["runs"] >= 400 and counts["stopped"] == WORKERS, summary
    closed = [line for line in summary.splitlines() if line.startswith("closed ")]
    assert [line.split(":")[0] for line in closed] == ["closed forward", "closed setNumThreads", "closed methodNames"]
    for line in closed:
        assert "the module is closed" in line and "Module.load" in line, line


def test_set_num_threads_racing_runs(java_check, tmp_path):
    # The demo's runtime refuses 2 threads (no build feature threads), so this
    # checks that the refusal, and setting 1, never disturb a run under way.
    summary, counts = _race(java_check, tmp_path, "race-threads")
    assert counts["runs"] >= 400 and counts["stopped"] == 0 and counts["toggles"] > 0, summary
