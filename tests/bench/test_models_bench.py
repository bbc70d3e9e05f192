"""python -m tools.bench: what it reports and how it fails (never how fast anything is).

The ExecuTorch worker itself is tested in test_executorch_peer.py; here one
real worker start checks the wiring, and fakes check the rest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import ClassVar

import pytest

from pare.runtime import PareError
from tests.bench.peer_specs import bench_with_progress
from tests.conftest import REPO_ROOT
from tools.bench import __main__ as cli
from tools.bench import executorch_peer
from tools.bench.executorch_worker import PORTABLE, SYSTEMS, XNNPACK
from tools.bench.layers import profile_layers
from tools.bench.models import ModelBench, bench_model, load_runtime, table
from tools.bench.timing import BenchError, measure, p90
from tools.tracer.errors import TracerError
from tools.tracer.exporter import export_model
from tools.tracer.model_spec import load_model_spec

EXECUTORCH_FIELDS = (
    "executorch_portable_median_us",
    "executorch_portable_p90_us",
    "executorch_xnnpack_median_us",
    "executorch_xnnpack_p90_us",
)

MODEL = REPO_ROOT / "tests" / "tracer" / "models" / "tiny_mlp.py"


def test_a_model_gets_pare_and_torch_numbers_and_the_json_fields(full_runtime):
    result = bench_model(MODEL, load_runtime(full_runtime), full_runtime, rounds=3, threads=1)
    row = result.to_json()
    for key in (
        "model",
        "runtime",
        "threads",
        "median_us",
        "p90_us",
        "arena_bytes",
        "first_fit_arena_bytes",
        "greedy_arena_bytes",
        "torch_eager_median_us",
    ):
        assert key in row
    assert 0 < result.median_us <= result.p90_us and 0 < result.torch_eager_median_us
    # The arena is the smaller of the two planners' layouts.
    assert result.arena_bytes == min(result.first_fit_arena_bytes, result.greedy_arena_bytes) > 0
    assert f" | {result.first_fit_arena_bytes:,} / {result.greedy_arena_bytes:,} | " in table([result])
    assert row["pare_over_torch_eager"] == round(result.median_us / result.torch_eager_median_us, 4)
    assert f"| {MODEL} | " in table([result])
    # Not asked for ExecuTorch: its fields are None, and the table has no columns for it.
    assert all(
        row[key] is None
        for key in (*EXECUTORCH_FIELDS, "pare_over_executorch_xnnpack", "pare_over_executorch_portable")
    )
    assert row["executorch_unavailable"] == {} and "ET+XNNPACK" not in table([result])


def test_a_quantized_model_is_timed_against_its_float_twin(full_runtime, tmp_path):
    models = REPO_ROOT / "tests" / "tracer" / "models"
    head = f"import sys\nsys.path.insert(0, {str(models)!r})\nimport torch\nimport quantized_cnn\n"
    (tmp_path / "small_cnn.py").write_text(
        head + "\n\ndef build():\n    torch.manual_seed(0)\n"
        "    return quantized_cnn.SmallCNN().eval(), [(torch.randn(2, 3, 16, 16),)]\n"
    )
    spec = tmp_path / "small_cnn_int8.py"
    spec.write_text(head + 'FLOAT_TWIN = "small_cnn.py"\n\n\ndef build():\n    return quantized_cnn.quantized()\n')
    result = bench_model(spec, load_runtime(full_runtime), full_runtime, rounds=3, threads=1)
    assert result.float_twin == str(tmp_path / "small_cnn.py") and result.pare_float_twin_median_us > 0
    assert result.to_json()["pare_over_pare_float_twin"] == round(
        result.median_us / result.pare_float_twin_median_us, 4
    )
    text = table([result])
    assert "| Pare float twin median µs | Pare / float twin |" in text
    assert f" {result.pare_float_twin_median_us:,.1f} | {result.ratio_float_twin:.2f}x |" in text
    # Without a twin, no such columns.
    assert "float twin" not in table(
        [bench_model(MODEL, load_runtime(full_runtime), full_runtime, rounds=2, threads=1)]
    )
    spec.write_text(head + 'FLOAT_TWIN = "nope.py"\n\n\ndef build():\n    return quantized_cnn.quantized()\n')
    with pytest.raises(TracerError, match=r"FLOAT_TWIN = 'nope.py' is not a model spec next to this one"):
        bench_model(spec, load_runtime(full_runtime), full_runtime, rounds=2, threads=1)


def test_a_delegated_program_is_timed_beside_the_cpu_one(full_runtime):
    from tools.tracer.delegation import DelegateOptions

    model = REPO_ROOT / "tests" / "tracer" / "models" / "delegated_elementwise.py"
    options = DelegateOptions(("example",))
    result = bench_model(model, load_runtime(full_runtime), full_runtime, rounds=3, threads=1, delegates=options)
    assert result.delegates == ("example",) and result.delegated_ops == 7 and result.pare_delegated_median_us > 0
    row = result.to_json()
    assert row["pare_delegated_over_pare"] == round(result.pare_delegated_median_us / result.median_us, 4)
    text = table([result])
    assert "| Pare delegated median µs (backends, ops) | delegated / CPU |" in text
    assert f" {result.pare_delegated_median_us:,.1f} (example, 7 ops) | {result.ratio_delegated:.2f}x |" in text
    # Without --delegate, no such columns.
    plain = bench_model(model, load_runtime(full_runtime), full_runtime, rounds=2, threads=1)
    assert plain.to_json()["pare_delegated_over_pare"] is None and "Pare delegated" not in table([plain])


def test_executorch_is_timed_in_the_same_rounds_with_its_ratios(full_runtime):
    ready = executorch_peer.available()
    if not ready:  # setup installs it: a missing venv is a broken setup, not a skip
        pytest.fail(f"{ready.detail} (make setup does)", pytrace=False)
    result, progress = bench_with_progress(MODEL, full_runtime, executorch=True)
    assert "ExecuTorch: lowering for XNNPACK" in progress
    assert result.executorch_unavailable == ()
    for system in SYSTEMS:
        assert 0 < getattr(result, f"{system}_median_us") <= getattr(result, f"{system}_p90_us")
    row = result.to_json()
    assert row["pare_over_executorch_xnnpack"] == round(result.median_us / result.executorch_xnnpack_median_us, 4)
    assert row["pare_over_executorch_portable"] == round(result.median_us / result.executorch_portable_median_us, 4)
    assert row["executorch_unavailable"] == {}
    (line,) = [x for x in table([result]).splitlines() if x.startswith(f"| {MODEL} |")]
    # The table rounds the ratio once; the JSON's 4-place value, rounded
    # again to 2 places, can differ in the last digit (0.2249.. -> 0.2250).
    assert line.endswith(
        f" {result.executorch_portable_median_us:,.1f} | {result.executorch_xnnpack_median_us:,.1f} "
        f"| {result.ratio(XNNPACK):.2f}x |"
    )


def _bench(**executorch) -> ModelBench:
    return ModelBench(
        model="m.py",
        runtime="lib.so",
        threads=1,
        rounds=3,
        median_us=100.0,
        p90_us=110.0,
        arena_bytes=64,
        first_fit_arena_bytes=64,
        greedy_arena_bytes=64,
        torch_eager_median_us=400.0,
        torch_eager_p90_us=420.0,
        passes=(),
        **executorch,
    )


def test_a_system_not_timed_shows_n_a_with_its_reason():
    result = _bench(
        executorch_portable_median_us=250.0,
        executorch_portable_p90_us=260.0,
        executorch_unavailable=((XNNPACK, "lowering failed: ValueError: a|b"),),
    )
    head, _, line = table([result]).splitlines()
    assert head.endswith("| Pare / torch | ET portable median µs | ET+XNNPACK median µs | Pare / ET+XNNPACK |")
    assert line.endswith("| 0.25x | 250.0 | n/a (lowering failed: ValueError: a\\|b) | n/a |")
    row = result.to_json()
    assert row["pare_over_executorch_portable"] == 0.4 and row["pare_over_executorch_xnnpack"] is None
    assert row["executorch_unavailable"] == {XNNPACK: "lowering failed: ValueError: a|b"}
    json.dumps(row)  # and it is JSON


def test_measure_interleaves_samplers_with_functions_in_alternating_order():
    order = []

    def sampler(name, seconds):
        def sample(calls):
            order.append((name, calls))
            return seconds

        return sample

    samples = measure(
        {"pare": lambda: order.append(("pare", 1))},
        2,
        {"pare": 1, "a": 5, "b": 7},
        samplers={"a": sampler("a", 2.0), "b": sampler("b", 3.0)},
    )
    warm_up, first, second = order[:3], order[3:6], order[6:]
    assert warm_up == first == [("pare", 1), ("a", 5), ("b", 7)] and second == first[::-1]
    assert samples["a"] == [2.0, 2.0] and samples["b"] == [3.0, 3.0] and len(samples["pare"]) == 2
    with pytest.raises(ValueError, match="share the names"):
        measure({"a": lambda: None}, 1, {"a": 1}, samplers={"a": sampler("a", 1.0)})


def test_p90_is_the_ninetieth_percentile():
    assert p90([float(i) for i in range(1, 11)]) == 9.0
    assert p90([5.0]) == 5.0


def test_cli_writes_json_and_reports_errors_in_one_line(full_runtime, tmp_path):
    out = tmp_path / "bench.json"
    env = {**os.environ, "PARE_RUNTIME_LIB": str(full_runtime)}

    def bench(*args):
        return subprocess.run(
            [sys.executable, "-m", "tools.bench", *args],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    # The peers have suites of their own (test_executorch_peer.py, test_onnxruntime_peer.py).
    no_peers = ["--rounds", "2", "--json", str(out), "--no-executorch", "--no-onnxruntime"]
    proc = bench(str(MODEL), *no_peers)
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(out.read_text())
    assert row["threads"] == 1 and row["rounds"] == 2 and row["executorch_xnnpack_median_us"] is None
    assert "Pare / torch" in proc.stdout and "ET+XNNPACK" not in proc.stdout and "ExecuTorch" not in proc.stderr
    assert row["thread_speedup"] is None and "speed-up" not in proc.stdout
    for args, message in [
        ([str(MODEL), "--runtime", str(tmp_path / "none.so")], "no runtime at"),
        ([str(tmp_path / "missing.py")], "no such model spec"),
        ([str(MODEL), "--threads", "0"], "must be at least 1"),
    ]:
        proc = bench(*args)
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
    # --threads 2: Pare on two threads, and on one alongside for the speed-up.
    proc = bench(str(MODEL), *no_peers, "--threads", "2")
    if len(os.sched_getaffinity(0)) < 2:  # a one-CPU machine: the clear error instead
        assert proc.returncode == 2 and "2 CPUs asked for" in proc.stderr, proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(out.read_text())
    assert row["threads"] == 2 and row["pare_1_thread_median_us"] > 0 and row["torch_eager_median_us"] > 0
    assert row["thread_speedup"] == pytest.approx(row["pare_1_thread_median_us"] / row["median_us"], rel=1e-3)
    assert "Pare 1 thread median µs | speed-up |" in proc.stdout


def test_a_library_that_is_not_a_runtime_is_a_user_error(tmp_path):
    bogus = tmp_path / "lib.so"
    bogus.write_text("not a library")
    with pytest.raises(BenchError, match="not a loadable x86_64 Pare runtime"):
        load_runtime(bogus)


class FakePeer:
    """ExecuTorchPeer's interface: XNNPACK times, portable is unavailable."""

    started: ClassVar[list[tuple[str, set[int]]]] = []  # (spec, the CPUs it started on)
    closed: ClassVar[int] = 0

    @classmethod
    def start(cls, spec_path, *, progress=None, **_):
        cls.started.append((str(spec_path), os.sched_getaffinity(0)))
        progress("lowering for XNNPACK")
        return cls()

    def systems(self):
        return {XNNPACK: lambda calls: 50e-6}

    def unavailable(self):
        return {PORTABLE: "the ExecuTorch runtime failed: RuntimeError: no kernel"}

    def close(self):
        FakePeer.closed += 1


