"""Delegate calls in the runtime (docs/delegates.md): the example backend
runs its blob and matches torch, a corrupt blob is refused at method
creation with one line, an unavailable backend names itself, the reason and
the fix, a runtime that lacks the backend says so at load naming it, and a
runtime whose selection leaves the backend out has none of its code."""

import random
import re
import subprocess
from pathlib import Path

import pytest
import runtime_build
import torch
from runtime_testing import SELECTIVE_CLASSES, SELECTIVE_OPS

import codegen
from pare.delegates import (
    EXAMPLE_ADD,
    EXAMPLE_ADD_SCALAR,
    EXAMPLE_MUL,
    EXAMPLE_MUL_SCALAR,
    EXAMPLE_RELU,
    example_blob,
)
from pare.program import ProgramBuilder
from pare.runtime import PareError, Runtime
from tests.conftest import require_tool
from tools.verify import verify

# relu(x * y + 0.5) and (x * y) * -3 + y: registers 0, 1 the inputs.
CODE = [
    (EXAMPLE_MUL, 2, 0, 1, 0.0),
    (EXAMPLE_ADD_SCALAR, 3, 2, 0, 0.5),
    (EXAMPLE_RELU, 4, 3, 0, 0.0),
    (EXAMPLE_MUL_SCALAR, 5, 2, 0, -3.0),
    (EXAMPLE_ADD, 6, 5, 1, 0.0),
]
BLOB = example_blob(2, 7, CODE, [4, 6])


def delegated_program(blob: bytes = BLOB, backend: str = "example", specs=()) -> bytes:
    """x, y -> sigmoid(the two outputs of the delegate call)."""
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Float", [None, 5])
    y = m.input("Float", [None, 5])
    a, b = m.delegate_call(backend, blob, specs, [x, y], 2)
    m.output(m.op("aten::sigmoid", a), b)
    return pb.to_bytes()


def inputs(rows=3):
    g = torch.Generator().manual_seed(rows)
    return torch.randn(rows, 5, generator=g), torch.randn(rows, 5, generator=g)


def test_example_backend_matches_torch(runtime):
    method = runtime.load(delegated_program()).method()
    for rows in (3, 1, 0, 7):  # one instance, any batch: the backend reads sizes at run time
        x, y = inputs(rows)
        a, b = method.run(x.numpy(), y.numpy())
        # sigmoid against float64: torch's float32 sigmoid differs by an ulp
        # between its vector and scalar paths (ATEN_CPU_CAPABILITY=default);
        # 2 ulp of values in (0, 1).
        want = torch.sigmoid(torch.relu(x * y + 0.5).double()).float()
        torch.testing.assert_close(torch.from_numpy(a), want, rtol=0, atol=2 * 2.0**-24)
        torch.testing.assert_close(torch.from_numpy(b), (x * y) * -3.0 + y, rtol=0, atol=0)


def test_compile_specs_reach_the_backend_as_string_pairs(runtime):
    method = runtime.load(delegated_program(specs=[("alpha", "1"), ("mode", "fast")])).method()
    x, y = inputs()
    assert method.run(x.numpy(), y.numpy())[1].shape == (3, 5)


def _one_line(e: PareError) -> str:
    message = str(e)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    "blob, detail",
    [
        (b"", r"no PXEB header"),
        (b"PXEC" + BLOB[4:], r"no PXEB header"),
        (BLOB[:4] + b"\x02\x00" + BLOB[6:], r"has version 2; this runtime reads version 1"),
        (BLOB[:-1], r"79 bytes, its header says 80"),
        (BLOB + b"\0", r"81 bytes, its header says 80"),
        (example_blob(2, 7, [(9, 2, 0, 1, 0.0)], [2]), r"instruction 0: opcode 9"),
        (example_blob(2, 3, [(EXAMPLE_ADD, 2, 0, 5, 0.0)], [2]), r"instruction 0: opcode 1, registers 2, 0, 5"),
        (example_blob(2, 4, [(EXAMPLE_ADD, 2, 0, 3, 0.0)], [2]), r"instruction 0: opcode 1, registers 2, 0, 3"),
        (example_blob(2, 3, [(EXAMPLE_RELU, 1, 0, 0, 0.0)], [1]), r"instruction 0: opcode 3, registers 1, 0, 0"),
        (example_blob(2, 3, [(EXAMPLE_RELU, 2, 0, 0, 0.0)], [5]), r"output 0 reads register 5"),
        (example_blob(2, 5000, [], [0]), r"2 inputs, 1 outputs, 5000 registers"),
    ],
)
def test_a_corrupt_blob_is_refused_with_one_line(runtime, blob, detail):
    program = runtime.load(delegated_program(blob))
    with pytest.raises(PareError) as e:
        program.method()
    assert e.value.status_name == "InvalidProgram"
    assert re.search(
        r"^pare::delegate_init\.example: the example backend's blob (is corrupt \(.*"
        + detail
        + r".*\)|"
        + detail
        + ")",
        _one_line(e.value),
    ), str(e.value)
    assert "re-export it" in str(e.value)


