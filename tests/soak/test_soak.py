"""The soak (tools/soak, docs/testing.md "Soak"): its short form, CI's
(4,000 calls over the four runs, on the full runtime), passes every check;
and each check can fail: a planted leak fails the PAL and memory checks, a
wrong reference is a mismatch, a reference off torch stops the soak, and bad
case files and arguments are one-line errors."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from tools.soak import soak
from tools.soak.__main__ import main
from tools.tracer.progress import Progress

SHORT_CALLS = 4_000  # make soak runs soak.CALLS (100,000)
SILENT = Progress.silent()


@pytest.fixture(scope="module")
def short_soak(full_runtime, tmp_path_factory) -> list[soak.RunReport]:
    return soak.soak(tmp_path_factory.mktemp("soak"), calls=SHORT_CALLS, runtime=full_runtime, progress=SILENT)


@pytest.fixture(scope="module")
def demo_run(short_soak) -> tuple[Path, Path]:
    """The first run's driver and demo case (built by the short soak)."""
    run_dir = short_soak[0].directory
    return run_dir / "soak_driver", run_dir / "demo.soak"


def test_the_short_soak_passes_every_check(short_soak):
    assert [r.run.name for r in short_soak] == [m.name for m in soak.MODELS] + ["all models"]
    assert all(r.ok for r in short_soak), soak.format_report(short_soak)
    assert sum(r.report["calls"] for r in short_soak) == SHORT_CALLS
    for r in short_soak:
        rep = r.report
        assert (rep["threads"], rep["instances"]) == (soak.THREADS, soak.INSTANCES)
        assert [m["name"] for m in rep["models"]] == [m.name for m in r.run.models]
        assert sum(m["calls"] for m in rep["models"]) == rep["calls"] == SHORT_CALLS // 4
        assert all(m["mismatches"] == 0 for m in rep["models"])
        pal = rep["pal"]
        # The copied programs are the runtime's own bytes: the record sees them.
        assert pal["loaded_bytes"] > 0 and pal["warm_bytes"] == pal["end_bytes"] and pal["destroyed_bytes"] == 0
        assert rep["rss_anon_kib"]["end"] - rep["rss_anon_kib"]["warm"] <= soak.RSS_BOUND_KIB
        for m in rep["models"]:
            # Two shapes fit a method's plans; the transformer's five do not.
            assert (m["measured_plans"] > 0) == (m["signatures"] > 4), m
    # One thread alternates instances of different models.
    assert [m["instances"] for m in short_soak[-1].report["models"]] == [3, 3, 2]


def test_the_report_states_speed_and_memory_per_model(short_soak):
    text = soak.format_report(short_soak)
    for r in short_soak:
        assert f"{r.run.name} ({r.run.runtime}): ok" in text
    assert "per CPU second" in text and "after warm-up" in text and "at the end" in text
    assert text.splitlines()[-1] == f"{SHORT_CALLS:,} calls in 4 runs, every output checked bit for bit: ok"


def test_a_planted_leak_fails_the_pal_and_memory_checks(demo_run):
    driver, case = demo_run
    result = soak.run_driver(driver, [case], calls=1000, plant_leak=4096)
    assert result.returncode == 1, result.stderr
    problems = "\n".join(result.report["problems"])
    assert "the PAL holds" in problems and "after warm-up" in problems, problems
    assert "PAL allocations in" in problems and "made no new plan" in problems, problems
    assert "anonymous resident memory grew by" in problems, problems  # 4 MB against 1 MiB
    assert result.report["pal"]["measured_allocs"] == 1000


def test_an_output_other_than_the_reference_is_a_mismatch(demo_run, tmp_path):
    driver, case = demo_run
    wrong = tmp_path / "wrong.soak"
    data = bytearray(case.read_bytes())
    data[-1] ^= 0x01  # the last set's last output element
    wrong.write_bytes(bytes(data))
    result = soak.run_driver(driver, [wrong], calls=400)
    assert result.returncode == 1, result.stderr
    (model,) = result.report["models"]
    assert model["mismatches"] > 0 and model["calls"] == 400
    (problem,) = result.report["problems"]
    assert "gave outputs other than the reference" in problem and "input set 3, output 0: element" in problem


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda b: b[:-3], "truncated case file"),
        (lambda b: b"NOTSOAK!" + b[8:], "not a soak case file of version 1"),
        (lambda b: b + b"\0", "1 bytes after the last set"),
    ],
)
def test_a_bad_case_file_is_a_one_line_error(demo_run, tmp_path, mutate, message):
    driver, case = demo_run
    bad = tmp_path / "bad.soak"
    bad.write_bytes(mutate(case.read_bytes()))
    result = soak.run_driver(driver, [bad], calls=10)
    assert result.returncode == 2 and result.report is None
    assert result.stderr == [
        f"soak_driver: {bad}: {message}" + ("; write it with python -m tools.soak" if "version" in message else "")
    ]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--instances", "6"], "--instances must be a multiple of --threads"),
        (["--calls", "0"], "--calls takes a whole number from 1"),
        (["--bogus"], "unknown option --bogus"),
    ],
)
def test_bad_driver_arguments_are_one_line_errors(demo_run, args, message):
    driver, case = demo_run
    result = subprocess.run([driver, *args, case], capture_output=True, text=True)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr


def test_a_reference_off_torch_stops_the_soak(full_runtime):
    exported = soak.export(soak.MODELS[0], SILENT)
    off = [[t + 1 for t in outputs] for outputs in exported.expected]
    with pytest.raises(soak.SoakError, match=r"^demo input set 0 \(\[1, 3, 32, 32\]\) on .*: output 0 .*MISMATCH"):
        soak.reference_outputs(dataclasses.replace(exported, expected=tuple(off)), full_runtime)


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--calls", "0"], "--calls and --threads must be positive"),
        (["--threads", "4", "--instances", "6"], "--instances a multiple of --threads"),
        (["--runtime", "/nonexistent/libpare.so"], "runtime library /nonexistent/libpare.so does not exist"),
        (["--calls", "many"], "argument --calls: invalid int value: 'many' (see python -m tools.soak --help)"),
    ],
)
def test_cli_errors_are_one_line(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and len(err.splitlines()) == 1
