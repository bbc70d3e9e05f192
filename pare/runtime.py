"""ctypes binding for a Pare runtime shared library (runtime/c_api/pare.h).

    from pare.runtime import Runtime

    rt = Runtime("bazel-bin/runtime/libfull.so")
    program = rt.load(program_bytes)
    forward = program.method("forward")
    (y,) = forward.run(np.ones((1, 16), np.float32))

Every failure raises :class:`PareError` with the runtime's message and
status. Each Runtime loads its library with RTLD_LOCAL, so differently
selected runtimes can be used side by side in one process.
"""

from __future__ import annotations

import ctypes
import math
import os
from typing import Any

import numpy as np

from pare import _format_table as _format
from pare import dtypes as _dtypes
from pare._c_api import _SIGNATURES, MAX_DIM, PLANNERS, _MemoryStats, _TensorInfo
from pare._status_table import STATUS_CODES
from pare.records import InputInfo, Inventory, MemoryStats, OpUse, ProfileEntry, Trace

# How the SDK reads a scalar output, per value kind: the C API's function,
# the ctypes type it writes, and the Python value.
_SCALAR_OUTPUTS = {
    _format.INT: ("pare_method_output_int", ctypes.c_int64, int),
    _format.DOUBLE: ("pare_method_output_double", ctypes.c_double, float),
    _format.BOOL: ("pare_method_output_bool", ctypes.c_int32, bool),
}


class PareError(Exception):
    """A runtime call failed; `status` is the pare_status code, `status_name`
    its name (e.g. "OperatorNotSelected"), str(e) the runtime's message.

    A runtime built without error messages (docs/errors.md) reports message
    identifiers; `raw_message` keeps what it said and str(e) is the message
    they stand for, when this checkout's runtime sources know them."""

    def __init__(self, message: str, status: int, status_name: str):
        self.raw_message = message
        super().__init__(_explained(message))
        self.status = status
        self.status_name = status_name


def _sdk_error(message: str, status_name: str) -> PareError:
    """A failure the SDK finds before calling the runtime, with the code the runtime gives `status_name`
    (runtime/core/errors.def)."""
    return PareError(message, STATUS_CODES[status_name], status_name)


def _explained(message: str) -> str:
    from pare import messages

    if not messages.has_identifiers(message):
        return message
    try:
        return messages.explain(message, messages.default_table())
    except messages.MessageError:
        return message  # sources of another version, or none: the identifiers stand


def _row_major_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _address(arr: np.ndarray) -> int:
    """The address of arr's first element (a few times faster than
    arr.ctypes.data, which matters on run()'s path)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(arr))
    except (TypeError, ValueError):  # read-only or not a plain buffer
        return arr.__array_interface__["data"][0]


def _s(b: bytes | None) -> str | None:
    # Names come from program files; never let a stray byte raise here.
    return None if b is None else b.decode(errors="replace")


# Caps an x86_64_auto runtime's kernels (Runtime.set_max_isa) when set.
MAX_ISA_ENV = "PARE_MAX_ISA"

# CPU features (Linux /proc/cpuinfo flag names) each ISA level needs.
ISA_CPU_FEATURES = {"x86_64_v3": ("avx", "avx2", "fma", "bmi1", "bmi2", "f16c", "movbe", "abm")}


def host_cpu_flags() -> frozenset[str] | None:
    """This CPU's feature flags from /proc/cpuinfo, or None where it is not readable."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def _missing_cpu_features(isa: str) -> list[str]:
    needed = ISA_CPU_FEATURES.get(isa, ())
    flags = host_cpu_flags() if needed else None
    return [] if flags is None else [f for f in needed if f not in flags]


def cpu_runs(isa: str) -> bool:
    """Whether this CPU runs code built for `isa` ("x86_64_v3", ...): the one
    test the loader, the test suite and the benchmarks share."""
    return not _missing_cpu_features(isa) and (host_cpu_flags() is not None or isa not in ISA_CPU_FEATURES)


