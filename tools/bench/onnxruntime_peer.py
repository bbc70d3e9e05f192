"""ONNX Runtime's CPU execution provider as a peer of Pare in python -m tools.bench.

ONNX Runtime is what many Android teams ship, and it installs from PyPI into
the project venv (requirements.txt), so unlike ExecuTorch it runs in this
process:

    peer = OnnxRuntimePeer.start(spec, inputs, threads=1)  # the inputs Pare is timed on
    peer.run          # a function of no arguments: one run on inputs bound once, or None
    peer.unavailable  # None, or the one-line reason it is not timed

start() exports the spec's module with torch.onnx.export (the dynamo
exporter, on the inputs given: static shapes), makes an InferenceSession
with SESSION_OPTIONS (session_options()), runs it twice on inputs bound
once and compares the second run's outputs with torch eager, as the
ExecuTorch worker does (executorch_worker.mismatch, with the tracer's
tolerances and the spec's TOLERANCE). The timed call is
session.run_with_iobinding on that binding: the inputs are bound once, as
Pare's are set once, so no feed dict or input copy is in the number.

Nothing about ONNX Runtime raises here: an export, a session or a run that
fails, or output that differs from torch, is the one-line reason in
`unavailable` that the bench prints as "n/a (reason)".
"""

from __future__ import annotations

import re
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from tools.bench.executorch_peer import Availability, tolerances
from tools.bench.executorch_worker import REASON_CHARS, mismatch, one_line
from tools.tracer.numerics import quantized_output_steps

SYSTEM = "onnxruntime"
SETUP = "tools/setup.sh"

# The session the bench times, in words (docs/performance.md quotes them).
SESSION_OPTIONS = (
    "CPUExecutionProvider only, intra_op_num_threads = the bench's --threads, inter_op_num_threads 1, "
    "graph_optimization_level ORT_ENABLE_ALL, execution_mode ORT_SEQUENTIAL"
)


def available() -> Availability:
    """Whether onnxruntime (and the exporter's onnxscript) import here."""
    try:
        import onnxruntime
        import onnxscript  # noqa: F401 (torch.onnx.export's dynamo exporter needs it)
    except ImportError as e:
        return Availability(False, f"{e.name or 'onnxruntime'} is not installed in this venv; run {SETUP}")
    return Availability(True, f"onnxruntime {onnxruntime.__version__}")


def session_options(threads: int):
    """SESSION_OPTIONS as an onnxruntime.SessionOptions."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3  # errors only: its warnings would interleave with the bench's progress
    return options


def export(module: torch.nn.Module, inputs: tuple, path: Path) -> None:
    """torch.onnx.export with the dynamo exporter, on `inputs`' shapes."""
    with warnings.catch_warnings():  # torch.export's deprecation notices are not the bench's output
        warnings.simplefilter("ignore")
        torch.onnx.export(module, inputs, str(path), dynamo=True, external_data=False, verbose=False)


def export_reason(e: BaseException) -> str:
    """One line for an export failure. The exporter wraps what went wrong in
    a page of next steps ("Failed to convert the exported program to an
    ONNX model ..."), so the line names the exception it wraps, and that
    one's root cause: "ConversionError: Error when translating node return
    (softmax, 1) ... (AttributeError: 'int' object has no attribute 'name')"."""
    chain = [e]
    while chain[-1].__cause__ is not None and len(chain) < 10:
        chain.append(chain[-1].__cause__)
    text = one_line(chain[1] if len(chain) > 1 else e)
    if len(chain) > 2:
        text += f" ({one_line(chain[-1])})"
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # the exporter colours its messages
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."


@dataclass
class OnnxRuntimePeer:
    """One model's session, or why it has none; see the module docstring."""

    run: Callable[[], object] | None
    unavailable: str | None
    # What run() uses: the session, its binding and the arrays bound (ONNX
    # Runtime reads them in place and holds no reference to them).
    _keep: tuple = ()

    @classmethod
    def failed(cls, reason: str) -> OnnxRuntimePeer:
        return cls(None, reason)

    @classmethod
    def start(
        cls,
        spec: Any,
        inputs: Sequence[torch.Tensor],
        *,
        threads: int = 1,
        progress: Callable[[str], None] | None = None,
    ) -> OnnxRuntimePeer:
        """Exports, loads and checks `spec`'s module on `inputs` (a ModelSpec's
        module and tolerance); `progress` gets one line per step."""

        def say(doing: str) -> None:
            if progress:
                progress(doing)

        inputs = tuple(inputs)
        # torch's and ONNX Runtime's failures are many and undocumented; each
        # becomes the one-line reason, so the blind excepts below are the point.
        try:
            with torch.no_grad():
                expected = torch.utils._pytree.tree_leaves(spec.module(*inputs))
        except Exception as e:  # noqa: BLE001
            return cls.failed(f"torch eager failed: {one_line(e)}")
        try:
            import onnxruntime as ort
        except ImportError as e:
            return cls.failed(f"{e.name} is not installed in this venv; run {SETUP}")
        with tempfile.TemporaryDirectory(prefix="pare-bench-onnx-") as tmp:
            path = Path(tmp) / "model.onnx"
            say("exporting with torch.onnx.export")
            try:
                export(spec.module, inputs, path)
            except Exception as e:  # noqa: BLE001
                return cls.failed(f"export failed: {export_reason(e)}")
            say("making the session")
            try:
                session = ort.InferenceSession(str(path), session_options(threads), providers=["CPUExecutionProvider"])
            except Exception as e:  # noqa: BLE001
                return cls.failed(f"the session failed: {one_line(e)}")
        graph_inputs = session.get_inputs()
        if len(graph_inputs) != len(inputs):
            return cls.failed(f"the ONNX graph takes {len(graph_inputs)} inputs, the model {len(inputs)}")
        try:
            arrays = [x.detach().contiguous().numpy() for x in inputs]
            binding = session.io_binding()
            for meta, array in zip(graph_inputs, arrays, strict=True):
                binding.bind_cpu_input(meta.name, array)
            for meta in session.get_outputs():
                binding.bind_output(meta.name, "cpu")

            def run() -> None:
                session.run_with_iobinding(binding)

            run()
            run()  # checked after a second run on the same binding, as the timing runs it
            actual = [torch.from_numpy(a) for a in binding.copy_outputs_to_cpu()]
        except Exception as e:  # noqa: BLE001
            return cls.failed(f"the run failed: {one_line(e)}")
        problem = mismatch(
            actual,
            expected,
            {k: tuple(v) for k, v in tolerances().items()},
            spec.tolerance_override(),
            quantized_output_steps(spec.module),
        )
        if problem:
            return cls.failed(f"output differs from torch eager: {problem}")
        return cls(run, None, (session, binding, arrays))