def test_mutated_blobs_load_or_fail_cleanly(runtime):
    rng = random.Random(45)
    valid = 0
    for _ in range(300):
        blob = bytearray(BLOB)
        for _ in range(rng.randint(1, 4)):
            blob[rng.randrange(len(blob))] = rng.randrange(256)
        program = runtime.load(delegated_program(bytes(blob)))
        try:
            method = program.method()
        except PareError as e:
            assert e.status_name == "InvalidProgram", str(e)
            continue
        valid += 1
        x, y = inputs()
        method.run(x.numpy(), y.numpy())  # whatever it computes, it stays in bounds
    assert valid < 300


def test_an_unavailable_backend_names_itself_the_reason_and_the_fix(runtime, monkeypatch):
    program = runtime.load(delegated_program())
    monkeypatch.setenv("PARE_EXAMPLE_BACKEND", "unavailable")
    with pytest.raises(PareError) as e:
        program.method()
    assert e.value.status_name == "BackendUnavailable"
    assert _one_line(e.value).startswith(
        "pare::delegate_init.example: backend 'example' is not available on this device "
        "(PARE_EXAMPLE_BACKEND=unavailable): install its driver, or re-export the model with --delegate-fallback "
        "(or without --delegate example)"
    )
    monkeypatch.delenv("PARE_EXAMPLE_BACKEND")
    program.method()


def test_a_runtime_without_the_backend_names_it_at_load(selective_runtime, runtime):
    with pytest.raises(PareError) as e:
        selective_runtime.load(delegated_program())
    assert e.value.status_name == "OperatorNotSelected"
    assert _one_line(e.value) == (
        "the program delegates to backend 'example', which this runtime lacks (the manifest tests/runtime "
        "custom selection does not select pare::delegate_init.example): trace the model with --delegate example, "
        "or re-export it without it"
    )
    with pytest.raises(PareError) as e:
        runtime.load(delegated_program(backend="vulkan_next"))
    assert e.value.status_name == "OperatorNotFound"
    assert "the program delegates to backend 'vulkan_next', which this runtime lacks" in _one_line(e.value)


def _symbols(lib: Path) -> str:
    nm = require_tool("llvm-nm-16", "llvm-nm", package="llvm-16")
    return subprocess.run(
        [nm, "-C", "--format=just-symbols", str(lib)], capture_output=True, text=True, check=True
    ).stdout


def _verified(lib: Path, ops, classes, tmp_path: Path, name: str):
    """tools/verify on `lib` against codegen's expected symbols for a
    manifest of `ops` and `classes`."""
    manifest = codegen.Manifest(
        operators=list(ops),
        kernel_metadata={"sigmoid_kernel": ("Float",)} if "aten::sigmoid" in ops else {},
        custom_classes=frozenset(classes),
        build_features=frozenset(),
        include_all_operators=False,
        include_all_non_op_selectives=False,
        source=name,
    )
    expected = tmp_path / f"{name}.json"
    selection = codegen.resolve(manifest, codegen.load_inventory(codegen.DEFAULT_INVENTORY_DIR))
    expected.write_text(codegen.expected_symbols_json(selection))
    return verify(lib, expected, platform="linux_x86_64")


@pytest.mark.absent_code
def test_the_backend_is_selected_like_an_operator(selection_cache, selective_lib, tmp_path):
    """A selection naming the backend's operators and the Delegate class runs
    delegated programs; one that does not (selective_lib) has none of the
    backend's code, as tools/verify proves (the init operator's entry
    covers the backend's namespace, pare::backends::example::)."""
    ops = ["pare::delegate_init.example", "pare::delegate_call", "aten::sigmoid"]
    sel = runtime_build.write_selection(
        selection_cache / "selection_example_backend", ops, {"sigmoid_kernel": ["Float"]}, ["Delegate"], []
    )
    lib = runtime_build.build(selection_cache, "example_backend", selection_dir=sel)
    x, y = inputs()
    a, _ = Runtime(lib).load(delegated_program()).method().run(x.numpy(), y.numpy())
    want = torch.sigmoid(torch.relu(x * y + 0.5).double()).float()  # float64, as above
    torch.testing.assert_close(torch.from_numpy(a), want, rtol=0, atol=2 * 2.0**-24)
    with_backend, without = _symbols(lib), _symbols(selective_lib)
    assert "pare::backends::example::" in with_backend and "pare_delegate_call" in with_backend
    assert "pare::backends::example::" not in without
    assert "pare_delegate" not in without and "pare::classes::Delegate" not in without

    result = _verified(lib, ops, ["Delegate"], tmp_path, "with_backend")
    entries = {r.entry.key: r for r in result.entries}
    assert entries["pare::delegate_init.example"].symbols and entries["Delegate"].symbols
    assert any("pare::backends::example::" in s.demangled for s in entries["pare::delegate_init.example"].symbols)
    assert all(r.status == "ok" for r in result.entries if r.entry.key in ("pare::delegate_init.example", "Delegate"))
    result = _verified(selective_lib, SELECTIVE_OPS, SELECTIVE_CLASSES, tmp_path, "without_backend")
    entries = {r.entry.key: r for r in result.entries}
    assert entries["pare::delegate_init.example"].entry.expect == "absent"
    assert entries["pare::delegate_init.example"].status == "ok" and not entries["pare::delegate_init.example"].symbols
