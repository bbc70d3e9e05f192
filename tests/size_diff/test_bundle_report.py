"""bundle_report.py, the build-time report.json of every selective_runtime, keeps its CLI and format."""

from __future__ import annotations

import json

from tests.verify.conftest import FIXTURE_SRC
from tools.size_diff.bundle_report import main


def test_bundle_report_cli(fixture_build, tmp_path):
    out = tmp_path / "report.json"
    args = [
        "--target",
        "//tests/verify/fixture:clean",
        "--manifest",
        str(FIXTURE_SRC / "manifests" / "clean.yaml"),
        "--manifest-label",
        "//tests/verify/fixture:manifests/clean.yaml",
        "--out",
        str(out),
    ]
    for p in ("android_arm64", "ios_arm64"):
        args += ["--binary", p, str(fixture_build.lib("clean", p)), str(fixture_build.lib("clean", p, unstripped=True))]
    assert main(args) == 0
    data = json.loads(out.read_text())
    assert data["version"] == 1 and data["target"] == "//tests/verify/fixture:clean"
    assert len(data["manifest"]["sha256"]) == 64
    android, ios = data["platforms"]["android_arm64"], data["platforms"]["ios_arm64"]
    assert android["format"] == "elf" and ios["format"] == "macho"
    assert android["stripped_bytes"] == fixture_build.lib("clean", "android_arm64").stat().st_size
    assert android["stripped_bytes"] < android["unstripped_bytes"]
    assert android["sections"][".text"] > 0 and ios["sections"]["__TEXT,__text"] > 0
    assert android["section_bytes"] == sum(android["sections"].values())
    first = out.read_bytes()
    assert main(args) == 0 and out.read_bytes() == first  # deterministic


def test_bundle_report_bad_binary(tmp_path, capsys):
    bogus = tmp_path / "lib.so"
    bogus.write_text("not a binary")
    manifest = FIXTURE_SRC / "manifests" / "clean.yaml"
    rc = main(
        [
            "--target",
            "//x:y",
            "--manifest",
            str(manifest),
            "--manifest-label",
            "m",
            "--out",
            str(tmp_path / "r.json"),
            "--binary",
            "android_arm64",
            str(bogus),
            str(bogus),
        ]
    )
    assert rc == 2 and "not an ELF or Mach-O binary" in capsys.readouterr().err
