"""ExecuTorch, portable and XNNPACK, timed for python -m tools.bench: the worker.

Runs in .venv-executorch (tools/setup_executorch.sh), never in the project
venv, which has no ExecuTorch: it imports torch, executorch, the model spec,
tools.bench.timing (stdlib only) and tools.eval_mode, nothing of pare. Its peer,
tools/bench/executorch_peer.py, starts it as

    .venv-executorch/bin/python -m tools.bench.executorch_worker SPEC.py --tolerances JSON

(cwd the repo root) and talks to it one JSON object per line:

    worker -> {"progress": "lowering for XNNPACK"}          any number, while it prepares
    worker -> {"ready": {SYSTEM: null | REASON}, "executorch": VERSION}
    parent -> {"time": SYSTEM, "calls": N}
    worker -> {"seconds_per_call": S}   or  {"error": REASON}
    parent -> end of input (or {"quit": true}): the worker exits 0

For the spec's first representative input, the worker exports the module
with torch.export and lowers it two ways: executorch_portable (to_edge, then
to_executorch: every op on the wheel's CPU kernel library, whose optimized
kernels stand in for the portable ones where they exist) and
executorch_xnnpack (to_edge_transform_and_lower with the XnnpackPartitioner,
then to_executorch). It loads each program with the pybindings runtime, runs
it once and compares the outputs with torch eager. A system that cannot be
exported, lowered, loaded or run, or whose output differs, is not timed: its
REASON is one line. Timing calls the loaded method's execute() back to back
on inputs set once, as the bench times Pare's execute() (the programs keep
their inputs outside the memory plan for that: _backend_config). One thread:
torch.set_num_threads(1) and ExecuTorch's threadpool (XNNPACK's and the
optimized kernels') reset to 1.

Anything else the libraries print goes to stderr; stdout carries only the
protocol.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from tools.bench.timing import seconds_per_call
from tools.eval_mode import to_eval

PORTABLE = "executorch_portable"
XNNPACK = "executorch_xnnpack"
SYSTEMS = (PORTABLE, XNNPACK)
REASON_CHARS = 240  # a reason is one line of the bench's output


class Unavailable(Exception):
    """Why a system cannot be timed; its message is the one-line reason."""


def one_line(e: BaseException) -> str:
    """`Type: first non-empty line of the message`, clipped."""
    first = next((line.strip() for line in str(e).splitlines() if line.strip()), "")
    text = f"{type(e).__name__}: {first}" if first else type(e).__name__
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."


def load_spec(path: Path) -> tuple[Any, tuple, dict | None]:
    """The spec's module (in eval mode), its first representative input tuple
    and its TOLERANCE (or None). Loaded as tools/tracer/model_spec.py loads a
    spec, which cannot serve here: it imports pare (the project venv). The
    bench has validated the spec with it already. Raises Unavailable."""
    if not path.is_file():
        raise Unavailable(f"{path}: no such model spec")
    name = "pare_model_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise Unavailable(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.parent))  # the spec may import its neighbours (models/zoo/_zoo.py)
    try:
        spec.loader.exec_module(module)
        model, inputs = module.build()
        example = inputs[0]
        example = tuple(example) if isinstance(example, (tuple, list)) else (example,)
        return to_eval(model), tuple(t.detach() for t in example), getattr(module, "TOLERANCE", None)
    except Exception as e:  # noqa: BLE001 (the user's code: a reason, not a traceback)
        raise Unavailable(f"the model spec failed in this venv: {one_line(e)}") from None
    finally:
        sys.path.remove(str(path.parent))


def mismatch(
    actual: list,
    expected: list,
    tolerances: dict[str, tuple[float, float]],
    override: dict | None,
    steps: tuple[float | None, ...] = (),
) -> str | None:
    """Why `actual` is not torch eager's `expected` (torch.allclose per output,
    NaN matching NaN; integer and bool outputs exact), or None. An output
    with a step in `steps` (numerics.quantized_output_steps of the module: a
    PT2E model's quantized output) is compared in quantization steps, as
    tools.tracer check compares Pare's: a peer's int8 kernels round
    differently from torch's reference graph by a step or a few, whatever
    the step's size, so no float tolerance fits every model."""
    import torch

    from tools.tracer.numerics import QUANTIZED_MAX_STEPS, QUANTIZED_MIN_FRACTION, within_steps

    if len(actual) != len(expected):
        return f"{len(actual)} outputs, torch eager gives {len(expected)}"
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        if not isinstance(e, torch.Tensor):
            if a != e:
                return f"output {i} is {a!r}, torch eager gives {e!r}"
            continue
        if not isinstance(a, torch.Tensor):
            return f"output {i} is a {type(a).__name__}, torch eager gives a tensor"
        if a.dtype != e.dtype or a.shape != e.shape:
            return (
                f"output {i} is {str(a.dtype).removeprefix('torch.')}{list(a.shape)}, torch eager gives "
                f"{str(e.dtype).removeprefix('torch.')}{list(e.shape)}"
            )
        if not e.is_floating_point():
            bad = int((a != e).sum())
            if bad:
                return f"output {i}: {bad} elements differ (must be exact)"
            continue
        step = steps[i] if i < len(steps) else None
        if step is not None:
            check = within_steps(i, "", a.double().numpy(), e.double().numpy(), step)
            if check.problem:
                return f"output {i}: {check.problem}"
            if not check.ok:
                return (
                    f"output {i} (quantized, step {step:.3g}): {100 * check.within:.2f}% of elements within "
                    f"{QUANTIZED_MAX_STEPS} steps (needs {100 * QUANTIZED_MIN_FRACTION:g}%), max {check.max_steps} steps"
                )
            continue
        rtol, atol = tolerances.get(str(e.dtype).removeprefix("torch."), (0.0, 0.0))
        rtol, atol = (override or {}).get("rtol", rtol), (override or {}).get("atol", atol)
        a64, e64 = a.double(), e.double()
        if not torch.allclose(a64, e64, rtol=rtol, atol=atol, equal_nan=True):
            diff = torch.where((a64 == e64) | (a64.isnan() & e64.isnan()), 0.0, (a64 - e64).abs())
            if diff.isnan().any():
                return f"output {i}: NaN where torch eager has a number, or the reverse"
            return f"output {i} max abs err {diff.max().item():.3g} (atol {atol:g}, rtol {rtol:g})"
    return None


class Prepared:
    """What the worker serves: each system's loaded method, or why it has none."""

    def __init__(self) -> None:
        self.methods: dict[str, Any] = {}
        # The pybindings hold no reference to what they use: a program reads
        # its weights from the buffer it was loaded from, and a method reads
        # the input tensors it was given. Keep them all alive here.
        self.programs: list[tuple[bytes, Any]] = []
        self.inputs: tuple = ()
        self.reasons: dict[str, str] = {}

    def fail_all(self, reason: str) -> Prepared:
        self.reasons.update({name: reason for name in SYSTEMS if name not in self.methods})
        return self


def _backend_config():
    """Inputs outside the memory plan: the method reads the caller's tensors in
    place, so they survive a run and execute() can be timed on inputs set once,
    as Pare's is. By default ExecuTorch plans the inputs into the arena too,
    the run reuses their bytes for activations, and a second execute() without
    set_inputs() reads garbage (an embedding fails its index check)."""
    from executorch.exir import ExecutorchBackendConfig
    from executorch.exir.passes import MemoryPlanningPass

    return ExecutorchBackendConfig(memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False))


