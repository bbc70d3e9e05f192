"""ONNX Runtime as a bench peer (tools/bench/onnxruntime_peer.py): exported with
torch.onnx.export, run on the CPU execution provider, checked against torch
eager, timed in the bench's rounds (never how fast anything is)."""

from __future__ import annotations

import json
import os
import textwrap

import onnxruntime as ort
import pytest

from tests.bench.peer_specs import STATEFUL, bench_with_progress, write_spec
from tests.conftest import REPO_ROOT
from tools.bench import __main__ as cli
from tools.bench import onnxruntime_peer
from tools.bench.models import bench_model, load_runtime, table
from tools.bench.onnxruntime_peer import OnnxRuntimePeer, available, session_options
from tools.tracer.model_spec import load_model_spec

CONV_RELU = """
import torch
from torch import nn

def build():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    return model, [(torch.rand(1, 3, 16, 16),)]
"""


# Returns the batch size beside a tensor: an int output, which ONNX has no
# way to give and the dynamo exporter refuses, while Pare runs it.
TINY_MLP = REPO_ROOT / "tests" / "tracer" / "models" / "tiny_mlp.py"


def _one_line(reason: str | None, start: str) -> None:
    assert reason is not None and reason.startswith(start), reason
    assert "\n" not in reason and "Traceback" not in reason


def test_onnxruntime_is_installed_with_its_exporter():
    ready = available()  # setup installs it (requirements.txt): missing is a broken setup, not a skip
    assert ready, ready.detail
    assert ready.detail == f"onnxruntime {ort.__version__}"


def test_the_session_options_are_the_documented_ones():
    options = session_options(3)
    assert options.intra_op_num_threads == 3 and options.inter_op_num_threads == 1
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert options.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL
    docs = (REPO_ROOT / "docs" / "performance.md").read_text()
    assert onnxruntime_peer.SESSION_OPTIONS in " ".join(docs.split())


def test_a_small_model_gets_onnxruntime_numbers_in_the_json_and_a_ratio(full_runtime, tmp_path):
    spec = write_spec(tmp_path, "conv_relu", CONV_RELU)
    result, progress = bench_with_progress(spec, full_runtime, onnxruntime=True)
    assert "ONNX Runtime: exporting with torch.onnx.export" in progress
    assert result.onnxruntime_unavailable is None
    assert 0 < result.onnxruntime_median_us <= result.onnxruntime_p90_us
    row = json.loads(json.dumps(result.to_json()))
    assert row["onnxruntime_median_us"] == result.onnxruntime_median_us
    assert row["onnxruntime_p90_us"] == result.onnxruntime_p90_us
    assert row["pare_over_onnxruntime"] == round(result.median_us / result.onnxruntime_median_us, 4)
    assert row["onnxruntime_unavailable"] is None
    head, _, line = table([result]).splitlines()
    assert head.endswith("| Pare / torch | ORT median µs | Pare / ORT |")
    assert line.endswith(f" {result.onnxruntime_median_us:,.1f} | {result.ratio('onnxruntime'):.2f}x |")
    # Not asked for: no numbers, no reason, no columns.
    plain = bench_model(spec, load_runtime(full_runtime), full_runtime, rounds=1, threads=1)
    assert plain.onnxruntime_median_us is None and plain.onnxruntime_unavailable is None
    assert plain.to_json()["pare_over_onnxruntime"] is None and "ORT" not in table([plain])


def test_with_threads_onnxruntime_gets_as_many_intra_op_threads_in_rounds_of_its_own(full_runtime, tmp_path):
    threads = min(2, len(os.sched_getaffinity(0)))  # a one-CPU machine has the one-thread path only
    spec = write_spec(tmp_path, "conv_relu", CONV_RELU)
    result = bench_model(spec, load_runtime(full_runtime), full_runtime, rounds=2, threads=threads, onnxruntime=True)
    assert result.onnxruntime_unavailable is None and 0 < result.onnxruntime_median_us
    assert result.to_json()["pare_over_onnxruntime"] > 0
    assert (result.pare_1_thread_median_us is not None) == (threads > 1)


def test_a_model_that_does_not_export_is_a_one_line_reason_and_the_others_are_timed(full_runtime):
    result = bench_model(TINY_MLP, load_runtime(full_runtime), full_runtime, rounds=2, threads=1, onnxruntime=True)
    _one_line(result.onnxruntime_unavailable, "export failed: ")
    assert result.onnxruntime_median_us is None and result.onnxruntime_p90_us is None
    assert result.median_us > 0 and result.torch_eager_median_us > 0
    row = result.to_json()
    assert row["pare_over_onnxruntime"] is None and row["onnxruntime_unavailable"] == result.onnxruntime_unavailable
    line = table([result]).splitlines()[2]
    assert line.endswith(" | n/a |") and "| n/a (export failed: " in line


