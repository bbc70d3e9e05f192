"""python -m tools.tracer: every command, exit statuses, and user errors as one
clear line (never a traceback)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest
import yaml
from tracer_testlib import MODELS, REPO

import codegen
from tools.tracer import cli
from tools.tracer.model_spec import load_model_spec

FIXTURES = REPO / "tests" / "codegen" / "fixtures" / "manifests"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_error_line(err: str, *fragments: str) -> None:
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, err
    for fragment in fragments:
        assert fragment in errors[0], errors[0]


def test_export_writes_a_deterministic_program(capsys, tmp_path):
    code, out, err = run_cli(capsys, "export", str(MODELS / "tiny_mlp.py"), "-o", str(tmp_path / "a.pare"))
    assert code == 0, err
    assert out.startswith(f"wrote {tmp_path / 'a.pare'}: ") and "methods forward (inputs 0, 1)" in out
    assert "tracer: exporting forward with torch.export (2 inputs; dynamic: input 0 dim 0)" in err
    code, _, _ = run_cli(capsys, "-q", "export", str(MODELS / "tiny_mlp.py"), "-o", str(tmp_path / "b.pare"))
    assert code == 0
    assert (tmp_path / "a.pare").read_bytes() == (tmp_path / "b.pare").read_bytes()


def test_trace_and_check_commands(capsys, tmp_path, tracing_lib, full_lib):
    out_file = tmp_path / "sub" / "manifest.yaml"
    code, out, err = run_cli(
        capsys, "trace", str(MODELS / "multi_dtype.py"), "-o", str(out_file), "--runtime", str(tracing_lib)
    )
    assert code == 0, err
    assert "numeric check passed on 4 inputs" in out and "operators" in out
    assert "tracer: inputs[1] forward_int64_int64([2, 4], [2, 4]): ok" in err
    manifest = codegen.load(out_file)
    assert manifest.kernel_metadata["add_kernel"] == ("Double", "Float", "Long")

    # Without -o the manifest goes to stdout, byte-identical to the file.
    def trace_quietly(*flags):
        return run_cli(capsys, "trace", str(MODELS / "multi_dtype.py"), "--runtime", str(tracing_lib), "-q", *flags)

    code, out, _ = trace_quietly()
    assert code == 0 and out == out_file.read_text()
    # --features adds build features the trace cannot see (the app binds
    # its output buffers); a name the runtime lacks is a one-line error.
    code, out, _ = trace_quietly("--features", "output_buffers")
    assert code == 0
    (tmp_path / "with_feature.yaml").write_text(out)
    with_feature = codegen.load(tmp_path / "with_feature.yaml")
    # The model's two input shapes already select dynamic_shapes.
    assert manifest.build_features == {"dynamic_shapes"}
    assert with_feature.build_features == {"dynamic_shapes", "output_buffers"}
    assert dataclasses.replace(with_feature, build_features=manifest.build_features, source=manifest.source) == manifest
    code, out, _ = trace_quietly("--threads")
    assert code == 0 and "build_features:\n- dynamic_shapes\n- threads\n" in out
    code, _, err = trace_quietly("--features", "output_buffers,threadz")
    assert code == 2
    assert_one_error_line(
        err, "--features threadz: not a build feature of", "its features: op_profiling, output_buffers"
    )

    code, out, err = run_cli(capsys, "check", str(MODELS / "multi_dtype.py"), "--runtime", str(full_lib))
    assert code == 0, err
    assert out.startswith("check passed: 4 inputs, 8 outputs match torch eager")
    assert "inputs[3] (forward_float64_float64) output 0 Double[2, 4]: ok, max abs err" in err


def test_numeric_mismatch_exits_1(capsys, tracing_lib):
    code, _, err = run_cli(capsys, "trace", str(MODELS / "drifting.py"), "--runtime", str(tracing_lib), "-q")
    assert code == 1
    assert err.startswith("error: ") and "MISMATCH" in err and "Traceback" not in err


def test_missing_ops_exit_2_with_the_report(capsys, tmp_path):
    code, out, err = run_cli(capsys, "-q", "export", str(MODELS / "missing_ops.py"), "-o", str(tmp_path / "x"))
    assert code == 2 and out == ""
    assert err.startswith("error: ") and "lacks 2 operators" in err
    assert "aten::_linalg_det  x1  at " in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    "argv,fragments",
    [
        (["export", "no/such/model.py", "-o", "x.pare"], ["no such model spec", "defining build()"]),
        (["export", "MODEL"], ["the following arguments are required: -o/--output", "--help"]),
        (["frobnicate"], ["invalid choice: 'frobnicate'"]),
        (["trace", "MODEL", "--rtol", "-1"], ["must be a finite number >= 0"]),
        (["trace", "MODEL", "--features", "output_buffers,"], ["a comma-separated list of build feature names"]),
        (["trace", "MODEL", "--runtime", "/no/such/lib.so"], ["--runtime /no/such/lib.so: no such runtime library"]),
        (
            ["export", "MODEL", "-o", "x.pare", "--passes", "fold_all"],
            ["argument --passes: unknown pass 'fold_all'", "the passes are fold_conv_bn, fold_linear_bn"],
        ),
        (["check", "MODEL", "--runtime", "LIB", "--skip-passes", "none"], ["argument --skip-passes: unknown pass"]),
        (["check", "MODEL", "--runtime", "/no/such/lib.so"], ["no such runtime library"]),
        (
            ["check", "MODEL", "--runtime", "LIB", "--program", "/no/such.pare"],
            ["--program /no/such.pare: cannot read"],
        ),
        (["merge", "/no/such.yaml", "-o", "x.yaml"], ["no such manifest file"]),
        (["diff", "MANIFEST", "/no/such.yaml"], ["no such manifest file"]),
    ],
)
def test_user_errors_are_one_line(capsys, tmp_path, argv, fragments):
    model = MODELS / "tiny_mlp.py"
    lib = tmp_path / "lib.so"
    lib.write_bytes(b"\x7fELF" + bytes(60))
    argv = [
        str(model)
        if a == "MODEL"
        else str(lib)
        if a == "LIB"
        else str(FIXTURES / "pytorch_tracer.yaml")
        if a == "MANIFEST"
        else a
        for a in argv
    ]
    code, _, err = run_cli(capsys, "-q", *argv)
    assert code == 2
    assert_one_error_line(err, *fragments)


def test_model_spec_errors_name_the_fix(capsys, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\ndef build():\n    return torch.nn.ReLU(), [(3,)]\n")
    code, _, err = run_cli(capsys, "-q", "export", str(bad), "-o", str(tmp_path / "x"))
    assert code == 2
    assert_one_error_line(err, "inputs[0][0] is a int", "wrap scalars with torch.tensor")


@pytest.mark.parametrize(
    "tolerance,override",
    [
        ("", None),
        ("TOLERANCE = {}", {}),
        ('TOLERANCE = {"atol": 0.1}', {"atol": 0.1}),
        ("TOLERANCE = {'rtol': 0, 'atol': 2}", {"rtol": 0, "atol": 2}),
    ],
)
def test_model_spec_tolerance_override_is_what_the_spec_sets(tmp_path, tolerance, override):
    spec = tmp_path / "relu.py"
    spec.write_text(f"import torch\n{tolerance}\ndef build():\n    return torch.nn.ReLU(), [(torch.ones(2),)]\n")
    assert load_model_spec(spec).tolerance_override() == override


def test_model_spec_bad_tolerance_is_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        'import torch\nTOLERANCE = {"atol": -1}\ndef build():\n    return torch.nn.ReLU(), [(torch.ones(2),)]\n'
    )
    code, _, err = run_cli(capsys, "-q", "export", str(bad), "-o", str(tmp_path / "x"))
    assert code == 2
    assert_one_error_line(err, "TOLERANCE['atol'] must be a non-negative number, got -1")


def test_internal_errors_are_one_line_unless_traceback(capsys, tmp_path, monkeypatch):
    from tools.tracer import exporter

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(exporter, "export_model", broken)
    argv = ["-q", "export", str(MODELS / "tiny_mlp.py"), "-o", str(tmp_path / "x")]
    code, _, err = run_cli(capsys, *argv)
    assert code == 3
    assert_one_error_line(err, "internal tracer error: RuntimeError: boom", "--traceback")
    with pytest.raises(RuntimeError, match="boom"):
        cli.main(argv + ["--traceback"])


def test_merge_prints_diagnostics_and_is_deterministic(capsys, tmp_path):
    a, b = FIXTURES / "pytorch_tracer.yaml", FIXTURES / "include_all.yaml"
    code, out, err = run_cli(capsys, "merge", str(a), str(b), "-o", str(tmp_path / "m1.yaml"))
    assert code == 0
    assert out.startswith(f"wrote {tmp_path / 'm1.yaml'}: ") and "merged 2 manifests" in out
    assert "warning: " in err and "include_all_operators: true" in err
    run_cli(capsys, "merge", str(b), str(a), "-o", str(tmp_path / "m2.yaml"))
    m1, m2 = (tmp_path / "m1.yaml").read_text(), (tmp_path / "m2.yaml").read_text()
    assert m1 == m2  # no debug_info in these inputs: order-independent
    merged = yaml.safe_load(m1)
    assert merged["include_all_operators"] is True
    assert set(merged["operators"]) == {"aten::add.Tensor", "aten::relu", "aten::sigmoid"}


def test_merge_to_stdout_and_bad_manifest(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "merge", str(FIXTURES / "pytorch_tracer.yaml"))
    assert code == 0 and codegen.loads(out) == codegen.load(FIXTURES / "pytorch_tracer.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("operators: {}\nkernel_metdata: {}\n")
    code, _, err = run_cli(capsys, "merge", str(bad), str(FIXTURES / "pytorch_tracer.yaml"))
    assert code == 2
    assert_one_error_line(err, "bad.yaml:2: unknown top-level key 'kernel_metdata'", "did you mean")


def test_diff_both_directions(capsys, tmp_path):
    a = tmp_path / "a.yaml"
    b = tmp_path / "b.yaml"
    a.write_text(
        "operators:\n  aten::add.Tensor: {include_all_overloads: false}\n  aten::relu: {}\n"
        "kernel_metadata: {add_kernel: [Float, Long]}\n"
    )
    b.write_text(
        "operators:\n  aten::add.Tensor: {include_all_overloads: false}\n  aten::mm: {}\n"
        "kernel_metadata: {add_kernel: [Float]}\ncustom_classes: [LinearPackedParams]\n"
    )
    code, out, _ = run_cli(capsys, "diff", str(a), str(b))
    assert code == 0
    assert out.splitlines() == [
        f"{a} selects, {b} does not:",
        "+ operator aten::relu",
        "+ kernel dtype add_kernel: Long",
        f"{b} selects, {a} does not:",
        "- operator aten::mm",
        "- custom class LinearPackedParams",
    ]
    code, out, _ = run_cli(capsys, "diff", str(a), str(a), "--exit-code")
    assert code == 0 and out == f"{a} and {a} select the same\n"
    code, _, _ = run_cli(capsys, "diff", str(a), str(b), "--exit-code")
    assert code == 1
    # Against the runtime's inventory, relu (no overload, all overloads) is the concrete op.
    code, out, _ = run_cli(capsys, "diff", str(a), str(b), "--inventory")
    assert code == 0 and "+ operator aten::relu\n" in out


def test_module_entry_point_has_no_traceback(tmp_path):
    # merge never imports torch, so this stays fast; the model commands'
    # errors go through the same main() (tested in-process above).
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-m", "tools.tracer", "merge", str(tmp_path / "none.yaml")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert_one_error_line(proc.stderr, "no such manifest file")