def _load_quantized_ops() -> None:
    """ExecuTorch's out variants of the quantized_decomposed ops, which a
    PT2E-quantized model keeps wherever no backend takes them (on the
    portable program: all of them), registered with torch for to_edge."""
    import executorch.kernels.quantized  # noqa: F401 (registers the ops)


def _portable(exported) -> bytes:
    from executorch.exir import to_edge

    _load_quantized_ops()

    return to_edge(exported).to_executorch(_backend_config()).buffer


def _xnnpack(exported) -> bytes:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import (
        XnnpackPartitioner,
    )
    from executorch.exir import to_edge_transform_and_lower

    _load_quantized_ops()
    lowered = to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()])
    return lowered.to_executorch(_backend_config()).buffer


LOWERINGS: dict[str, tuple[str, Callable[[Any], bytes]]] = {
    PORTABLE: ("lowering to the portable program", _portable),
    XNNPACK: ("lowering for XNNPACK", _xnnpack),
}


def prepare(spec_path: Path, tolerances: dict[str, tuple[float, float]], progress: Callable[[str], None]) -> Prepared:
    """Exports, lowers, loads and checks each system (docstring above)."""
    prepared = Prepared()
    progress(f"building {spec_path.name}")
    import torch

    torch.set_num_threads(1)
    try:
        module, inputs, override = load_spec(spec_path)
    except Unavailable as e:
        return prepared.fail_all(str(e))
    prepared.inputs = inputs
    # torch's and executorch's failures are many and undocumented; each becomes
    # the system's one-line reason, so the blind excepts below are the point.
    try:
        with torch.no_grad():
            expected = torch.utils._pytree.tree_leaves(module(*inputs))
    except Exception as e:  # noqa: BLE001
        return prepared.fail_all(f"torch eager failed: {one_line(e)}")
    from tools.tracer.numerics import quantized_output_steps

    steps = quantized_output_steps(module)
    progress("exporting with torch.export")
    try:
        exported = torch.export.export(module, inputs)
    except Exception as e:  # noqa: BLE001
        return prepared.fail_all(f"torch.export failed: {one_line(e)}")
    progress("importing executorch")  # only now: a model that does not export never waits for it
    try:
        from executorch.extension.pybindings import portable_lib as runtime

        runtime._unsafe_reset_threadpool(1)
    except Exception as e:  # noqa: BLE001
        return prepared.fail_all(f"the ExecuTorch runtime does not load: {one_line(e)}")
    for name, (doing, lower) in LOWERINGS.items():
        progress(doing)
        try:
            buffer = lower(exported)
        except Exception as e:  # noqa: BLE001
            prepared.reasons[name] = f"lowering failed: {one_line(e)}"
            continue
        try:
            program = runtime._load_program_from_buffer(buffer)
            method = program.load_method("forward")
            method.set_inputs(list(inputs))
            method.execute()
            method.execute()  # checked after a second run on the same inputs, as the timing runs it
            actual = method.get_outputs()
        except Exception as e:  # noqa: BLE001
            prepared.reasons[name] = f"the ExecuTorch runtime failed: {one_line(e)}"
            continue
        problem = mismatch(actual, expected, tolerances, override, steps)
        if problem:
            prepared.reasons[name] = f"output differs from torch eager: {problem}"
            continue
        prepared.programs.append((buffer, program))
        prepared.methods[name] = method
    return prepared


