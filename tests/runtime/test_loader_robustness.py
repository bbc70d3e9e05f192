"""Any byte string either loads or fails with a clean error: truncations at
every length, every single-bit flip, structured field corruption, and
seeded random bytes. All in this process, so a crash fails the run. When a
corrupted program still loads, its methods are created and executed too:
kernels must reject odd arguments with errors as well."""

import random
import struct

import numpy as np
import pytest

from pare.program import ProgramBuilder
from pare.runtime import PareError

HEADER = struct.Struct("<4sHHIIQQQQQQ")


def rich_program() -> bytes:
    """A small program using every value kind, two methods and an init section."""
    pb = ProgramBuilder()
    m = pb.method("forward")
    x = m.input("Float", [None, 4])
    s0 = m.op("aten::sym_size.int", x, 0, returns="int")
    packed = m.linear_prepack(np.arange(12, dtype=np.float32).reshape(3, 4), np.ones(3, np.float32))
    y = m.op("pare::linear_prepacked", x, packed)
    z = m.op("aten::add.Tensor", y, np.float32(0.5) * np.ones((3,), np.float32), 2)
    v = m.op("aten::view", m.op("aten::relu", z), [s0, 3])
    w = m.op("aten::_to_copy", v, m.constant(None), None, "cpu")
    sm = m.op("aten::_softmax", w, -1, False)
    m.constant([1.5, 2.5])  # a float list, a string and a tensor list, unused
    m.constant("hello")
    m.constant([x, y])
    m.output(sm, s0)
    m2 = pb.method("second")
    a = m2.input("Long", [2, 2])
    m2.output(m2.op("aten::mm", a, np.eye(2, dtype=np.int64)), m2.op("aten::mul.Tensor", a, True))
    return pb.to_bytes()


def exercise(runtime, data: bytes) -> None:
    """Load; if that works, create and run every method. Only PareError may
    come out."""
    try:
        program = runtime.load(data)
    except PareError as e:
        assert str(e), "errors always carry a message"
        return
    for name in program.method_names:
        try:
            method = program.method(name)
        except PareError:
            continue
        inputs = []
        for i in range(method.num_inputs):
            info = method.input_info(i)
            shape = [2 if s is None else min(s, 64) for s in (info.shape or [2])]
            dtype = np.float32 if info.dtype in (None, "Float") else np.int64 if info.dtype == "Long" else None
            if dtype is None or sum(shape) > 256:
                inputs = None
                break
            inputs.append(np.ones(shape, dtype))
        if inputs is None:
            continue
        try:
            method.run(*inputs)
        except PareError:
            pass


@pytest.fixture(scope="module")
def valid():
    return rich_program()


def test_rich_program_is_valid(runtime, valid):
    method = runtime.load(valid).method("forward")
    out, s0 = method.run(np.ones((3, 4), np.float32))
    assert s0 == 3 and out.shape == (3, 3)
    assert runtime.load(valid).method("second").run(np.ones((2, 2), np.int64))[0].tolist() == [[1, 1], [1, 1]]


def test_every_truncation_fails_cleanly(runtime, valid):
    for n in range(len(valid)):
        with pytest.raises(PareError):
            runtime.load(valid[:n])


def test_truncations_with_consistent_header_fail_cleanly(runtime, valid):
    # Patch file_size so the loader gets past the header and must catch the
    # missing bytes in every table.
    for n in range(HEADER.size, len(valid)):
        data = bytearray(valid[:n])
        struct.pack_into("<Q", data, 16, n)
        with pytest.raises(PareError):
            runtime.load(bytes(data))


def test_every_bit_flip_is_safe(runtime, valid):
    header_and_tables = len(valid)
    rejected = 0
    for pos in range(header_and_tables):
        for bit in range(8):
            data = bytearray(valid)
            data[pos] ^= 1 << bit
            try:
                runtime.load(bytes(data))
            except PareError:
                rejected += 1
                continue
            exercise(runtime, bytes(data))
    # Most flips hit structure the loader validates (the rest: payloads).
    assert rejected > len(valid) * 8 // 2


INTERESTING = [0, 1, 7, 8, 63, 64, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]


def test_structured_field_corruption(runtime, valid):
    rng = random.Random(1234)
    for pos in range(0, len(valid) - 8, 4):
        for value in rng.sample(INTERESTING, 4):
            data = bytearray(valid)
            struct.pack_into("<I", data, pos, value)
            exercise(runtime, bytes(data))
        data = bytearray(valid)
        struct.pack_into("<Q", data, pos, rng.choice([2**63 - 1, 2**64 - 1, 2**32, len(valid) * 4]))
        exercise(runtime, bytes(data))


def test_random_bytes(runtime, valid):
    rng = random.Random(20240611)
    for i in range(3000):
        n = rng.randrange(0, 600)
        body = bytes(rng.getrandbits(8) for _ in range(n))
        if i % 2:
            # A plausible header (magic, version, sizes) to get past the first checks.
            header = HEADER.pack(b"PARE", 1, 0, 64, 0, 64 + n, *(rng.randrange(0, 64 + n) for _ in range(5)))
            body = header + body
        with pytest.raises(PareError):
            runtime.load(body)


def test_random_splices_of_a_valid_program(runtime, valid):
    rng = random.Random(99)
    for _ in range(1500):
        data = bytearray(valid)
        for _ in range(rng.randrange(1, 6)):
            pos = rng.randrange(HEADER.size, len(data))
            length = rng.randrange(1, 16)
            data[pos : pos + length] = bytes(rng.getrandbits(8) for _ in range(min(length, len(data) - pos)))
        exercise(runtime, bytes(data))


def test_clean_errors_for_header_problems(runtime, valid):
    with pytest.raises(PareError, match="not a Pare program"):
        runtime.load(b"XXXX" + valid[4:])
    future = bytearray(valid)
    struct.pack_into("<H", future, 4, 2)
    with pytest.raises(PareError, match=r"unsupported program format version 2.0: this runtime reads version 1.x"):
        runtime.load(bytes(future))
    with pytest.raises(PareError, match="64-byte header"):
        runtime.load(b"")
    # Trailing bytes beyond file_size (e.g. page padding) are ignored.
    runtime.load(valid + b"\0" * 100).method("forward")


def test_hostile_sharing_cannot_blow_up_decoding(runtime, valid):
    # Point many method-table entries at one method record: decoding would be
    # quadratic; the loader must refuse instead.
    magic, major, minor, hsize, flags, fsize, s_off, o_off, m_off, d_off, d_size = HEADER.unpack_from(valid)
    count, _ = struct.unpack_from("<II", valid, m_off)
    first = struct.unpack_from("<Q", valid, m_off + 8)[0]
    n = 4000
    table = struct.pack("<II", n, 0) + struct.pack(f"<{n}Q", *[first] * n)
    data = bytearray(valid) + table
    struct.pack_into("<Q", data, 16, len(data))
    struct.pack_into("<Q", data, 40, len(valid))
    with pytest.raises(PareError, match="overlap|two methods"):
        runtime.load(bytes(data))
