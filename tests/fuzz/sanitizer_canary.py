"""Planted bugs that prove `make sanitize` is wired (tools/sanitize.sh runs
them first and requires each to END THE PROCESS with a sanitizer report).

Not a test module (no test_ prefix), so a normal pytest run never collects
it: both tests misuse the C API on purpose, which a correct runtime cannot
detect, so under a sanitized runtime they die and elsewhere they would read
out of bounds silently.
"""

from __future__ import annotations

import ctypes

from pare.program import ProgramBuilder

FLOAT = 6  # pare_dtype Float
N = 64


def _relu_method(runtime):
    pb = ProgramBuilder()
    m = pb.method("forward")
    m.output(m.op("aten::relu", m.input("Float", [None])))
    return runtime.load(pb.to_bytes()).method()


def _set_input(method, data, nbytes):
    sizes = (ctypes.c_int64 * 1)(N)
    status = method._lib.pare_method_set_input(method._handle, 0, FLOAT, sizes, 1, None, data, nbytes)
    assert status == 0


_libc = ctypes.CDLL(None)
_libc.malloc.restype = ctypes.c_void_p
_libc.malloc.argtypes = [ctypes.c_size_t]


def test_canary_asan_heap_overflow(runtime):
    # The caller claims N floats but allocated 4: the kernel reads past the
    # heap block, inside the runtime's instrumented code.
    method = _relu_method(runtime)
    data = _libc.malloc(4 * 4)
    _set_input(method, data, N * 4)
    method._check(method._lib.pare_method_execute(method._handle))


def test_canary_ubsan_misaligned_load(runtime):
    # A float input one byte off its alignment: the kernel's float loads are
    # undefined behaviour that UBSan (-fsanitize=alignment) reports.
    method = _relu_method(runtime)
    data = _libc.malloc(N * 4 + 8) + 1
    _set_input(method, data, N * 4)
    method._check(method._lib.pare_method_execute(method._handle))
