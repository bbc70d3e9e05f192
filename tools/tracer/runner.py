"""Running a program on a built Pare runtime: an x86_64 .so in this process
(pare.runtime), an Android arm64 .so under qemu-aarch64 through the emulator
harness (tools/android_harness). The kind is read from the ELF header.

Outputs come back as numpy arrays (BFloat16 as float32 values) or Python
scalars, None for a None output.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from pare import dtypes as pare_dtypes
from pare._format_table import HEADER_FLAG_STATE, HEADER_SIZE
from pare.runtime import PareError, Program, Runtime
from tools.tracer import paths
from tools.tracer.errors import TracerError
from tools.tracer.progress import Progress

EM_X86_64 = 62
EM_AARCH64 = 183
_MACHO_MAGICS = {b"\xcf\xfa\xed\xfe", b"\xfe\xed\xfa\xcf", b"\xca\xfe\xba\xbe"}


def library_kind(path: Path) -> str:
    """ "x86_64" or "android_arm64", from the library's headers."""
    try:
        with open(path, "rb") as f:
            header = f.read(20)
    except OSError as e:
        raise TracerError(f"{path}: cannot read the runtime library ({e.strerror}); check the path") from None
    if header[:4] in _MACHO_MAGICS:
        raise TracerError(
            f"{path}: a Mach-O (iOS) runtime, which cannot run on this machine; check it "
            "structurally with python -m tools.verify, and run check with the x86_64 or Android .so"
        )
    if len(header) < 20 or header[:4] != b"\x7fELF":
        raise TracerError(f"{path}: not an ELF shared library; pass a built Pare runtime (.so)")
    byteorder = "<" if header[5] == 1 else ">"
    (machine,) = struct.unpack(byteorder + "H", header[18:20])
    if machine == EM_X86_64:
        return "x86_64"
    if machine == EM_AARCH64:
        return "android_arm64"
    raise TracerError(
        f"{path}: an ELF library for machine {machine}, which neither runs here (x86_64) nor under "
        "the aarch64 emulator harness; pass an x86_64 or Android arm64 Pare runtime"
    )


def has_state(program: bytes) -> bool:
    """Whether a program has state (format 1.2's header flag): its methods
    keep buffers between calls, so its inputs run as one sequence."""
    return len(program) >= HEADER_SIZE and bool(struct.unpack_from("<I", program, 12)[0] & HEADER_FLAG_STATE)


def to_numpy_input(t: torch.Tensor):
    """A method input for pare.runtime: a numpy view, or (bits, dtype) for bfloat16."""
    t = t.detach()
    if t.dtype == torch.bfloat16:
        return (t.contiguous().view(torch.int16).numpy().view(np.uint16), "BFloat16")
    return t.numpy()


def set_inputs(method, inputs: Sequence[torch.Tensor]) -> None:
    """Sets a pare.runtime.Method's inputs from torch tensors."""
    for i, t in enumerate(inputs):
        x = to_numpy_input(t)
        if isinstance(x, tuple):
            method.set_input(i, x[0], dtype=x[1])
        else:
            method.set_input(i, x)


class NativeRunner:
    """Runs programs in this process (x86_64 runtime)."""

    def __init__(self, library: Path):
        self.library = library
        try:
            self.runtime = Runtime(library)
        except (PareError, AttributeError) as e:
            raise TracerError(
                f"{library}: not a loadable Pare runtime ({e}); pass a library built from runtime/ "
                "(e.g. bazel-bin/runtime/full/linux_x86_64/libpare_full.so)"
            ) from None
        self.program: Program | None = None
        self._methods: dict[str, Any] = {}

    def load(self, program: bytes) -> None:
        self._methods.clear()
        self.program = None
        try:
            self.program = self.runtime.load(program)
        except PareError as e:
            raise runtime_error(self.library, "loading the program", e) from None

    def run(self, method: str, inputs: Sequence[torch.Tensor]) -> list[Any]:
        assert self.program is not None
        try:
            if method not in self._methods:
                # The methods of a program with state share it, as the module's forward and its
                # other methods share its buffers in torch.
                share = next((m for m in self._methods.values() if m.state_names), None)
                self._methods[method] = self.program.method(method, share_state_with=share)
            m = self._methods[method]
            set_inputs(m, inputs)
            m.execute()
            return [self._output(m, i) for i in range(m.num_outputs)]
        except PareError as e:
            raise runtime_error(self.library, f"running method {method}", e) from None

    @staticmethod
    def _output(method, index: int) -> Any:
        try:
            return method.output(index)
        except PareError as e:
            if "is a None value" in str(e):
                return None
            raise

    def close(self) -> None:
        self._methods.clear()
        if self.program is not None:
            self.program.close()
            self.program = None


