"""ExecuTorch as a bench peer: the worker in .venv-executorch, driven from here
through tools/bench/executorch_peer.py (never how fast anything is).

The worker runs for real (tools/setup.sh installs .venv-executorch), so these
tests see what the bench sees: lowered programs loaded by the pybindings
runtime, checked against torch eager, timed on request.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import torch

from tests.bench.peer_specs import STATEFUL, write_spec
from tools.bench.executorch_peer import VENV, ExecuTorchPeer, available
from tools.bench.executorch_worker import (
    PORTABLE,
    SYSTEMS,
    XNNPACK,
    Unavailable,
    load_spec,
    mismatch,
)
from tools.bench.timing import BenchError

TOLERANCES = {"float32": (1e-4, 1e-4)}

# Two inputs, float and int64. The embedding's index check fails a run on
# inputs that an earlier run overwrote (executorch_worker._backend_config).
TINY_CONV_LINEAR = """
import torch
from torch import nn

class ConvEmbedLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten())
        self.embed = nn.Embedding(50, 8)
        self.head = nn.Linear(32 + 8, 5)

    def forward(self, image, tokens):
        return self.head(torch.cat([self.conv(image), self.embed(tokens).mean(dim=1)], dim=1))

def build():
    torch.manual_seed(0)
    return ConvEmbedLinear(), [(torch.rand(1, 3, 8, 8), torch.randint(0, 50, (1, 6))),
                               (torch.rand(2, 3, 8, 8), torch.randint(0, 50, (2, 6)))]
"""


UNEXPORTABLE = """
import torch
from torch import nn

class Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent control flow: torch.export cannot trace it
            return x * 2
        return x - 1

def build():
    return Branchy(), [(torch.ones(2, 3),)]