class Runtime:
    """A loaded runtime library (one build: full, selective or tracing)."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        try:
            self._lib = ctypes.CDLL(self.path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        except OSError as e:
            raise PareError(f"cannot load runtime library {self.path}: {e}", -1, "FileError") from None
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(self._lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        missing = _missing_cpu_features(self.isa)
        if missing:
            raise PareError(
                f"{self.path} was built for {self.isa} (--//runtime:x86_64_isa=v3) but this CPU lacks "
                f"{', '.join(missing)}; build the runtime with --//runtime:x86_64_isa=auto (the default)",
                -1,
                "NotImplemented",
            )
        cap = os.environ.get(MAX_ISA_ENV)
        if cap:
            self.set_max_isa(cap)

    @property
    def version(self) -> str:
        """The runtime library's version string (pare_version)."""
        return _s(self._lib.pare_version())

    @property
    def format_version(self) -> int:
        """The major program-format version this runtime loads (docs/program_format.md)."""
        return self._lib.pare_format_version_major()

    @property
    def is_tracing_build(self) -> bool:
        """Whether this is the instrumentation runtime, which records what a program uses (Program.trace)."""
        return bool(self._lib.pare_is_tracing_build())

    @property
    def isa(self) -> str:
        """What the build was compiled for: x86_64_auto, x86_64_baseline, x86_64_v3 or arm64_neon (whose
        int8 GEMM also runs SDOT where the CPU has it: kernel_isa arm64_dotprod)."""
        return _s(self._lib.pare_isa())

    @property
    def kernel_isa(self) -> str:
        """What the kernels run now: x86_64_v4, x86_64_v3 or x86_64_baseline for an x86_64_auto build
        (the best this CPU has, at most set_max_isa's cap), arm64_dotprod or arm64_neon on arm64
        (likewise), the build's own otherwise."""
        return _s(self._lib.pare_kernel_isa())

    def set_max_isa(self, isa: str) -> None:
        """Caps what an x86_64_auto build's kernels run at `isa` (x86_64_baseline, x86_64_v3 or
        x86_64_v4; arm64_neon or arm64_dotprod on arm64), for
        the same results on every CPU or the SSE2 kernels on an AVX2 one; process-wide, like oneDNN's
        dnnl_set_max_cpu_isa. $PARE_MAX_ISA does this when a Runtime is created."""
        status = self._lib.pare_set_max_isa(isa.encode())
        if status == 0:
            return
        name = self.status_name(status)
        if name == "NotImplemented":
            why = f"{self.path} is built for {self.isa} and has no kernels below it"
            fix = "use a runtime built at --//runtime:x86_64_isa=auto or baseline"
        else:
            why = f"{isa!r} is not an instruction set of this {self.isa} runtime"
            fix = "use x86_64_baseline, x86_64_v3 or x86_64_v4 on x86_64, arm64_neon or arm64_dotprod on arm64"
        raise PareError(f"cannot cap the kernels' ISA at {isa!r}: {why}; {fix}", status, name)

    def status_name(self, status: int) -> str:
        """The name of a pare_status code: status_name(0x14) == "UnsupportedDtype"."""
        return _s(self._lib.pare_status_name(status))

    def _error(self, status: int, message: str | None) -> PareError:
        return PareError(message or self.status_name(status), status, self.status_name(status))

    def inventory(self) -> Inventory:
        """What this build contains: operators, (kernel tag, dtype) pairs, classes and build features.

        A selective runtime lists only what its manifest selected:

            Runtime("bazel-bin/apps/demo/runtime/linux_x86_64/libpare_runtime.so").inventory().ops
        """
        lib = self._lib
        ops = tuple(_s(lib.pare_op_name(i)) for i in range(lib.pare_op_count()))
        kernel_dtypes: dict[str, list[str]] = {}
        tag, dtype = ctypes.c_char_p(), ctypes.c_char_p()
        for i in range(lib.pare_kernel_dtype_count()):
            lib.pare_kernel_dtype(i, ctypes.byref(tag), ctypes.byref(dtype))
            kernel_dtypes.setdefault(_s(tag.value), []).append(_s(dtype.value))
        classes = tuple(_s(lib.pare_class_name(i)) for i in range(lib.pare_class_count()))
        features = tuple(_s(lib.pare_feature_name(i)) for i in range(lib.pare_feature_count()))
        return Inventory(ops, {k: tuple(v) for k, v in kernel_dtypes.items()}, classes, features)

    def load(self, data: bytes, *, borrow: bool = False) -> "Program":
        """Loads program bytes. By default the runtime copies them; with
        borrow=True they are placed in a 64-byte aligned buffer the Program
        keeps alive and the runtime uses in place (as with an mmap'd file)."""
        handle = ctypes.c_void_p()
        if borrow:
            storage = np.empty(len(data) + 64, dtype=np.uint8)
            start = -storage.ctypes.data % 64
            buf = storage[start : start + len(data)]
            buf[:] = np.frombuffer(data, dtype=np.uint8)
            status = self._lib.pare_program_load(buf.ctypes.data, len(data), 0, ctypes.byref(handle))
            return self._finish_load(status, handle, keep_alive=storage)
        buf = ctypes.create_string_buffer(bytes(data), len(data)) if data else None
        status = self._lib.pare_program_load(buf, len(data), 1, ctypes.byref(handle))
        return self._finish_load(status, handle)

    def load_file(self, path: str | os.PathLike) -> "Program":
        """Loads a program file; the runtime reads it, Python never holds the bytes.

        Raises PareError: FileError when the file cannot be read, InvalidProgram
        when its bytes are not a valid program, OperatorNotSelected or
        ClassNotSelected when the program needs what this build left out (the
        message names it and the fix).
        """
        handle = ctypes.c_void_p()
        status = self._lib.pare_program_load_file(os.fsencode(path), ctypes.byref(handle))
        return self._finish_load(status, handle)

    def _finish_load(self, status: int, handle: ctypes.c_void_p, keep_alive=None) -> "Program":
        if status != 0:
            message = _s(self._lib.pare_program_error_message(handle))
            self._lib.pare_program_destroy(handle)
            raise self._error(status, message)
        return Program(self, handle, keep_alive)


