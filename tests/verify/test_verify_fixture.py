"""tools/verify on real cross-compiled binaries (tests/verify/fixture), with planted faults.

(c) a clean build passes on every platform; (b) a leaked reference to an
unselected kernel fails, naming the op (and the dtype case and class the same
leak drags in); exports beyond the C API fail; JNI entry points pass only
with --jni; a selection mismatch reports missing entries.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.verify.conftest import PLATFORM_LIBS, REPO_ROOT
from tools.verify import EXIT_FAILED, EXIT_OK, EXIT_USER_ERROR, render_text, to_json, verify
from tools.verify.cli import main as verify_main

PLATFORMS = sorted(PLATFORM_LIBS)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.verify", *args], cwd=REPO_ROOT, capture_output=True, text=True)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_clean_build_passes(fixture_build, platform):
    result = fixture_build.verify("clean", platform)
    assert result.passed, render_text(result)
    present = {r.entry.key for r in result.entries if r.symbols}
    assert present == {
        "aten::add.Tensor",
        "aten::relu",
        "add_kernel/Float",
        "add_kernel/Long",
        "relu_kernel/Float",
        "LinearPackedParams",
    }
    assert {e.name for e in result.shipped.exports} == {"pare_run_kernel", "pare_linear_packed_apply", "pare_version"}
    assert all(f.ok for f in result.facts)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_leaked_unselected_kernel_fails_naming_the_op(fixture_build, platform):
    result = fixture_build.verify("leaky_kernel", platform)
    assert not result.passed
    leaks = {r.entry.label(): [s.demangled for s in r.symbols] for r in result.leaks}
    assert set(leaks) == {"op aten::mm", "kernel tag add_kernel, dtype Int", "class Conv2dPackedParams"}
    assert leaks["op aten::mm"] == ["pare::kernels::aten_mm(pare::KernelContext&, pare::Tensor*)"]
    assert any(
        "pare::dispatch_case<pare::tags::add_kernel, int," in s for s in leaks["kernel tag add_kernel, dtype Int"]
    )
    assert not result.missing and not result.export_leaks
    text = render_text(result)
    assert "op aten::mm" in text and "pare::kernels::aten_mm(" in text and "_ZN4pare7kernels7aten_mm" in text
    assert "Conv2dPackedParams::create" in text


@pytest.mark.parametrize("platform", PLATFORMS)
def test_exports_beyond_c_api_fail_and_jni_needs_the_flag(fixture_build, platform):
    args = (fixture_build.lib("leaky_export", platform, unstripped=True), fixture_build.expected("leaky_export"))
    plain = verify(*args, platform=platform, stripped=fixture_build.lib("leaky_export", platform))
    assert not plain.passed and not plain.leaks
    assert sorted(x.export.demangled for x in plain.export_leaks) == [
        "JNI_OnLoad",
        "Java_org_pare_Runtime_version",
        "pare::internal_helper(int)",
    ]
    jni = verify(*args, platform=platform, stripped=fixture_build.lib("leaky_export", platform), jni=True)
    assert [x.export.demangled for x in jni.export_leaks] == ["pare::internal_helper(int)"]
    assert "not part of the C API" in jni.export_leaks[0].reason


def test_selection_mismatch_reports_missing_and_leaks(fixture_build, expected_clean, expected_grown):
    # The clean library checked against grown.yaml's promise: aten::mm missing.
    r = verify(fixture_build.lib("clean", "android_arm64", unstripped=True), expected_grown, platform="android_arm64")
    assert {x.entry.label() for x in r.missing} == {"op aten::mm", "kernel tag mm_kernel, dtype Float"}
    assert not r.leaks
    # The grown library against clean.yaml's: aten::mm and its float case leak.
    r = verify(fixture_build.lib("grown", "ios_arm64", unstripped=True), expected_clean, platform="ios_arm64")
    assert {x.entry.label() for x in r.leaks} == {"op aten::mm", "kernel tag mm_kernel, dtype Float"}


def test_wrong_platform_fails_platform_facts(fixture_build):
    r = verify(
        fixture_build.lib("clean", "linux_x86_64", unstripped=True),
        fixture_build.expected("clean"),
        platform="android_arm64",
    )
    failed = {f.check: f for f in r.failed_facts}
    assert set(failed) == {"architecture", "DT_NEEDED", "PT_LOAD alignment"}
    assert failed["architecture"].actual == "x86_64"
    r = verify(
        fixture_build.lib("clean", "android_arm64", unstripped=True),
        fixture_build.expected("clean"),
        platform="ios_arm64",
    )
    assert [f.check for f in r.failed_facts] == ["format"]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_platform_is_inferred(fixture_build, platform):
    r = verify(fixture_build.lib("clean", platform, unstripped=True), fixture_build.expected("clean"))
    assert r.platform.name == platform and r.platform_inferred and r.passed


def test_json_output(fixture_build):
    r = fixture_build.verify("leaky_kernel", "ios_arm64")
    data = json.loads(json.dumps(to_json(r)))
    assert data["schema"] == "pare.verify_result" and data["version"] == 1
    assert data["passed"] is False and data["platform"] == "ios_arm64" and data["format"] == "macho"
    assert data["summary"] == {
        "leaks": 3,
        "missing": 0,
        "export_leaks": 0,
        "failed_platform_facts": 0,
        "feature_imports": 0,
        "defined_symbols": len(r.binary.symbols),
    }
    mm = next(e for e in data["entries"] if e["name"] == "aten::mm")
    assert mm["kind"] == "op" and mm["status"] == "leak" and mm["expect"] == "absent"
    assert mm["symbols"][0]["mangled"] == "_ZN4pare7kernels7aten_mmERNS_13KernelContextEPNS_6TensorE"
    assert mm["symbols"][0]["bytes"] > 0 and mm["symbols"][0]["section"] == "__TEXT,__text"
    case = next(e for e in data["entries"] if e["kind"] == "kernel_dtype" and e["status"] == "leak")
    assert (case["tag"], case["dtype"]) == ("add_kernel", "Int")
    assert {f["check"] for f in data["platform_facts"]} >= {"architecture", "LC_BUILD_VERSION"}
    assert "pare_debug_leaks" in {e["name"] for e in data["exports"]}


# --- the CLI: exit statuses, --bundle, --json, one-line errors ---


def test_cli_bundle_pass_and_fail(fixture_build, tmp_path):
    ok = run_cli("--bundle", str(fixture_build.bundle("clean")))
    assert ok.returncode == EXIT_OK, ok.stdout + ok.stderr
    assert ok.stdout.count("pare verify: PASS") == 3
    out = tmp_path / "r.json"
    bad = run_cli(
        "--bundle",
        str(fixture_build.bundle("leaky_kernel")),
        "--platform",
        "linux_x86_64",
        "--json",
        "--json-out",
        str(out),
    )
    assert bad.returncode == EXIT_FAILED
    data = json.loads(bad.stdout)
    assert data == json.loads(out.read_text())
    assert data["schema"] == "pare.verify_results" and data["passed"] is False
    assert [r["platform"] for r in data["results"]] == ["linux_x86_64"]


def test_cli_single_binary(fixture_build):
    p = run_cli(
        "--expected",
        str(fixture_build.expected("leaky_export")),
        "--stripped",
        str(fixture_build.lib("leaky_export", "android_arm64")),
        "--jni",
        str(fixture_build.lib("leaky_export", "android_arm64", unstripped=True)),
    )
    assert p.returncode == EXIT_FAILED
    assert "pare::internal_helper(int) [_ZN4pare15internal_helperEi]: not part of the C API" in p.stdout
    assert "JNI_OnLoad" not in p.stdout.split("Summary:")[0]


def _one_line_error(capsys, argv) -> str:
    assert verify_main(argv) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("python -m tools.verify: error: "), err
    assert "Traceback" not in err
    return err


def test_cli_user_errors_are_one_line(fixture_build, tmp_path, capsys):
    lib = str(fixture_build.lib("clean", "android_arm64", unstripped=True))
    stripped = str(fixture_build.lib("clean", "android_arm64"))
    expected = str(fixture_build.expected("clean"))
    assert "no such file" in _one_line_error(capsys, ["--expected", expected, str(tmp_path / "nope.so")])
    assert "no such file" in _one_line_error(capsys, ["--expected", str(tmp_path / "nope.json"), lib])
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    assert "bad.json:1:3: not valid JSON" in _one_line_error(capsys, ["--expected", str(bad), lib])
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"schema": "something.else"}))
    assert "not an expected_symbols file" in _one_line_error(capsys, ["--expected", str(wrong), lib])
    assert "it is stripped" in _one_line_error(capsys, ["--expected", expected, stripped])
    text = tmp_path / "lib.so"
    text.write_text("hello")
    assert "not an ELF or Mach-O binary" in _one_line_error(capsys, ["--expected", expected, str(text)])
    archive = str(fixture_build.root / "clean" / "ios_arm64" / "libpare_clean.a")
    assert "static archive" in _one_line_error(capsys, ["--expected", expected, archive])
    assert "--expected is required" in _one_line_error(capsys, [lib])
    assert "invalid choice" in _one_line_error(capsys, ["--expected", expected, "--platform", "windows", lib])
    twin = str(fixture_build.lib("clean", "ios_arm64"))
    assert "not the stripped twin" in _one_line_error(capsys, ["--expected", expected, "--stripped", twin, lib])
    assert "no such directory" in _one_line_error(capsys, ["--bundle", str(tmp_path / "none")])


def test_cli_missing_demangler_is_a_user_error(fixture_build, monkeypatch, capsys, tmp_path):
    from tools.verify import demangle

    demangle._run.cache_clear()
    monkeypatch.setenv("PARE_CXXFILT", str(tmp_path / "no-such-cxxfilt"))
    err = _one_line_error(
        capsys,
        [
            "--expected",
            str(fixture_build.expected("clean")),
            str(fixture_build.lib("clean", "linux_x86_64", unstripped=True)),
        ],
    )
    assert "PARE_CXXFILT" in err
