"""`python -m codegen`: exit codes, one-line errors, files written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from codegen_testlib import INVENTORY_DIR, MANIFESTS, REPO_ROOT

from codegen import cli
from tests.conftest import VULKAN_MANIFEST


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "codegen", *args], cwd=REPO_ROOT, capture_output=True, text=True)


def test_generate_writes_every_file(tmp_path):
    result = run(
        "generate",
        "--manifest",
        str(MANIFESTS / "pytorch_tracer.yaml"),
        "--out",
        str(tmp_path),
        "--inventory",
        str(INVENTORY_DIR),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""
    for rel in (
        "pare_selection/selected_ops.h",
        "pare_selection/selected_kernel_dtypes.h",
        "pare_selection/selected_classes.h",
        "expected_symbols.json",
    ):
        assert (tmp_path / rel).is_file()
    assert json.loads((tmp_path / "expected_symbols.json").read_text())["version"] == 1


def test_generate_twice_is_byte_identical(tmp_path):
    outs = []
    for name in ("a", "b"):
        assert (
            cli.main(
                [
                    "generate",
                    "--manifest",
                    str(MANIFESTS / "hand_written.yaml"),
                    "--out",
                    str(tmp_path / name),
                    "--inventory",
                    str(INVENTORY_DIR),
                ]
            )
            == 0
        )
        outs.append(
            {
                p.relative_to(tmp_path / name): p.read_bytes()
                for p in sorted((tmp_path / name).rglob("*"))
                if p.is_file()
            }
        )
    assert outs[0] == outs[1]


def generate_foreign(out: Path, *flags: str) -> subprocess.CompletedProcess:
    """`generate` into `out` for the PyTorch manifest with operators the inventory lacks."""
    return run(
        "generate",
        "--manifest",
        str(MANIFESTS / "pytorch_foreign.yaml"),
        "--out",
        str(out),
        "--inventory",
        str(INVENTORY_DIR),
        *flags,
    )


def test_unknown_ops_exit_2_with_one_line_and_no_traceback(tmp_path):
    result = generate_foreign(tmp_path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and "--allow-unknown-ops" in result.stderr
    assert not (tmp_path / "pare_selection").exists()


def test_allow_unknown_ops_warns_and_generates(tmp_path):
    result = generate_foreign(tmp_path, "--allow-unknown-ops")
    assert result.returncode == 0
    lines = result.stderr.splitlines()
    assert lines and all(line.startswith("warning: ") for line in lines)
    assert any("prim::TupleConstruct" in line for line in lines)
    assert '"aten::add.Tensor;"' in (tmp_path / "pare_selection/selected_ops.h").read_text()


def test_check_summarises(capsys):
    assert cli.main(["check", str(MANIFESTS / "pytorch_tracer.yaml"), "--inventory", str(INVENTORY_DIR)]) == 0
    out = capsys.readouterr().out
    assert out == (
        f"{MANIFESTS / 'pytorch_tracer.yaml'}: ok; operators: 3 of 16; kernel dtypes: 4 of 34 in 3 of 7 tags; "
        "custom classes: 1 of 2; build features: 0 of 1\n"
    )


def test_check_include_all(capsys):
    assert cli.main(["check", str(MANIFESTS / "include_all.yaml"), "--inventory", str(INVENTORY_DIR)]) == 0
    assert (
        "operators: all 16; kernel dtypes: all 34; custom classes: all 2; build features: all 1"
        in capsys.readouterr().out
    )


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("operators:\n  aten::add.Tensor: {\n", "malformed YAML"),
        ("operatorz: {}\n", "unknown top-level key 'operatorz'"),
        ("kernel_metadata:\n  add_kernel: [float32]\n", "did you mean Float?"),
    ],
)
def test_check_errors(tmp_path, capsys, text, fragment):
    path = tmp_path / "m.yaml"
    path.write_text(text)
    assert cli.main(["check", str(path), "--inventory", str(INVENTORY_DIR)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}") and fragment in err and err.count("\n") == 1


def test_missing_manifest_and_inventory(tmp_path, capsys):
    assert cli.main(["check", str(tmp_path / "none.yaml"), "--inventory", str(INVENTORY_DIR)]) == 2
    assert "no such manifest file" in capsys.readouterr().err
    assert cli.main(["check", str(MANIFESTS / "include_all.yaml"), "--inventory", str(tmp_path / "nope")]) == 2
    assert "inventory directory does not exist" in capsys.readouterr().err


def test_inventory_text_and_json(capsys):
    assert cli.main(["inventory", "--inventory", str(INVENTORY_DIR)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{INVENTORY_DIR}: 16 operators, 7 kernel tags, 2 custom classes, 1 build features\n")
    assert "  aten::add.Tensor        pare::kernels::aten_add_Tensor  (core/binary.ops.def:2)\n" in out
    assert "  relu_kernel: Int Long Half Float Double BFloat16  (core/elementwise.tags.def:4)\n" in out
    assert cli.main(["inventory", "--inventory", str(INVENTORY_DIR), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["operators"][0] == {
        "name": "aten::_softmax",
        "function": "aten__softmax",
        "declared_at": "core/nn.ops.def:3",
    }


def test_usage_errors_exit_2():
    result = run("generate", "--manifest", "x.yaml")
    assert result.returncode == 2 and "--out" in result.stderr
    assert run().returncode == 2


def test_unwritable_out_is_a_user_error(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    args = ["generate", "--manifest", str(MANIFESTS / "include_all.yaml"), "--out", str(blocker)]
    assert cli.main(args + ["--inventory", str(INVENTORY_DIR)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "cannot write" in err and "--out" in err


def test_build_feature_flag_adds_to_the_manifest_and_rejects_unknown_names(tmp_path, capsys):
    # pytorch_tracer.yaml selects no build feature; the flag (what the
    # selective_runtime rule's build_features attribute passes) adds one.
    args = ["generate", "--manifest", str(MANIFESTS / "pytorch_tracer.yaml"), "--inventory", str(INVENTORY_DIR)]
    assert cli.main([*args, "--out", str(tmp_path / "plain")]) == 0
    assert (
        '#define TORCH_BUILD_FEATURE_ALLOWLIST ""' in (tmp_path / "plain/pare_selection/selected_classes.h").read_text()
    )
    assert cli.main([*args, "--out", str(tmp_path / "with"), "--build-feature", "op_profiling"]) == 0
    assert (
        '#define TORCH_BUILD_FEATURE_ALLOWLIST "op_profiling;"'
        in (tmp_path / "with/pare_selection/selected_classes.h").read_text()
    )
    capsys.readouterr()
    assert cli.main([*args, "--out", str(tmp_path / "bad"), "--build-feature", "threadz"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"error: --build-feature threadz: not a build feature of the runtime ({INVENTORY_DIR}); its "
        "features: op_profiling\n"
    )
    assert not (tmp_path / "bad").exists()


def test_a_manifest_selecting_a_backend_a_platform_lacks_fails_naming_the_platforms_attribute(tmp_path, capsys):
    # What the selective_runtime rule passes for a runtime built for
    # ios_arm64 (platforms/table.bzl: no Vulkan driver there).
    manifest = tmp_path / "vulkan.yaml"
    manifest.write_text(VULKAN_MANIFEST)
    inventory = str(REPO_ROOT / "runtime" / "inventory")
    args = ["generate", "--manifest", str(manifest), "--inventory", inventory, "--runtime", "//app:runtime"]
    assert cli.main([*args, "--out", str(tmp_path / "ok")]) == 0
    capsys.readouterr()
    assert cli.main([*args, "--out", str(tmp_path / "bad"), "--platform-lacks", "ios_arm64:vulkan"]) == 2
    assert capsys.readouterr().err == (
        "error: //app:runtime: the manifest selects backend 'vulkan', which ios_arm64 has no driver for: "
        'declare backends = ["vulkan"] on the runtime (its default platforms then leave ios_arm64 out) or '
        "leave ios_arm64 out of its platforms attribute\n"
    )
    assert not (tmp_path / "bad").exists()
    # A backend the manifest does not select, and a manifest selecting every
    # operator (as the full runtime's does, naming no backend), pass.
    assert cli.main([*args, "--out", str(tmp_path / "other"), "--platform-lacks", "ios_arm64:metal"]) == 0
    include_all = ["generate", "--manifest", str(MANIFESTS / "include_all.yaml"), "--inventory", inventory]
    assert cli.main([*include_all, "--out", str(tmp_path / "all"), "--platform-lacks", "ios_arm64:vulkan"]) == 0
