"""Each crash fuzz/loader_fuzzer.cc found, replayed through the normal
runtime with the exact clean error it must now give (test_fuzz_replay.py
also runs every file in fuzz/regressions/ generically)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pare.runtime import PareError

REGRESSIONS = Path(__file__).absolute().parents[2] / "fuzz" / "regressions" / "loader"


def _run(runtime, name: str):
    return runtime.load((REGRESSIONS / name).read_bytes()).method("forward").run()


def test_empty_tensor_with_huge_dims_is_an_invalid_shape(runtime):
    # aten::empty.memory_format([38654705667, 0, 144115188075855874]): no
    # elements, but its contiguous strides overflowed int64 (UBSan: signed
    # overflow in contiguous_strides). Now checked_numel refuses the shape.
    with pytest.raises(PareError, match=r"argument 'size' \[38654705667, 0, 144115188075855874\] overflows"):
        _run(runtime, "empty_with_huge_dims.pare")


def test_petabyte_empty_tensor_is_out_of_memory(runtime):
    # aten::empty.memory_format([3, 9895604649984, 254]): a valid shape of
    # 7.5 PB. Not a runtime bug (the allocator says no and the runtime
    # reports it); the fuzzer's ASan now fails such allocations the same way
    # (tools/fuzz.sh: allocator_may_return_null, max_allocation_size_mb).
    with pytest.raises(PareError, match=r"out of memory allocating \d+ bytes"):
        _run(runtime, "empty_of_7_5_petabytes.pare")


def test_constant_output_bound_to_a_buffer_stays_the_constant(runtime):
    # forward(x) -> (c, c + x) with c a constant, output 0 bound to a
    # caller's buffer, rebound (the old buffer freed) before the next run:
    # found by the control block of fuzz/loader_fuzzer.cc as a use after
    # free. Method::finish_output_buffers pointed c's value slot at the
    # buffer, so every later run read the caller's memory for the constant
    # (c + x too). The output now describes the buffer without touching the
    # slot.
    method = runtime.load((REGRESSIONS / "constant_output_rebound.pare").read_bytes()).method("forward")
    x = np.zeros(4, np.float32)
    first = np.zeros(4, np.float32)
    method.set_output_buffer(0, first)
    c, y = method.run(x)
    assert np.shares_memory(c, first)
    np.testing.assert_array_equal(c, [1, 2, 3, 4])
    first[:] = 100  # the caller's memory again once the run is over
    second = np.zeros(4, np.float32)
    method.set_output_buffer(0, second)
    c, y = method.run(x)
    np.testing.assert_array_equal(second, [1, 2, 3, 4])
    np.testing.assert_array_equal(y, [1, 2, 3, 4])
    method.set_output_buffer(0, None)
    c, y = method.run(x)
    np.testing.assert_array_equal(c, [1, 2, 3, 4])
    np.testing.assert_array_equal(y, [1, 2, 3, 4])