class _Owner:
    """Owns one runtime object (a program or a method instance): close() frees it, or collection does."""

    _DESTROY = ""  # the C API function that frees the handle

    def __del__(self):
        self.close()

    def close(self) -> None:
        """Frees the runtime object now rather than when collected; idempotent. A program lives on until
        the methods created from it close; closing a method frees its arena and threads."""
        if getattr(self, "_handle", None):
            getattr(self._lib, self._DESTROY)(self._handle)
            self._handle = None


class Program(_Owner):
    _DESTROY = "pare_program_destroy"

    def __init__(self, runtime: Runtime, handle: ctypes.c_void_p, keep_alive=None):
        self.runtime = runtime
        self._lib = runtime._lib
        self._handle = handle
        self._borrowed = keep_alive  # bytes the runtime reads in place

    @property
    def constants_in_place(self) -> bool:
        """Whether the program's constants (weights) are used in place from the loaded bytes rather than copied."""
        return bool(self._lib.pare_program_constants_in_place(self._handle))

    @property
    def method_names(self) -> list[str]:
        """The program's method names, e.g. ["forward"]."""
        n = self._lib.pare_program_method_count(self._handle)
        return [_s(self._lib.pare_program_method_name(self._handle, i)) for i in range(n)]

    def method(self, name: str = "forward", *, share_state_with: "Method | None" = None) -> "Method":
        """A new instance of method `name`: its own arena and inputs, the program's weights shared.

        Instances of one program may run concurrently on different threads.
        Raises PareError (InvalidArgument) for a name the program lacks.
        `share_state_with`: an instance of a method of this program whose
        states this one uses wherever their names match (a prefill and a
        decode method over one KV cache; build feature state); the new
        instance keeps it alive.
        """
        handle = ctypes.c_void_p()
        if share_state_with is None:
            status = self._lib.pare_method_create(self._handle, name.encode(), ctypes.byref(handle))
        else:
            status = self._lib.pare_method_create_sharing_state(
                self._handle, name.encode(), share_state_with._handle, ctypes.byref(handle)
            )
        if status != 0:
            message = _s(self._lib.pare_method_error_message(handle)) if handle else None
            if handle:
                self._lib.pare_method_destroy(handle)
            raise self.runtime._error(status, message)
        method = Method(self, handle)
        method._shares_state_of = share_state_with  # destroyed after this instance
        return method

    def trace(self) -> Trace:
        """What the instrumentation runtime recorded since loading (or reset_trace): ops, kernel dtypes, classes, features."""
        lib, h = self._lib, self._handle
        ops = {}
        name, flags = ctypes.c_char_p(), ctypes.c_int32()
        for i in range(lib.pare_trace_op_count(h)):
            lib.pare_trace_op(h, i, ctypes.byref(name), ctypes.byref(flags))
            ops[_s(name.value)] = OpUse(bool(flags.value & 1), bool(flags.value & 2))
        kernel_dtypes: dict[str, list[str]] = {}
        tag, dtype = ctypes.c_char_p(), ctypes.c_char_p()
        for i in range(lib.pare_trace_kernel_dtype_count(h)):
            lib.pare_trace_kernel_dtype(h, i, ctypes.byref(tag), ctypes.byref(dtype))
            kernel_dtypes.setdefault(_s(tag.value), []).append(_s(dtype.value))
        classes = tuple(_s(lib.pare_trace_class(h, i)) for i in range(lib.pare_trace_class_count(h)))
        features = tuple(_s(lib.pare_trace_feature(h, i)) for i in range(lib.pare_trace_feature_count(h)))
        return Trace(ops, {k: tuple(v) for k, v in kernel_dtypes.items()}, classes, features)

    def reset_trace(self) -> None:
        """Forgets what trace() has recorded so far."""
        self._lib.pare_trace_reset(self._handle)


