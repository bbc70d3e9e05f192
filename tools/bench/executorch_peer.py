"""ExecuTorch portable and XNNPACK as peers of Pare in python -m tools.bench.

ExecuTorch lives in its own venv, .venv-executorch (tools/setup_executorch.sh),
so it is timed in a child process: tools/bench/executorch_worker.py, which
exports, lowers, loads and checks the model there and then times calls on
request (its docstring has the line protocol). This module is the project
venv's side:

    peer = ExecuTorchPeer.start("models/zoo/resnet18.py")  # after pinning: the worker inherits the CPUs
    samplers = peer.systems()      # {"executorch_xnnpack": time_calls, ...}: time_calls(n) -> s per call
    peer.unavailable()             # {"executorch_portable": "lowering failed: ...", ...}
    peer.close()

A sampler runs its n calls back to back in the worker and returns what the
worker measured, so one sampler call is one sample for timing.measure's
interleaved rounds, and the pipe's round trip is never in the number.
Nothing about ExecuTorch raises here: a missing venv or a model it cannot
run is a reason in `unavailable()` for the bench to print as "n/a (reason)".
Only a worker that dies mid-benchmark raises BenchError.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Self

from tools import REPO_ROOT
from tools.bench.executorch_worker import SYSTEMS
from tools.bench.timing import BenchError

VENV = REPO_ROOT / ".venv-executorch"
SETUP = "tools/setup_executorch.sh"


@dataclass(frozen=True)
class Availability:
    ok: bool
    detail: str  # "executorch 1.5.1+cpu", or why not (with the fix)

    def __bool__(self) -> bool:
        return self.ok


def python_of(venv: Path) -> Path:
    """The venv's interpreter."""
    return venv / "bin" / "python3"


def child_env() -> dict[str, str]:
    """The environment for a child in another venv: nothing of this venv's
    paths, the checkout on PYTHONPATH (the worker imports tools.bench.* only;
    tests/tracer/xnnpack_fixture.py imports pare.quantizer too)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    return env


def available(venv: Path = VENV) -> Availability:
    """Whether `venv` exists and imports executorch (quick: no torch import)."""
    python = python_of(venv)
    if not python.is_file():
        return Availability(False, f"no ExecuTorch venv at {venv}; run {SETUP}")
    try:
        proc = subprocess.run(
            [str(python), "-c", "import executorch.version as v; print(v.__version__)"],
            cwd=REPO_ROOT,
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return Availability(False, f"{python} does not run ({e}); run {SETUP}")
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return Availability(False, f"{venv} does not import executorch ({last}); run {SETUP}")
    return Availability(True, f"executorch {proc.stdout.strip()}")


def tolerances() -> dict[str, list[float]]:
    """The tracer's default tolerances by torch dtype name, for the worker's
    check (tools/tracer/numerics.py stays their one home)."""
    from pare import dtypes
    from tools.tracer.numerics import DEFAULT_TOLERANCES

    return {dtypes.BY_NAME[name].torch_name: list(pair) for name, pair in DEFAULT_TOLERANCES.items()}


class ExecuTorchPeer:
    """One worker process for one model spec; see the module docstring."""

    def __init__(
        self,
        spec_path: Path,
        reasons: dict[str, str],
        version: str | None = None,
        proc: subprocess.Popen | None = None,
        stderr: IO[bytes] | None = None,
    ) -> None:
        self.spec_path = spec_path
        self.version = version  # the worker's executorch version, when it started
        self._reasons = reasons
        self._proc = proc
        self._stderr = stderr

    @classmethod
    def start(
        cls,
        spec_path: str | Path,
        *,
        venv: Path = VENV,
        cpus: Iterable[int] | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> ExecuTorchPeer:
        """Starts the worker on `cpus` (default: this process's) and waits until
        it has prepared every system; `progress` gets its one-line updates."""
        spec_path = Path(spec_path).resolve()
        ready = available(venv)
        if not ready:
            return cls(spec_path, {name: ready.detail for name in SYSTEMS})
        # A file, not a pipe: a chatty worker never blocks on it. close() closes it.
        stderr = tempfile.TemporaryFile()  # noqa: SIM115
        proc = subprocess.Popen(
            [
                str(python_of(venv)),
                "-m",
                "tools.bench.executorch_worker",
                str(spec_path),
                "--tolerances",
                json.dumps(tolerances()),
            ],
            cwd=REPO_ROOT,
            env=child_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            bufsize=1,
        )
        # It inherited this process's CPUs; `cpus` may ask for others. Should it
        # have died at once, the first _receive() says why.
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(proc.pid, set(cpus) if cpus is not None else os.sched_getaffinity(0))
        peer = cls(spec_path, {}, proc=proc, stderr=stderr)
        doing = "starting"
        while True:
            try:
                message = peer._receive()
            except BenchError as e:  # it crashed preparing: that model has no ExecuTorch numbers
                why = str(e).removeprefix(f"{spec_path}: ")
                return cls(spec_path, {name: f"{why} (while {doing})" for name in SYSTEMS})
            if "progress" not in message:
                break
            doing = message["progress"]
            if progress:
                progress(doing)
        peer.version = message.get("executorch")
        peer._reasons = {name: why for name, why in message.get("ready", {}).items() if why}
        if not set(SYSTEMS) - set(peer._reasons):
            peer.close()  # nothing to time: no process to keep
        return peer

    def systems(self) -> dict[str, Callable[[int], float]]:
        """System name -> a sampler: sampler(n) times n calls, returns seconds per call."""
        if self._proc is None:
            return {}
        return {name: self._sampler(name) for name in SYSTEMS if name not in self._reasons}

    def unavailable(self) -> dict[str, str]:
        """System name -> the one-line reason it is not timed."""
        return dict(self._reasons)

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()  # end of input: the worker exits
            proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _sampler(self, name: str) -> Callable[[int], float]:
        def time_calls(calls: int) -> float:
            reply = self._request({"time": name, "calls": calls})
            if "seconds_per_call" not in reply:
                raise BenchError(
                    f"{self.spec_path}: the ExecuTorch worker refused to time {name}: {reply.get('error', reply)}"
                )
            return float(reply["seconds_per_call"])

        return time_calls

    def _request(self, message: dict) -> dict:
        if self._proc is None:
            raise BenchError(f"{self.spec_path}: the ExecuTorch worker is closed")
        try:
            self._proc.stdin.write(json.dumps(message) + "\n")
            self._proc.stdin.flush()
        except OSError:
            pass  # it died: _receive says how
        return self._receive()

    def _receive(self) -> dict:
        line = self._proc.stdout.readline()
        if not line:
            status = self._proc.wait()
            self._stderr.seek(0)
            lines = [x for x in self._stderr.read().decode(errors="replace").splitlines() if x.strip()]
            self.close()
            how = f"was killed by {signal.Signals(-status).name}" if status < 0 else f"exited with status {status}"
            raise BenchError(
                f"{self.spec_path}: the ExecuTorch worker {how}: {lines[-1].strip() if lines else 'no output'}"
            )
        return json.loads(line)