def test_output_that_differs_from_torch_is_a_reason_not_a_number(tmp_path):
    spec = load_model_spec(write_spec(tmp_path, "stateful", STATEFUL))
    peer = OnnxRuntimePeer.start(spec, spec.inputs[0])
    assert peer.run is None
    _one_line(peer.unavailable, "output differs from torch eager: output 0 max abs err 1 ")


def test_the_check_uses_the_specs_tolerance(tmp_path, monkeypatch):
    spec = load_model_spec(write_spec(tmp_path, "conv_relu", CONV_RELU))
    inputs = spec.inputs[0]
    assert OnnxRuntimePeer.start(spec, inputs).unavailable is None
    # Every output off by 0.01: beyond the default float tolerance (1e-4),
    # within a TOLERANCE of atol 0.1.
    real = onnxruntime_peer.mismatch

    def shifted(actual, expected, *checks):
        return real([a + 0.01 for a in actual], expected, *checks)

    monkeypatch.setattr(onnxruntime_peer, "mismatch", shifted)
    _one_line(
        OnnxRuntimePeer.start(spec, inputs).unavailable, "output differs from torch eager: output 0 max abs err 0.01 "
    )
    (tmp_path / "loose.py").write_text(textwrap.dedent(CONV_RELU) + 'TOLERANCE = {"atol": 0.1}\n')
    loose = load_model_spec(tmp_path / "loose.py")
    peer = OnnxRuntimePeer.start(loose, loose.inputs[0])
    assert peer.unavailable is None and peer.run is not None


def test_a_session_that_fails_is_a_one_line_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(onnxruntime_peer, "export", lambda module, inputs, path: path.write_bytes(b"not a model"))
    spec = load_model_spec(write_spec(tmp_path, "conv_relu", CONV_RELU))
    peer = OnnxRuntimePeer.start(spec, spec.inputs[0])
    assert peer.run is None
    _one_line(peer.unavailable, "the session failed: ")


class FakeOnnxRuntimePeer:
    started: list[str] = []  # noqa: RUF012 (reset by the fixture)

    @classmethod
    def start(cls, spec, inputs, *, threads=1, progress=None):
        cls.started.append(str(spec.path))
        progress("exporting with torch.onnx.export")
        return OnnxRuntimePeer(lambda: sum(range(100)), None)


@pytest.fixture
def in_process_cli(monkeypatch):
    """Runs main() here: it pins this process, so the CPUs are given back after."""
    cpus = os.sched_getaffinity(0)
    FakeOnnxRuntimePeer.started = []
    monkeypatch.setattr(onnxruntime_peer, "OnnxRuntimePeer", FakeOnnxRuntimePeer)
    yield cli.main
    os.sched_setaffinity(0, cpus)


def test_cli_times_onnxruntime_by_default_and_no_onnxruntime_leaves_it_out(
    in_process_cli, full_runtime, tmp_path, capsys
):
    out = tmp_path / "bench.json"
    base = [str(TINY_MLP), "--runtime", str(full_runtime), "--rounds", "1", "--no-executorch", "--json", str(out)]
    assert in_process_cli(base) == 0
    captured = capsys.readouterr()
    assert FakeOnnxRuntimePeer.started == [str(TINY_MLP)]
    assert f"onnxruntime {ort.__version__} (CPU execution provider; 1 intra-op thread" in captured.err
    assert f"bench: {TINY_MLP}: ONNX Runtime: exporting with torch.onnx.export" in captured.err
    assert "| ORT median µs | Pare / ORT |" in captured.out
    (row,) = json.loads(out.read_text())
    assert row["onnxruntime_median_us"] > 0 and row["pare_over_onnxruntime"] > 0

    assert in_process_cli([*base, "--no-onnxruntime"]) == 0
    captured = capsys.readouterr()
    assert FakeOnnxRuntimePeer.started == [str(TINY_MLP)] and "ORT" not in captured.out
    assert "onnxruntime" not in captured.err
    (row,) = json.loads(out.read_text())
    assert row["onnxruntime_median_us"] is None and row["onnxruntime_unavailable"] is None


def test_cli_without_onnxruntime_says_why(in_process_cli, full_runtime, monkeypatch, capsys):
    monkeypatch.setattr(
        onnxruntime_peer, "available", lambda: onnxruntime_peer.Availability(False, "onnxruntime is not installed")
    )
    assert in_process_cli([str(TINY_MLP), "--runtime", str(full_runtime), "--rounds", "1", "--no-executorch"]) == 0
    captured = capsys.readouterr()
    assert "ONNX Runtime: not measured: onnxruntime is not installed\n" in captured.err
    assert "ORT" not in captured.out and FakeOnnxRuntimePeer.started == []