class Method(_Owner):
    _DESTROY = "pare_method_destroy"

    # run(), set_input() and output() are on the hot path of every Python
    # caller: what never changes (input and output counts, declared input
    # dtypes, the C functions, the ctypes argument buffers) is looked up once
    # here, so run() adds a few µs over execute() (python -m
    # tools.bench.run_overhead measures it).
    def __init__(self, program: Program, handle: ctypes.c_void_p):
        self.program = program  # keeps the program alive longer than the method
        lib = self._lib = program._lib
        self._handle = handle
        self._inputs: dict[int, np.ndarray] = {}  # borrowed by the runtime
        self._output_buffers: dict[int, np.ndarray] = {}  # bound by set_output_buffer, written by the runtime
        self._output_dtypes: list[str | None] = []
        self._num_inputs = lib.pare_method_input_count(handle)
        self._num_outputs = lib.pare_method_output_count(handle)
        self._declared = [self.input_info(i).dtype for i in range(self._num_inputs)]
        self._c_set_input = lib.pare_method_set_input
        self._c_execute = lib.pare_method_execute
        self._c_output_kind = lib.pare_method_output_kind
        self._c_output_tensor = lib.pare_method_output_tensor
        self._shape_buffers = [
            ((ctypes.c_int64 * MAX_DIM)(), (ctypes.c_int64 * MAX_DIM)()) for _ in range(self._num_inputs)
        ]
        # Per input, (numpy dtype, shape, byte strides, extent) of the last
        # array set_input() described into _shape_buffers: an array laid out
        # the same way (every call of a steady-state loop) reuses them.
        self._input_layouts: list[tuple | None] = [None] * self._num_inputs
        self._kind = ctypes.c_int32()
        self._kind_ref = ctypes.byref(self._kind)
        self._info = _TensorInfo()
        self._info_ref = ctypes.byref(self._info)
        self._out_views: dict[int, tuple[tuple, np.ndarray]] = {}  # output() reuses a view while its memory is the same

    def _check(self, status: int) -> None:
        if status != 0:
            raise self.program.runtime._error(status, _s(self._lib.pare_method_error_message(self._handle)))

    @property
    def num_inputs(self) -> int:
        """How many inputs run() takes."""
        return self._num_inputs

    @property
    def num_outputs(self) -> int:
        """How many outputs run() returns."""
        return self._num_outputs

    def input_info(self, index: int) -> InputInfo:
        """Input `index`'s declared dtype and shape (None for what the program leaves open, e.g. a dynamic batch).

        Raises PareError (IndexOutOfRange) for an index past num_inputs.
        """
        info = _TensorInfo()
        self._check(self._lib.pare_method_input_info(self._handle, index, ctypes.byref(info)))
        dtype = None if info.dtype < 0 else _s(self._lib.pare_dtype_name(info.dtype))
        shape = None if info.ndim < 0 else tuple(None if s < 0 else s for s in info.sizes[: info.ndim])
        return InputInfo(dtype, shape)

    def set_input(self, index: int, array, dtype=None) -> None:
        """Sets input `index` from a numpy array (kept referenced until the
        next set_input of that index). `dtype` overrides the array's dtype:
        for BFloat16 pass float32 values (rounded here) or uint16 bits."""
        arr = np.asarray(array)
        if dtype is None:
            declared = self._declared[index] if 0 <= index < self._num_inputs else None
            dt = _dtypes.BFloat16 if declared == "BFloat16" and arr.dtype != np.float16 else _dtypes.get(arr.dtype)
        else:
            dt = _dtypes.get(dtype)
        if dt is _dtypes.BFloat16:
            arr = arr.view(np.uint16) if arr.dtype == np.uint16 else _dtypes.float32_to_bfloat16_bits(arr)
        elif arr.dtype != dt.numpy:
            raise _sdk_error(
                f"input {index}: array dtype {arr.dtype} does not match dtype {dt.name}", "InvalidArgument"
            )
        layout = self._input_layouts[index] if 0 <= index < self._num_inputs else None
        if layout is not None and layout[0] == arr.dtype and layout[1] == arr.shape and layout[2] == arr.strides:
            sizes, strides = self._shape_buffers[index]  # already describe arr
            self._set_described(index, arr, dt, sizes, strides, layout[3])
            return
        itemsize = arr.dtype.itemsize
        if arr.ndim > MAX_DIM:
            raise _sdk_error(f"input {index}: rank {arr.ndim} exceeds {MAX_DIM}", "LimitExceeded")
        byte_strides = arr.strides
        if any(s < 0 or s % itemsize for s in byte_strides):
            if not arr.flags.c_contiguous:
                arr = np.ascontiguousarray(arr)  # negative or unaligned strides: copy
            # numpy calls an array with a negative stride in a size-0 or -1 dim
            # contiguous (no copy): its row-major strides describe it as well.
            byte_strides = _row_major_strides(arr.shape, itemsize)
        if 0 <= index < self._num_inputs:
            sizes, strides = self._shape_buffers[index]
            self._input_layouts[index] = None  # the buffers change now; valid again once the runtime accepts them
        else:  # the runtime reports the bad index
            sizes, strides = (ctypes.c_int64 * MAX_DIM)(), (ctypes.c_int64 * MAX_DIM)()
        shape = arr.shape
        extent = itemsize if arr.size else 0
        for k in range(arr.ndim):
            sizes[k] = shape[k]
            strides[k] = byte_strides[k] // itemsize
            extent += (shape[k] - 1) * byte_strides[k] if arr.size else 0
        self._set_described(index, arr, dt, sizes, strides, extent)
        if 0 <= index < self._num_inputs:  # described and accepted: reusable
            self._input_layouts[index] = (arr.dtype, arr.shape, arr.strides, extent)

    def _set_described(self, index: int, arr: np.ndarray, dt, sizes, strides, extent: int) -> None:
        """Hands arr, described by sizes/strides (elements) and extent
        (bytes), to the runtime; raises its error."""
        self._inputs[index] = arr
        data = _address(arr) if arr.size else None
        self._check(self._c_set_input(self._handle, index, dt.code, sizes, arr.ndim, strides, data, extent))

    def execute(self) -> None:
        """Runs the method on the inputs set (set_input); the outputs are then read with output().

        Raises PareError naming the failing operator (e.g. InvalidShape,
        DtypeNotSelected) when a kernel rejects its inputs.
        """
        status = self._c_execute(self._handle)
        if status:
            self._check(status)

    def output(self, index: int) -> Any:
        """Output `index` of the last execute(): a numpy array (a copy;
        BFloat16 comes back as float32; an output bound by
        set_output_buffer() comes back as a view of that buffer, not a
        copy), or a Python int/float/bool."""
        info = self._info
        if self._c_output_tensor(self._handle, index, self._info_ref) != 0:
            return self._scalar_output(index)  # not a tensor (or a bad index: reported there)
        bound = self._output_buffers.get(index)
        if bound is not None and info.dtype != _dtypes.BFloat16.code and info.data == bound.ctypes.data:
            dt = _dtypes.BY_CODE[info.dtype]
            shape = tuple(info.sizes[: info.ndim])
            return bound.reshape(-1).view(np.uint8)[: dt.itemsize * math.prod(shape)].view(dt.numpy).reshape(shape)
        key = (info.data, info.dtype, info.ndim, bytes(info.sizes), bytes(info.strides))
        cached = self._out_views.get(index)
        if cached is not None and cached[0] == key:
            view = cached[1]  # the same memory, dtype, shape and strides as last time
        else:
            view = self._output_view(info)
            self._out_views[index] = (key, view)
        out = view.copy()
        if info.dtype == _dtypes.BFloat16.code:
            out = _dtypes.bfloat16_bits_to_float32(out).reshape(view.shape)
        return out

    def _output_view(self, info: _TensorInfo) -> np.ndarray:
        """A numpy view of a tensor output's memory (storage dtype: uint16
        for BFloat16), valid while the runtime keeps that memory."""
        dt = _dtypes.BY_CODE[info.dtype]
        storage = dt.numpy if dt.numpy is not None else np.dtype(np.uint16)
        shape = tuple(info.sizes[: info.ndim])
        if info.data is None or 0 in shape:
            return np.zeros(shape, dtype=storage)
        strides = tuple(s * dt.itemsize for s in info.strides[: info.ndim])
        extent = sum((n - 1) * s for n, s in zip(shape, strides)) + dt.itemsize
        raw = (ctypes.c_char * extent).from_address(info.data)
        base = np.frombuffer(raw, dtype=np.uint8)
        return np.lib.stride_tricks.as_strided(base.view(storage), shape=shape, strides=strides)

    def _scalar_output(self, index: int) -> Any:
        kind = self._kind
        self._check(self._c_output_kind(self._handle, index, self._kind_ref))
        scalar = _SCALAR_OUTPUTS.get(kind.value)
        if scalar is not None:
            function, ctype, convert = scalar
            v = ctype()
            self._check(getattr(self._lib, function)(self._handle, index, ctypes.byref(v)))
            return convert(v.value)
        if kind.value != _format.TENSOR:
            names = _format.KIND_NAMES
            what = names[kind.value] if 0 <= kind.value < len(names) else "?"
            raise _sdk_error(
                f"output {index} is a {what} value; only tensors and scalars can be read", "InvalidArgument"
            )
        self._check(self._c_output_tensor(self._handle, index, self._info_ref))  # a tensor that failed: why
        raise _sdk_error(f"output {index}: the runtime gave no tensor", "Internal")

    def output_dtype(self, index: int) -> str | None:
        """Output `index`'s dtype name after the last execute(), or None when it is not a tensor."""
        info = _TensorInfo()
        status = self._lib.pare_method_output_tensor(self._handle, index, ctypes.byref(info))
        return _s(self._lib.pare_dtype_name(info.dtype)) if status == 0 else None

    def run(self, *inputs) -> list:
        """Sets every input (numpy arrays, or (array, dtype) pairs), executes,
        and returns every output (see output())."""
        if len(inputs) != self._num_inputs:
            raise _sdk_error(f"method takes {self._num_inputs} inputs, got {len(inputs)}", "InvalidArgument")
        for i, x in enumerate(inputs):
            if isinstance(x, tuple):
                self.set_input(i, x[0], dtype=x[1])
            else:
                self.set_input(i, x)
        self.execute()
        return [self.output(i) for i in range(self._num_outputs)]

    def memory_stats(self) -> MemoryStats:
        """The method's arena and persistent bytes, its plans, and what the last run allocated outside the arena."""
        s = _MemoryStats()
        self._check(self._lib.pare_method_memory_stats(self._handle, ctypes.byref(s)))
        return MemoryStats(
            s.arena_bytes,
            s.planned_arena_bytes,
            s.persistent_bytes,
            s.num_plans,
            s.temporary_blocks,
            s.first_fit_arena_bytes,
            s.greedy_arena_bytes,
        )

    def set_output_buffer(self, index: int, buffer: np.ndarray | None) -> None:
        """Has every later execute() leave output `index` in `buffer` (a
        writeable, C-contiguous numpy array of at least the output's bytes,
        any dtype; None unbinds), written in place by the kernel that
        produces it where it can be: a steady-state call then allocates
        nothing and copies nothing. The method keeps a reference to the
        array while it is bound. Raises PareError when execute() produces
        more bytes than the buffer holds, and FeatureNotSelected when the
        runtime's manifest does not select build feature output_buffers."""
        if buffer is None:
            self._check(self._lib.pare_method_set_output_buffer(self._handle, index, None, 0))
            self._output_buffers.pop(index, None)
            return
        if not isinstance(buffer, np.ndarray) or not buffer.flags.c_contiguous or not buffer.flags.writeable:
            raise ValueError("an output buffer must be a writeable, C-contiguous numpy array")
        self._check(self._lib.pare_method_set_output_buffer(self._handle, index, buffer.ctypes.data, buffer.nbytes))
        self._output_buffers[index] = buffer

    @property
    def state_names(self) -> list[str]:
        """The buffers this method keeps between calls (a program with state,
        e.g. a KV cache); [] for one without, or a runtime without build
        feature state."""
        names = []
        while (name := self._lib.pare_method_state_name(self._handle, len(names))) is not None:
            names.append(name.decode())
        return names

    def reset_state(self) -> None:
        """Restores every state's initial value (e.g. before a new prompt).
        Raises PareError FeatureNotSelected unless the runtime's manifest
        selects build feature state."""
        self._check(self._lib.pare_method_reset_state(self._handle))

    def state(self, name: str) -> np.ndarray:
        """A copy of state `name`'s current content (BFloat16 as float32).
        Raises PareError for an unknown name, FeatureNotSelected without
        build feature state."""
        info = _TensorInfo()
        self._check(self._lib.pare_method_state_tensor(self._handle, name.encode(), ctypes.byref(info)))
        out = self._output_view(info).copy()
        if info.dtype == _dtypes.BFloat16.code:
            out = _dtypes.bfloat16_bits_to_float32(out).reshape(out.shape)
        return out

    def set_state(self, name: str, array) -> None:
        """Overwrites state `name` with `array` (its dtype and shape; BFloat16
        from float32 values or uint16 bits)."""
        info = _TensorInfo()
        self._check(self._lib.pare_method_state_tensor(self._handle, name.encode(), ctypes.byref(info)))
        arr = np.asarray(array)
        if info.dtype == _dtypes.BFloat16.code:
            arr = arr.view(np.uint16) if arr.dtype == np.uint16 else _dtypes.float32_to_bfloat16_bits(arr)
            code = info.dtype
        else:
            code = _dtypes.get(arr.dtype).code  # a dtype other than the state's: the runtime says which it needs
        arr = np.ascontiguousarray(arr)
        sizes = (ctypes.c_int64 * MAX_DIM)(*arr.shape) if arr.ndim <= MAX_DIM else None
        if sizes is None:
            raise _sdk_error(f"state {name!r}: rank {arr.ndim} exceeds {MAX_DIM}", "LimitExceeded")
        data = _address(arr) if arr.size else None
        self._check(
            self._lib.pare_method_set_state(self._handle, name.encode(), code, sizes, arr.ndim, data, arr.nbytes)
        )

    def set_num_threads(self, threads: int) -> None:
        """Runs this method's kernels on `threads` threads (1 to 64; the
        calling thread plus workers the method owns). Outputs are bitwise
        identical for every count. More than 1 raises PareError
        FeatureNotSelected unless the runtime's manifest selects build
        feature threads."""
        if not isinstance(threads, int) or isinstance(threads, bool) or not 1 <= threads <= 64:
            raise ValueError(f"threads must be an int in [1, 64], got {threads!r}")
        self._check(self._lib.pare_method_set_num_threads(self._handle, threads))

    @property
    def num_threads(self) -> int:
        """The threads the method's kernels run on (1 unless set_num_threads raised it)."""
        return self._lib.pare_method_num_threads(self._handle)

    def set_planner(self, planner: str) -> None:
        """How the arena is laid out when the method plans (its first run,
        new input shapes): "smaller" (the default: the smaller of the two
        layouts), "first_fit" or "greedy_by_size". The next run re-plans.
        Raises ValueError for another name."""
        if planner not in PLANNERS:
            raise ValueError(f"unknown planner {planner!r}: use one of {', '.join(PLANNERS)}")
        self._check(self._lib.pare_method_set_planner(self._handle, PLANNERS.index(planner)))

    def set_profiling(self, enabled: bool = True) -> None:
        """Starts (or stops) counting calls and time per instruction; read them with profile().

        Raises PareError (FeatureNotSelected) when the build lacks op_profiling.
        """
        self._check(self._lib.pare_method_set_profiling(self._handle, int(enabled)))

    def profile(self) -> list[ProfileEntry]:
        """Per instruction since profiling was enabled: its operator, calls and seconds."""
        ticks_per_second = self._lib.pare_ticks_per_second() or 1
        entries = []
        name, calls, ticks = ctypes.c_char_p(), ctypes.c_uint64(), ctypes.c_uint64()
        for i in range(self._lib.pare_method_instruction_count(self._handle)):
            if (
                self._lib.pare_method_profile(
                    self._handle, i, ctypes.byref(name), ctypes.byref(calls), ctypes.byref(ticks)
                )
                == 0
            ):
                entries.append(ProfileEntry(i, _s(name.value), calls.value, ticks.value / ticks_per_second))
        return entries
