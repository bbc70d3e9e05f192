"""Reports, diffs and budgets on the fixture runtimes, with the planted fault:
(a) the manifest gains an op (clean -> grown: + aten::mm) beyond the growth
budget, and `check` fails naming that op; (c) an unchanged build passes.
Growth counts from each platform's recorded_bytes, so steps that each stay
within the limit add up; version 1 budgets (a base's from before version 2)
count it from the base report."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.verify.conftest import REPO_ROOT
from tools.size_diff import SizeDiffError, build_report, bundle_runs, check, diff_reports, load_budgets
from tools.size_diff.budgets import parse_budgets
from tools.size_diff.cli import main as size_diff_main
from tools.size_diff.errors import EXIT_FAILED, EXIT_OK, EXIT_USER_ERROR

FIXTURE_BUDGETS = REPO_ROOT / "tests" / "size_diff" / "fixture_budgets.json"
TARGET = "//tests/verify/fixture:clean"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tools.size_diff", *args], cwd=REPO_ROOT, capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def reports(fixture_build, tmp_path_factory):
    """base = the clean build; head = the same target after its manifest gained aten::mm."""
    d = tmp_path_factory.mktemp("reports")
    base = build_report(TARGET, bundle_runs(fixture_build.bundle("clean")))
    head = build_report(TARGET, bundle_runs(fixture_build.bundle("grown")))
    for name, r in (("base", base), ("head", head)):
        (d / f"{name}.json").write_text(json.dumps(r))
    return base, head, d


def test_added_op_beyond_budget_fails_naming_the_op(reports):
    base, head, _ = reports
    result = check(load_budgets(FIXTURE_BUDGETS), head, base)
    assert not result.ok
    assert len(result.violations) == 3  # every platform
    for v in result.violations:
        assert " since recorded " in v and "is over max_growth_bytes 512" in v
        assert "op aten::mm" in v and "(new)" in v and "kernel dtype mm_kernel/Float" in v
        assert "fix: the selection gained aten::mm" in v
        assert "raise the budget first: a commit of its own that changes only fixture_budgets.json" in v
    assert "growth +1,240 B since recorded 3,280 is over max_growth_bytes 512" in result.violations[0]


def _budgets(tmp_path, platforms: dict, *, version: int = 2) -> Path:
    f = tmp_path / "budgets.json"
    f.write_text(
        json.dumps({"schema": "pare.size_budgets", "version": version, "targets": {TARGET: {"platforms": platforms}}})
    )
    return f


def _recorded(size: int, **limits) -> dict:
    return {"recorded_bytes": size, "max_bytes": 100_000, **limits}


def test_growth_adds_up_from_the_recorded_size(reports, tmp_path):
    # Head is unchanged against its base (+0 B this change), but the budget
    # was recorded 400 / 600 B ago: steps within max_growth_bytes each add up.
    base, _, _ = reports
    size = base["platforms"]["android_arm64"]["file_bytes"]
    within = load_budgets(_budgets(tmp_path, {"android_arm64": _recorded(size - 400, max_growth_bytes=512)}))
    result = check(within, base, base)
    assert result.ok, result.render()
    assert f"+0 B, +0.00% vs base {size:,}; +400 B" in result.passed[0] and "growth limit 512 B" in result.passed[0]
    past = load_budgets(_budgets(tmp_path, {"android_arm64": _recorded(size - 600, max_growth_bytes=512)}))
    result = check(past, base, base)
    assert len(result.violations) == 1, result.render()
    assert f"growth +600 B since recorded {size - 600:,} is over max_growth_bytes 512" in result.violations[0]
    percent = load_budgets(_budgets(tmp_path, {"android_arm64": _recorded(size - 600, max_growth_percent=30.0)}))
    assert check(percent, base, base).ok  # 600 B is 22%


def test_version_1_counts_growth_from_the_base_report(reports, tmp_path):
    base, head, _ = reports
    v1 = {"android_arm64": {"max_bytes": 100_000, "max_growth_bytes": 512}}
    with pytest.raises(SizeDiffError, match="version 1 is read only as a base revision's budgets; write version 2"):
        load_budgets(_budgets(tmp_path, v1, version=1))
    budgets = parse_budgets(json.dumps(_v1(v1)), tmp_path / "b.json", "b.json at HEAD~1", allow_version_1=True)
    result = check(budgets, head, base)
    assert len(result.violations) == 1
    assert "growth +1,240 B vs base 3,280 is over max_growth_bytes 512 (b.json at HEAD~1)" in result.violations[0]
    assert check(budgets, base, base).ok
    # No base report: growth unchecked, said so.
    result = check(budgets, head)
    assert result.ok and any("records no size: growth not checked" in x for x in result.notes)


def _v1(platforms: dict) -> dict:
    return {"schema": "pare.size_budgets", "version": 1, "targets": {TARGET: {"platforms": platforms}}}


def test_budgeted_platform_missing_from_the_report_fails(reports, tmp_path):
    base, _, _ = reports
    only_android = {**base, "platforms": {"android_arm64": base["platforms"]["android_arm64"]}}
    result = check(load_budgets(FIXTURE_BUDGETS), only_android, base)
    assert len(result.violations) == 2 and not result.notes
    assert result.violations[0].startswith(f"{TARGET} ios_arm64: budgeted in {FIXTURE_BUDGETS} but not in the report")
    assert f"fix: build {TARGET} for ios_arm64, or remove its budget first" in result.violations[0]


def test_unchanged_build_passes(reports):
    base, _, _ = reports
    result = check(load_budgets(FIXTURE_BUDGETS), base, base)
    assert result.ok, result.render()
    assert len(result.passed) == 3 and all("+0 B" in p for p in result.passed)


def test_max_bytes_violation_names_largest_items(reports, tmp_path):
    base, _, _ = reports
    budgets = _budgets(
        tmp_path, {"android_arm64": {"recorded_bytes": 1000, "max_bytes": 1000, "max_growth_percent": 1000.0}}
    )
    result = check(load_budgets(budgets), base)
    assert len(result.violations) == 1
    v = result.violations[0]
    assert "over max_bytes 1,000" in v and "largest now:" in v and "op aten::add.Tensor" in v
    assert any("ios_arm64: no budget" in note for note in result.notes)


def test_cli_check_exit_statuses(reports):
    _, _, d = reports
    fail = run_cli("check", "--budgets", str(FIXTURE_BUDGETS), "--base", str(d / "base.json"), str(d / "head.json"))
    assert fail.returncode == EXIT_FAILED, fail.stderr
    assert fail.stdout.count("FAIL //tests/verify/fixture:clean") == 3 and "op aten::mm" in fail.stdout
    ok = run_cli("check", "--budgets", str(FIXTURE_BUDGETS), "--base", str(d / "base.json"), str(d / "base.json"))
    assert ok.returncode == EXIT_OK, ok.stdout + ok.stderr


def test_diff_names_top_contributors(reports, tmp_path):
    base, head, d = reports
    diff = diff_reports(base, head)
    for platform in ("android_arm64", "linux_x86_64", "ios_arm64"):
        p = diff["platforms"][platform]
        assert p["section_bytes"]["delta"] > 900
        top = p["contributors"][0]
        assert (top["kind"], top["key"], top["base"]) == ("kernel dtype", "mm_kernel/Float", 0)
        mm = next(c for c in p["contributors"] if c["key"] == "aten::mm")
        assert mm["kind"] == "op" and mm["delta_with_dtype_cases"] == mm["delta"] + top["delta"]
        assert p["symbols"][0]["name"].startswith("pare::Error pare::dispatch_case<pare::tags::mm_kernel, float,")
    f = diff["platforms"]["android_arm64"]["file_bytes"]
    assert f["delta"] == f["head"] - f["base"] and f["percent"] == pytest.approx(100 * f["delta"] / f["base"])
    out = run_cli("diff", str(d / "base.json"), str(d / "head.json"), "--json", str(tmp_path / "d.json"))
    assert out.returncode == 0
    assert "| android_arm64 |" in out.stdout and "| op aten::mm |" in out.stdout
    assert json.loads((tmp_path / "d.json").read_text())["schema"] == "pare.size_diff"


def test_report_cli_writes_json_markdown_png(fixture_build, tmp_path):
    out = run_cli(
        "report",
        "--bundle",
        str(fixture_build.bundle("clean")),
        "--json",
        str(tmp_path / "r.json"),
        "--markdown",
        str(tmp_path / "r.md"),
        "--png",
        str(tmp_path / "r.png"),
    )
    assert out.returncode == 0, out.stderr
    assert "measuring android_arm64" in out.stderr  # progress
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["schema"] == "pare.size_report" and data["target"] == TARGET
    assert set(data["platforms"]) == {"android_arm64", "ios_arm64", "linux_x86_64"}
    md = (tmp_path / "r.md").read_text()
    assert md == out.stdout and "residual 0 bytes" in md and "| aten::add.Tensor |" in md
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_cli_single_binary(fixture_build, tmp_path):
    lib, unstripped = fixture_build.lib("clean", "ios_arm64"), fixture_build.lib("clean", "ios_arm64", unstripped=True)
    out = run_cli(
        "report",
        str(lib),
        "--unstripped",
        str(unstripped),
        "--expected",
        str(fixture_build.expected("clean")),
        "--json",
        str(tmp_path / "r.json"),
        "-q",
    )
    assert out.returncode == 0 and out.stdout == ""
    data = json.loads((tmp_path / "r.json").read_text())
    p = data["platforms"]["ios_arm64"]  # inferred
    assert p["stripped"] and p["file_bytes"] == lib.stat().st_size and p["attribution"]["residual"] == 0


def _one_line_error(capsys, argv) -> str:
    assert size_diff_main(argv) == EXIT_USER_ERROR
    # Progress lines ("size_diff: measuring ...") may precede the one error line.
    lines = [x for x in capsys.readouterr().err.splitlines() if not x.startswith("size_diff: ")]
    assert len(lines) == 1 and lines[0].startswith("python -m tools.size_diff: error: "), lines
    return lines[0]


def test_user_errors_are_one_line(fixture_build, tmp_path, capsys, reports):
    _, _, d = reports
    assert "no such file" in _one_line_error(capsys, ["diff", str(tmp_path / "a.json"), str(d / "head.json")])
    bad = tmp_path / "bad.json"
    bad.write_text("[1,")
    assert "not valid JSON" in _one_line_error(capsys, ["diff", str(bad), str(d / "head.json")])
    assert "not a size report" in _one_line_error(
        capsys, ["check", "--budgets", str(FIXTURE_BUDGETS), str(fixture_build.expected("clean"))]
    )
    assert "no such budgets file" in _one_line_error(
        capsys, ["check", "--budgets", str(tmp_path / "x"), str(d / "head.json")]
    )
    other = tmp_path / "other.json"
    other.write_text(
        json.dumps(
            {
                "schema": "pare.size_budgets",
                "version": 2,
                "targets": {"//a:b": {"platforms": {"android_arm64": _recorded(1, max_growth_bytes=1)}}},
            }
        )
    )
    assert "//tests/verify/fixture:clean: no budget" in _one_line_error(
        capsys, ["check", "--budgets", str(other), str(d / "head.json")]
    )
    stripped = str(fixture_build.lib("clean", "android_arm64"))
    assert "it is stripped" in _one_line_error(capsys, ["report", stripped])
    wrong_twin = str(fixture_build.lib("grown", "android_arm64", unstripped=True))
    assert "not a stripped/unstripped pair" in _one_line_error(capsys, ["report", stripped, "--unstripped", wrong_twin])
    assert "no bundle.json" in _one_line_error(capsys, ["report", "--bundle", str(fixture_build.root)])
    # A bundle of one platform whose index lists no expected_symbols.json.
    bundle = tmp_path / "bundle"
    shutil.copytree(fixture_build.bundle("clean") / "linux_x86_64", bundle / "linux_x86_64")
    index = json.loads((fixture_build.bundle("clean") / "bundle.json").read_text())
    index.update(files={}, platforms={"linux_x86_64": index["platforms"]["linux_x86_64"]})
    (bundle / "bundle.json").write_text(json.dumps(index))
    assert "no expected_symbols.json" in _one_line_error(capsys, ["report", "--bundle", str(bundle)])
    assert "not built for ios_arm64" in _one_line_error(
        capsys, ["report", "--bundle", str(bundle), "--platform", "ios_arm64"]
    )
    assert "required" in _one_line_error(capsys, ["diff", str(d / "head.json")])


_OK = {"recorded_bytes": 100, "max_bytes": 1000, "max_growth_bytes": 10}


def _file(platforms: dict | None = None, **top) -> dict:
    return {
        "schema": "pare.size_budgets",
        "version": 2,
        "targets": {"//a:b": {"platforms": platforms if platforms is not None else {"android_arm64": _OK}}},
        **top,
    }


@pytest.mark.parametrize(
    "budget, message",
    [
        ({"schema": "x"}, "not a budgets file"),
        ({**_file(), "targets": {"apps/demo:runtime": {"platforms": {"a": _OK}}}}, "not an absolute Bazel label"),
        (_file({"android_arm64": {**_OK, "max_size": 1}}), "unknown key 'max_size'"),
        (_file({"android_arm64": {**_OK, "max_bytes": "1k"}}), "want a whole number of bytes"),
        (_file({"ios_arm64": {**_OK, "measure": "vm"}}), "measure = 'vm'"),
        (_file({}), "non-empty object"),
        (_file(extra=1), "unknown key 'extra'"),
        ({**_file(), "version": 3}, "version 3 is not supported"),
        (_file({"android_arm64": {"max_bytes": 1000, "max_growth_bytes": 10}}), "has no recorded_bytes: set it to"),
        (_file({"android_arm64": {"recorded_bytes": 1, "max_growth_bytes": 10}}), "has no max_bytes: set it to"),
        (_file({"android_arm64": {"recorded_bytes": 1, "max_bytes": 10}}), "caps no growth: give max_growth_bytes"),
        (_file({"android_arm64": {**_OK, "recorded_bytes": 1001}}), "recorded_bytes 1,001 is over its max_bytes"),
        (_file(comment="a\nb"), "comment must be one line of at most 200 characters"),
        (
            {**_file(), "targets": {"//a:b": {"comment": "x" * 201, "platforms": {"a": _OK}}}},
            "//a:b.comment must be one line",
        ),
    ],
)
def test_budget_file_errors(tmp_path, budget, message):
    f = tmp_path / "b.json"
    f.write_text(json.dumps(budget))
    with pytest.raises(SizeDiffError, match=message):
        load_budgets(f)


@pytest.mark.parametrize(
    "field, fix",
    [
        (
            "recorded_bytes",
            "set it to the platform's size now (presubmit and `python -m tools.size_diff check` print it)",
        ),
        ("max_bytes", "set it to the size plus about 10%"),
        ("max_growth_bytes", "give a number of bytes, or leave the key out if max_growth_percent caps growth"),
        ("max_growth_percent", "give a percentage, or leave the key out if max_growth_bytes caps growth"),
    ],
)
def test_a_null_limit_is_an_error_naming_file_target_platform_field_and_fix(tmp_path, field, fix):
    # A null used to mean "not checked": a limit switched off without a word.
    f = tmp_path / "b.json"
    f.write_text(json.dumps(_file({"linux_x86_64": {**_OK, "max_growth_percent": 2.0, field: None}})))
    with pytest.raises(SizeDiffError) as e:
        load_budgets(f)
    assert str(e.value) == (
        f"{f}: //a:b.platforms.linux_x86_64.{field} is null, and a null would leave it unchecked: {fix} "
        "(format: docs/size.md)"
    )
    # Version 1, read as a base's budgets, refuses nulls too.
    v1 = {**_file({"linux_x86_64": {"max_bytes": None}}), "version": 1}
    with pytest.raises(SizeDiffError, match="max_bytes is null"):
        parse_budgets(json.dumps(v1), f, "b.json at HEAD~1", allow_version_1=True)


def test_checked_in_budgets_are_valid():
    budgets = load_budgets(REPO_ROOT / "size_budgets.json")
    assert "//apps/demo:runtime" in budgets.targets
    assert load_budgets(FIXTURE_BUDGETS).targets[TARGET].platforms["ios_arm64"].measure == "section_bytes"