"""


@pytest.fixture(scope="module")
def executorch_venv() -> Path:
    ready = available()
    if not ready:  # setup installs it: a missing venv is a broken setup, not a skip
        pytest.fail(f"{ready.detail} (make setup does)", pytrace=False)
    return VENV


@pytest.fixture(scope="module")
def tiny_peer(executorch_venv, tmp_path_factory):
    peer = ExecuTorchPeer.start(
        write_spec(tmp_path_factory.mktemp("spec"), "tiny", TINY_CONV_LINEAR), venv=executorch_venv
    )
    yield peer
    peer.close()


def _assert_one_line_reasons(reasons: dict[str, str], start: str) -> None:
    assert set(reasons) == set(SYSTEMS)
    for reason in reasons.values():
        assert reason.startswith(start), reason
        assert "\n" not in reason and "Traceback" not in reason


def test_both_systems_load_match_torch_and_time_calls(tiny_peer):
    assert tiny_peer.unavailable() == {}  # lowered, loaded and checked against torch eager
    samplers = tiny_peer.systems()
    assert set(samplers) == {PORTABLE, XNNPACK}
    for sample in samplers.values():
        assert sample(1) > 0 and sample(20) > 0
    assert tiny_peer.version.startswith("1.5.1")


def test_a_pt2e_quantized_model_lowers_on_both_systems(executorch_venv, tmp_path):
    # convert_pt2e's module refuses .eval() (tools/eval_mode.py), and the
    # portable program needs ExecuTorch's quantized out variants. Float
    # biases, as XNNPACKQuantizer makes them: XNNPACK takes every layer.
    models = Path(__file__).parents[1] / "tracer" / "models"
    source = f"import sys\nsys.path.insert(0, {str(models)!r})\nimport quantized_cnn\n\n\ndef build():\n"
    spec = write_spec(tmp_path, "qcnn", source + "    return quantized_cnn.quantized(int32_bias=False)\n")
    peer = ExecuTorchPeer.start(spec, venv=executorch_venv)
    try:
        assert peer.unavailable() == {}  # lowered, loaded and checked against torch eager
        assert all(sample(2) > 0 for sample in peer.systems().values())
    finally:
        peer.close()


def test_the_worker_is_pinned_to_the_parents_cpus(tiny_peer):
    assert os.sched_getaffinity(tiny_peer._proc.pid) == os.sched_getaffinity(0)


def test_a_worker_that_dies_mid_benchmark_is_a_bench_error(tiny_peer):
    # Last of tiny_peer's tests: it ends that worker.
    sample = tiny_peer.systems()[XNNPACK]
    os.kill(tiny_peer._proc.pid, signal.SIGKILL)
    with pytest.raises(BenchError, match="the ExecuTorch worker was killed by SIGKILL"):
        sample(1)
    assert tiny_peer.systems() == {}


def test_a_worker_that_dies_preparing_is_a_reason(executorch_venv, tmp_path):
    spec = write_spec(
        tmp_path, "suicidal", "import os, signal\n\ndef build():\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    peer = ExecuTorchPeer.start(spec, venv=executorch_venv)
    assert peer.systems() == {}
    _assert_one_line_reasons(peer.unavailable(), "the ExecuTorch worker was killed by SIGKILL")
    assert peer.unavailable()[XNNPACK].endswith("(while building suicidal.py)")


def test_output_that_differs_from_torch_is_a_reason_not_a_number(executorch_venv, tmp_path):
    with ExecuTorchPeer.start(write_spec(tmp_path, "stateful", STATEFUL), venv=executorch_venv) as peer:
        assert peer.systems() == {}
        _assert_one_line_reasons(peer.unavailable(), "output differs from torch eager: output 0 max abs err 1 ")


def test_a_model_torch_export_rejects_is_a_one_line_reason_per_system(executorch_venv, tmp_path):
    peer = ExecuTorchPeer.start(write_spec(tmp_path, "branchy", UNEXPORTABLE), venv=executorch_venv)
    assert peer.systems() == {}
    _assert_one_line_reasons(peer.unavailable(), "torch.export failed: ")


def test_a_missing_or_broken_venv_says_how_to_get_one(tmp_path):
    ready = available(tmp_path / "none")
    assert not ready and "no ExecuTorch venv at" in ready.detail and "tools/setup_executorch.sh" in ready.detail
    peer = ExecuTorchPeer.start(write_spec(tmp_path, "tiny", TINY_CONV_LINEAR), venv=tmp_path / "none")
    assert peer.systems() == {}
    _assert_one_line_reasons(peer.unavailable(), "no ExecuTorch venv at")

    broken = tmp_path / "broken"  # an interpreter without executorch
    (broken / "bin").mkdir(parents=True)
    (broken / "bin" / "python3").symlink_to("/bin/sh")
    ready = available(broken)
    assert not ready and "does not import executorch" in ready.detail and "\n" not in ready.detail


# The worker's pure-torch parts, in this venv.


def test_load_spec_takes_the_first_input_and_reports_a_failing_build(tmp_path):
    module, inputs, tolerance = load_spec(write_spec(tmp_path, "tiny", TINY_CONV_LINEAR))
    assert not module.training and [t.shape for t in inputs] == [(1, 3, 8, 8), (1, 6)] and tolerance is None
    with pytest.raises(Unavailable, match=r"^the model spec failed in this venv: RuntimeError: boom$"):
        load_spec(write_spec(tmp_path, "bad", "def build():\n    raise RuntimeError('boom')\n"))


def test_mismatch_compares_as_the_tracer_does():
    x = torch.tensor([1.0, 2.0, float("nan")])
    assert mismatch([x + 1e-5], [x], TOLERANCES, None) is None
    assert mismatch([x + 1e-2], [x], TOLERANCES, None).startswith("output 0 max abs err 0.01 ")
    assert mismatch([x + 1e-2], [x], TOLERANCES, {"atol": 0.1}) is None
    assert mismatch([x.nan_to_num()], [x], TOLERANCES, None) == (
        "output 0: NaN where torch eager has a number, or the reverse"
    )
    assert mismatch([x[:2]], [x], TOLERANCES, None) == "output 0 is float32[2], torch eager gives float32[3]"
    assert mismatch([x, x], [x], TOLERANCES, None) == "2 outputs, torch eager gives 1"
    ids = torch.tensor([1, 2, 3])
    assert mismatch([ids + 1], [ids], TOLERANCES, None) == "output 0: 3 elements differ (must be exact)"


def test_mismatch_compares_a_quantized_output_in_steps():
    """A quantized output (a step given) passes within 3 steps on 99.9% of
    its elements, whatever the step's size or an override's atol, as
    tools.tracer check compares Pare's; each failure is one line."""
    step = 0.4
    expected = torch.arange(2000, dtype=torch.float32) * step
    off = expected.clone()
    off[:2] += 3 * step  # 2 of 2,000 elements 3 steps off: within
    off[2] += 9 * step  # one element 9 steps off: 0.05% of them, allowed
    assert mismatch([off], [expected], TOLERANCES, {"atol": 0.25}, (step,)) is None
    # The same output checked as a float (no step): 1.2 > atol 0.25.
    assert mismatch([off], [expected], TOLERANCES, {"atol": 0.25}).startswith("output 0 max abs err 3.6 ")
    far = expected.clone()
    far[:3] += 4 * step  # 0.15% of elements 4 steps off
    assert mismatch([far], [expected], TOLERANCES, None, (step,)) == (
        "output 0 (quantized, step 0.4): 99.85% of elements within 3 steps (needs 99.9%), max 4 steps"
    )
    nan = expected.clone()
    nan[0] = float("nan")
    assert mismatch([nan], [expected], TOLERANCES, None, (step,)) == (
        "output 0: NaN in 1 elements where the other side has a number"
    )
    # Steps name outputs by position; a float output beside a quantized one keeps its tolerance.
    assert mismatch([expected, expected + 1e-2], [expected, expected], TOLERANCES, None, (step, None)).startswith(
        "output 1 max abs err 0.01 "
    )