class HarnessRunner:
    """Runs programs on an Android arm64 runtime under qemu-aarch64."""

    def __init__(self, library: Path, progress: Progress | None = None):
        self.library = library.resolve()
        self._program: bytes | None = None
        self._stateful = False
        self._history: list[tuple[str, list]] = []
        from tools.android_harness import run as harness  # imported late: only this runner needs it

        self.harness = harness
        # Builds the harness on first use (Bazel's progress shown) instead of
        # stopping with "harness not built".
        try:
            harness.ensure_built((progress or Progress()).info)
        except harness.HarnessError as e:
            raise TracerError(f"{paths.display(self.library)}: {e}") from None

    def load(self, program: bytes) -> None:
        self._program = program
        self._stateful = has_state(program)
        self._history: list[tuple[str, list]] = []  # a stateful program's calls so far

    def run(self, method: str, inputs: Sequence[torch.Tensor]) -> list[Any]:
        assert self._program is not None
        specs = []
        for t in inputs:
            t = t.detach().contiguous()
            code = pare_dtypes.get(t.dtype).code
            raw = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
            specs.append(self.harness.TensorData(code, tuple(t.shape), raw))
        earlier = []
        if self._stateful:
            # A process per call: replay the calls before this one on the same instance first.
            if any(name != method for name, _ in self._history):
                raise TracerError(
                    f"{paths.display(self.library)}: the program has state shared by several methods, which "
                    "the emulator harness (one method per process) cannot run: check it on an x86_64 runtime"
                )
            earlier = [inputs for _, inputs in self._history]
            self._history.append((method, specs))
        try:
            outputs = self.harness.run_program(self.library, self._program, method, specs, earlier=earlier)
        except self.harness.HarnessError as e:
            raise TracerError(
                f"{self.library}: running method {method} under the emulator harness failed: {e}"
            ) from None
        return [_from_harness(o) for o in outputs]

    def close(self) -> None:
        self._program = None
        self._history = []


def _from_harness(o: Any) -> Any:
    if not hasattr(o, "dtype"):
        return o
    dtype = pare_dtypes.BY_CODE[o.dtype]
    if dtype.numpy is None:  # BFloat16 bits
        return pare_dtypes.bfloat16_bits_to_float32(np.frombuffer(o.data, np.uint16)).reshape(o.sizes)
    return np.frombuffer(o.data, dtype.numpy).reshape(o.sizes).copy()


def runner_for(library: Path, progress: Progress | None = None):
    kind = library_kind(library)
    return NativeRunner(library) if kind == "x86_64" else HarnessRunner(library, progress)


def runtime_error(library: Path, what: str, e: PareError) -> TracerError:
    fix = {
        "OperatorNotSelected": "this runtime's manifest does not select an operator the model uses: re-trace the "
        "model (python -m tools.tracer trace) and rebuild the runtime",
        "DtypeNotSelected": "this runtime's manifest does not select a dtype the model reaches: re-trace the model "
        "and rebuild the runtime",
        "ClassNotSelected": "this runtime's manifest does not select a class the model uses (was it traced with "
        "other --passes, e.g. without prepack_weights?): re-trace and rebuild",
        "OperatorNotFound": "this runtime does not implement an operator the program calls: rebuild it from the "
        "current runtime/ sources, or export with the runtime the program is for",
    }.get(e.status_name)
    message = str(e).rstrip(". ")
    if e.status_name in ("OperatorNotSelected", "ClassNotSelected") and "prepack" in message:
        return TracerError(
            f"{library}: {what} failed: {e.status_name}: {message}; the program uses prepacked "
            "weights but the runtime's manifest was traced without the prepack_weights pass (or the "
            "other way round): check with the --passes the manifest was traced with (its debug_info "
            "records them)"
        )
    if fix is None or "re-trace" in message:  # the runtime's message already says what to do
        return TracerError(f"{library}: {what} failed: {e.status_name}: {message}")
    return TracerError(f"{library}: {what} failed: {e.status_name}: {message}; {fix}")
