"""What the peer suites share (test_executorch_peer.py,
test_onnxruntime_peer.py, test_models_bench.py): model specs as spec-file
text, writing one, and a bench run that records the peers' progress."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tools.bench.models import ModelBench, bench_model, load_runtime

# Eager runs first (the expected output: x * 1), the export traces the second
# call (x * 2): a deterministic mismatch whatever the runtime.
STATEFUL = """
import torch
from torch import nn

class CallCounter(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * self.calls

def build():
    return CallCounter(), [(torch.ones(2, 3),)]
"""


def write_spec(tmp_path: Path, name: str, source: str) -> Path:
    """Writes spec-file text (dedented) to tmp_path/<name>.py; its path."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return path


def bench_with_progress(model: str | Path, runtime_path: Path, **peers: bool) -> tuple[ModelBench, list[str]]:
    """bench_model over 3 rounds on one thread with `peers` (executorch=True,
    onnxruntime=True), and the progress lines the peers printed meanwhile,
    as "<system>: <what>"."""
    progress: list[str] = []
    result = bench_model(
        model,
        load_runtime(runtime_path),
        runtime_path,
        rounds=3,
        threads=1,
        progress=lambda system, doing: progress.append(f"{system}: {doing}"),
        **peers,
    )
    return result, progress
