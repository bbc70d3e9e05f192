"""Runtimes without error messages (docs/errors.md): the same codes, and
identifiers that expand to the same messages.

The same selection is built twice, with messages (the default) and with
PARE_ENABLE_ERROR_MESSAGES=0 (what selective_runtime(error_messages = False)
compiles), and every failure below is provoked on both: the loader's
checks, selection errors, a kernel's argument checks (with the op prefix and
the interpreter's appended context), a real-valued argument, the C API's
input checks. The message-less runtime must fail with the same status and
say only identifiers, and pare.messages.explain must turn them back into
the other runtime's message byte for byte."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import runtime_build

from pare import messages
from pare.program import ProgramBuilder
from pare.runtime import PareError, Runtime

OPS = ["aten::mul.Tensor", "aten::add.Tensor", "aten::add.Scalar"]
DTYPES = {"mul_kernel": ["Float"], "add_kernel": ["Float", "Char"]}
# The message-less build compiles only the kernels these ops need (the
# messages build reuses Bazel's bitcode when it has it).
KERNEL_SOURCES = ["binary_math/*.cc", "common/*.cc"]


@pytest.fixture(scope="module")
def both(selection_cache):
    sel = runtime_build.write_selection(selection_cache / "selection_messages", OPS, DTYPES, [], [])
    with_messages = runtime_build.build(selection_cache, "messages", selection_dir=sel)
    without = runtime_build.build(
        selection_cache,
        "no_messages",
        selection_dir=sel,
        defines=["PARE_ENABLE_ERROR_MESSAGES=0"],
        kernels=KERNEL_SOURCES,
    )
    return Runtime(with_messages), Runtime(without)


def _binary(op, dtype, a_shape, b_shape):
    pb = ProgramBuilder()
    m = pb.method()
    m.output(m.op(op, m.input(dtype, a_shape), m.input(dtype, b_shape)))
    return pb.to_bytes()


def _add_scalar(dtype, value):
    pb = ProgramBuilder()
    m = pb.method()
    m.output(m.op("aten::add.Scalar", m.input(dtype, [2]), value))
    return pb.to_bytes()


def _unary(op):
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [2])
    m.output(m.op(op, x, x))
    return pb.to_bytes()


def _valid():
    return _binary("aten::mul.Tensor", "Float", [2], [2])


CASES = {
    "bad magic": lambda rt: rt.load(b"NOPE" + _valid()[4:]),
    "truncated": lambda rt: rt.load(_valid()[:-9]),
    "table past the end": lambda rt: rt.load(_valid()[:40]),
    "unknown operator": lambda rt: rt.load(_unary("aten::frobnicate.default")),
    "operator not selected": lambda rt: rt.load(_unary("aten::sub.Tensor")),
    "dtype not selected": lambda rt: (
        rt.load(_binary("aten::mul.Tensor", "Double", [2], [2])).method().run(np.ones(2), np.ones(2))
    ),
    "shapes do not broadcast": lambda rt: (
        rt.load(_binary("aten::mul.Tensor", "Float", [None], [None]))
        .method()
        .run(np.ones(2, np.float32), np.ones(3, np.float32))
    ),
    "real scalar out of range": lambda rt: rt.load(_add_scalar("Char", 1e20)).method().run(np.ones(2, np.int8)),
    "wrong input dtype": lambda rt: rt.load(_valid()).method().run(np.ones(2, np.int32), np.ones(2, np.float32)),
}


def _failure(rt, case) -> PareError:
    with pytest.raises(PareError) as e:
        CASES[case](rt)
    return e.value


@pytest.mark.parametrize("case", CASES)
def test_same_code_and_the_identifiers_expand_to_the_same_message(both, case):
    with_messages, without = both
    want, got = _failure(with_messages, case), _failure(without, case)
    assert got.status_name == want.status_name
    assert messages.has_identifiers(got.raw_message), got.raw_message
    assert not messages.has_identifiers(want.raw_message)
    assert messages.explain(got.raw_message, messages.default_table()) == want.raw_message
    # The SDK explains on its own when it has the sources.
    assert str(got) == want.raw_message


def test_the_text_is_not_in_the_binary(both):
    with_messages, without = both
    fmt = next(f for f in _formats() if "is not implemented by this runtime" in f)
    # With messages the format is there packed (message_text.h), not as its plain text.
    data = Path(with_messages.path).read_bytes()
    assert messages.pack(fmt, messages.read_pairs()) + b"\0" in data
    assert b"is not implemented by this runtime" not in data
    data = Path(without.path).read_bytes()
    assert (
        messages.pack(fmt, messages.read_pairs()) not in data and b"invalid program" in data
    )  # text outside the formats stays


def _formats() -> list[str]:
    table = messages.default_table()
    return sorted({s.fmt for group in table.sites.values() for s in group})


def test_every_format_packs_to_fewer_bytes_and_unpacks_to_itself():
    pairs = messages.read_pairs()
    assert len(pairs) == messages.MESSAGE_PAIR_COUNT
    # Each row names plain bytes or earlier rows only, so unpacking ends.
    assert all(a < 0x80 + k and b < 0x80 + k for k, (a, b) in enumerate(pairs))
    formats = _formats()
    packed = [messages.pack(f, pairs) for f in formats]
    assert [messages.unpack(p, pairs) for p in packed] == formats
    assert all(b"\0" not in p and len(p) < 256 for p in packed)
    # The checked-in table still packs today's formats to about half (a table trained on them: 47%).
    assert sum(map(len, packed)) < 0.6 * sum(map(len, formats))


def test_a_format_that_is_not_ascii_is_refused():
    with pytest.raises(messages.MessageError, match="is not ASCII: write it in ASCII"):
        messages.pack("caf\u00e9 %d", messages.read_pairs())


def test_the_pair_table_cli_checks_and_names_a_missing_table(tmp_path, capsys):
    from tools import message_pairs

    assert message_pairs.main(["--check"]) == 0
    assert "formats" in capsys.readouterr().out
    assert message_pairs.main(["--check", "--output", str(tmp_path / "none.inc")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "none.inc: cannot read the message pair table" in err
    out = tmp_path / "pairs.inc"
    assert message_pairs.main(["--output", str(out)]) == 0
    assert messages.read_pairs(out) == messages.train_pairs(_formats())


def test_every_format_in_the_sources_is_read_and_no_two_share_an_identifier():
    table = messages.default_table()
    sites = [s for group in table.sites.values() for s in group]
    assert len(sites) > 400
    assert table.collisions() == []
    # Every format formats, given arguments of the kinds its conversions take.
    samples = {"int": 7, "text": "x", "real": 1.5}
    for s in sites:
        assert messages.format_message(s.fmt, [samples[k] for k in messages.argument_kinds(s.fmt)])


def test_a_format_that_is_not_a_literal_is_refused():
    src = "Error f(KernelContext& ctx, const char* m) {\n  return PARE_FAIL(ctx, Error::Internal, m);\n}\n"
    with pytest.raises(messages.MessageError, match=r"k\.cc:2: PARE_FAIL's format \(argument 3\) is not a string"):
        list(messages.sites_in(src, "k.cc"))
    # The macros' own definitions and comments are not call sites.
    src = "// PARE_FAIL(x)\n#define PARE_X(...) \\\n  PARE_FAIL(s, c, __VA_ARGS__)\n"
    assert list(messages.sites_in(src, "k.cc")) == []


def test_an_unknown_identifier_names_the_fix():
    with pytest.raises(
        messages.MessageError, match=r"identifier 00000001 is not in these runtime sources.*--runtime-dir"
    ):
        messages.explain("aten::mul.Tensor: {#00000001 3}", messages.default_table())


@pytest.mark.parametrize(
    "value,conversion,precision",
    [
        (1e20, "g", -1),
        (0.1, "g", -1),
        (123456.5, "g", -1),
        (1e-5, "g", -1),
        (2.5, "f", 2),
        (-0.0, "g", -1),
        (float("inf"), "g", -1),
        (float("nan"), "e", -1),
        (3.0, "e", 3),
        (9.9999999, "g", 3),
    ],
)
def test_reals_format_as_the_runtime_formats_them(value, conversion, precision):
    # runtime/core/format.cc's append_double is no round-trip printer; the
    # expected strings are what it prints.
    want = {
        (1e20, "g"): "1e+20",
        (0.1, "g"): "0.1",
        (123456.5, "g"): "123457",
        (1e-5, "g"): "1e-05",
        (2.5, "f"): "2.50",
        (-0.0, "g"): "-0",
        (3.0, "e"): "3.000e+00",
        (9.9999999, "g"): "10",
    }
    text = messages.format_double(value, conversion, precision)
    if value != value:
        assert text == "nan"
    elif value == float("inf"):
        assert text == "inf"
    else:
        assert text == want[(value, conversion)]


def test_the_cli_explains_arguments_and_stdin(both, capsys, monkeypatch, tmp_path):
    import io

    from tools.tracer.cli import main

    with_messages, without = both
    got, want = _failure(without, "shapes do not broadcast"), _failure(with_messages, "shapes do not broadcast")
    assert main(["explain", got.raw_message]) == 0
    assert capsys.readouterr().out == want.raw_message + "\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(f"E/pare: {got.raw_message}\nno identifier here\n"))
    assert main(["explain"]) == 0
    assert capsys.readouterr().out == f"E/pare: {want.raw_message}\nno identifier here\n"
    # Errors: one line each, naming the fix.
    assert main(["explain", "--runtime-dir", str(tmp_path / "nowhere"), got.raw_message]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no runtime sources" in err and "--runtime-dir" in err
    assert main(["explain", "{#00000001}"]) == 2
    assert "identifier 00000001 is not in these runtime sources" in capsys.readouterr().err