@pytest.fixture
def in_process_cli(monkeypatch):
    """Runs main() here: it pins this process, so the CPUs are given back after."""
    cpus = os.sched_getaffinity(0)
    FakePeer.started, FakePeer.closed = [], 0
    monkeypatch.setattr(executorch_peer, "ExecuTorchPeer", FakePeer)
    yield cli.main
    os.sched_setaffinity(0, cpus)


def test_cli_measures_executorch_by_default_on_the_pinned_cpu(
    in_process_cli, full_runtime, monkeypatch, tmp_path, capsys
):
    monkeypatch.setattr(executorch_peer, "available", lambda: executorch_peer.Availability(True, "executorch 9.9"))
    out, cpu = tmp_path / "bench.json", max(os.sched_getaffinity(0))
    assert (
        in_process_cli(
            [
                str(MODEL),
                "--runtime",
                str(full_runtime),
                "--rounds",
                "2",
                "--cpu",
                str(cpu),
                "--json",
                str(out),
                "--no-onnxruntime",
            ]
        )
        == 0
    )
    assert FakePeer.started == [(str(MODEL), {cpu})] and FakePeer.closed == 1
    captured = capsys.readouterr()
    assert "executorch 9.9 (portable, XNNPACK; 1 thread)" in captured.err
    assert f"bench: {MODEL}: ExecuTorch: lowering for XNNPACK" in captured.err
    assert "| 50.0 |" in captured.out and "n/a (the ExecuTorch runtime failed: RuntimeError: no kernel)" in captured.out
    (row,) = json.loads(out.read_text())
    assert row["executorch_xnnpack_median_us"] == 50.0 and row["executorch_portable_median_us"] is None
    assert row["executorch_unavailable"] == {PORTABLE: "the ExecuTorch runtime failed: RuntimeError: no kernel"}