def serve(prepared: Prepared, requests: TextIO, send: Callable[[dict], None]) -> None:
    """Answers timing requests until end of input or {"quit": true}."""
    for line in requests:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError:
            send({"error": f"not a JSON request: {line.strip()[:80]!r}"})
            continue
        if request.get("quit"):
            return
        name, calls = request.get("time"), request.get("calls")
        if name not in prepared.methods:
            why = prepared.reasons.get(name, f"unknown system; the systems are {', '.join(SYSTEMS)}")
            send({"error": f"{name}: not timed: {why}"})
        elif isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
            send({"error": f"calls must be a positive integer, got {calls!r}"})
        else:
            try:
                send({"seconds_per_call": seconds_per_call(prepared.methods[name].execute, calls)})
            except Exception as e:  # noqa: BLE001 (checked in prepare(); should a later run fail, say so)
                send({"error": f"{name}: the ExecuTorch runtime failed: {one_line(e)}"})


def _protocol_stream() -> TextIO:
    """stdout for the protocol alone: the libraries' prints (Python or C) go to stderr."""
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return protocol


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m tools.bench.executorch_worker",
        description="Serves ExecuTorch timings for one model spec (run by "
        "tools/bench/executorch_peer.py in .venv-executorch).",
    )
    p.add_argument("spec", type=Path, help="model spec (docs/model_spec.md)")
    p.add_argument(
        "--tolerances",
        required=True,
        help='JSON {"float32": [rtol, atol], ...}: the tracer\'s '
        "defaults per dtype (the spec's TOLERANCE overrides them)",
    )
    args = p.parse_args(argv)
    tolerances = {k: tuple(v) for k, v in json.loads(args.tolerances).items()}
    protocol = _protocol_stream()

    def send(message: dict) -> None:
        protocol.write(json.dumps(message) + "\n")

    prepared = prepare(args.spec.resolve(), tolerances, lambda text: send({"progress": text}))
    version = "unknown"
    try:
        from executorch import version as executorch_version

        version = executorch_version.__version__
    except ImportError:
        pass
    send({"ready": {name: prepared.reasons.get(name) for name in SYSTEMS}, "executorch": version})
    serve(prepared, sys.stdin, send)
    return 0


if __name__ == "__main__":
    sys.exit(main())