def test_cli_without_executorch_says_why_and_leaves_the_columns_out(in_process_cli, full_runtime, monkeypatch, capsys):
    monkeypatch.setattr(
        executorch_peer, "available", lambda: executorch_peer.Availability(False, "no ExecuTorch venv at /x; run setup")
    )
    assert in_process_cli([str(MODEL), "--runtime", str(full_runtime), "--rounds", "1", "--no-onnxruntime"]) == 0
    captured = capsys.readouterr()
    assert "ExecuTorch: not measured: no ExecuTorch venv at /x; run setup\n" in captured.err
    assert "ET+XNNPACK" not in captured.out and FakePeer.started == []


def test_profile_layers_prints_one_row_per_instruction_and_their_sum(in_process_cli, full_runtime, tmp_path, capsys):
    out = tmp_path / "bench.json"
    args = [str(MODEL), "--runtime", str(full_runtime), "--rounds", "1", "--no-executorch", "--no-onnxruntime"]
    assert in_process_cli([*args, "--json", str(out), "--profile-layers", "3"]) == 0
    (row,) = json.loads(out.read_text())
    # One row per instruction of the program, in order, each with its operator.
    exported = export_model(load_model_spec(MODEL))
    method = load_runtime(full_runtime).load(exported.program).method(exported.groups[0].name)
    ops = [p.op for p in (method.set_profiling(True), method.profile())[1]]
    method.close()
    layers = row["layers"]
    assert row["profile_runs"] == 3 and [r["instruction"] for r in layers] == list(range(len(ops)))
    assert [r["op"] for r in layers] == ops and "pare::linear_prepacked" in ops
    # Every operator that runs is called once per run and took some time;
    # the shares are of the sum of the minima.
    assert all(r["calls"] == 1 and r["min_us"] > 0 for r in layers if r["op"] == "pare::linear_prepacked")
    assert sum(r["share"] for r in layers) == pytest.approx(1.0, abs=1e-3)
    text = capsys.readouterr().out
    assert f"{MODEL}: per instruction, the minimum over 3 profiled runs" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and line.split("|")[1].strip().isdigit()]
    assert len(rows) == len(ops)
    printed = sum(float(line.split("|")[4].replace(",", "")) for line in rows)
    (total,) = [line for line in text.splitlines() if "sum of the minima" in line]
    assert float(total.split("|")[4].replace(",", "")) == pytest.approx(sum(r["min_us"] for r in layers), abs=0.1)
    assert printed == pytest.approx(sum(r["min_us"] for r in layers), abs=0.05 * len(rows) + 0.1)
    # Without the flag: no profile, and none in the JSON.
    assert in_process_cli([*args, "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())
    assert row["layers"] == [] and row["profile_runs"] is None and "per instruction" not in capsys.readouterr().out


def test_profile_layers_on_a_runtime_without_op_profiling_is_a_user_error():
    class NoProfiling:
        def set_profiling(self, enabled=True):
            raise PareError("op_profiling is not selected", 7, "FeatureNotSelected")

    with pytest.raises(BenchError, match="--profile-layers: the runtime cannot profile .*op_profiling"):
        profile_layers(NoProfiling(), 3)
