"""The skip gate: with PARE_NO_SKIPS=1 (or CI=true), a pytest session fails
when a test skipped or xfailed for anything but a listed platform limit,
when every test skipped, or when the suite left out an ISA copy this host
runs (docs/testing.md, "Skips").

A skip usually hides something missing: a tool setup installs, an artifact
nobody built, a feature not written yet. Only a limit of the platform the
suite runs on (not of this checkout or this machine's setup) may skip, and
it must be one of LIMITS, each with the check that tells whether this host
has it: a test carries `@pytest.mark.platform_limit("cpu:avx512")` and is
skipped, with the limit's line as the reason, exactly where that check says
the host has the limit. A skip that names no listed limit, or one this host
does not have (the test could have run), fails the gate.

The ISA copies: a runtime built at x86_64_auto runs its GEMM kernels'
baseline (SSE2), x86-64-v3 or x86-64-v4 copy, whichever the CPU has (at
most the cap set_max_isa sets). tests/conftest.py records the copy each
test's methods ran (record_isa, from the runtime's own pare_kernel_isa);
the end-of-run summary lists them, and a test marked
`@pytest.mark.isa_coverage("x86_64_v3", ...)` makes those copies ones its
suite must run wherever the host runs them.

tests/conftest.py registers this plugin; `-p tests.skip_gate` loads it alone
(tests/test_skip_gate.py runs it on throwaway test files that way).
"""

from __future__ import annotations

import os
import platform
import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

import pare.runtime

ENV_VAR = "PARE_NO_SKIPS"
MARKER = "platform_limit"
ISA_MARKER = "isa_coverage"
_PLUGIN_NAME = "pare_skip_gate"
_TRUE = ("1", "true", "yes", "on")


def gate_enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """PARE_NO_SKIPS decides when set (1/true or 0/false); otherwise CI=true turns the gate on."""
    value = environ.get(ENV_VAR, "").strip().lower()
    if value:
        return value in _TRUE
    return environ.get("CI", "").strip().lower() in _TRUE


def _x86_64() -> bool:
    return platform.machine() in ("x86_64", "AMD64")


# The AVX-512 subsets the x86-64-v4 GEMM tile needs (runtime/core/cpu.cc
# asks CPUID for the same ones), as /proc/cpuinfo names them.
AVX512_FLAGS = frozenset({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"})


def _lacks_avx512() -> bool:
    return _lacks_v3() or not AVX512_FLAGS <= (pare.runtime.host_cpu_flags() or frozenset())


def _lacks_vnni() -> bool:
    return _lacks_avx512() or "avx512_vnni" not in (pare.runtime.host_cpu_flags() or frozenset())


def _lacks_v3() -> bool:
    # Where /proc/cpuinfo cannot be read the features count as missing, as
    # pare.runtime.cpu_runs has it.
    return not _x86_64() or not pare.runtime.cpu_runs("x86_64_v3")


@dataclass(frozen=True)
class Limit:
    """A limit of the platform a suite runs on, which no setup step fixes."""

    doc: str  # what the host lacks and what cannot run for it: the skip's reason, and its line in docs/testing.md
    holds: Callable[[], bool]  # whether this host has the limit (the tests that need what it lacks skip)


# Every limit a test may skip for (docs/testing.md, "Skips", lists each with
# its check). "cpu:" limits are CPU features: a suite may skip all its tests
# only for those.
LIMITS: dict[str, Limit] = {
    "arch:x86_64": Limit(
        "the host is not x86_64: x86_64 ISA levels, their runtimes and their code exist only there",
        lambda: not _x86_64(),
    ),
    "cpu:avx2": Limit(
        "the CPU lacks x86-64-v3 (AVX2, FMA, BMI1/2, F16C, MOVBE, LZCNT): the v3 runtime and the v3 GEMM copy cannot run",
        _lacks_v3,
    ),
    "cpu:avx512": Limit(
        "the CPU lacks AVX-512 F, BW, CD, DQ and VL: the x86-64-v4 GEMM tile cannot run", _lacks_avx512
    ),
    "cpu:avx512_vnni": Limit(
        "the CPU lacks AVX-512 VNNI (or x86-64-v4): the int8 GEMM's VNNI copy cannot run", _lacks_vnni
    ),
}

# The kernel copies an x86_64 runtime runs (pare_kernel_isa's names), in
# increasing order, each with the limit under which this host cannot run it.
ISA_LIMITS = {"x86_64_baseline": "arch:x86_64", "x86_64_v3": "cpu:avx2", "x86_64_v4": "cpu:avx512"}
# arm64's: plain NEON everywhere, and the int8 GEMM's SDOT copy where the
# CPU has the ARMv8.2 dot product (Linux's "asimddp" feature).
ARM64_ISAS = ("arm64_neon", "arm64_dotprod")
ISA_COPIES = (*ISA_LIMITS, *ARM64_ISAS)


def _arm64_has_dotprod() -> bool:
    try:
        return "asimddp" in Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False


def host_isa_copies() -> list[str]:
    """The ISA copies this host runs, in increasing order: the best is last."""
    if platform.machine() in ("arm64", "aarch64"):
        return list(ARM64_ISAS) if _arm64_has_dotprod() else [ARM64_ISAS[0]]
    return [isa for isa, limit in ISA_LIMITS.items() if not LIMITS[limit].holds()]


def limit_reason(limit: str) -> str:
    """The skip reason for `limit` (a key of LIMITS): "cpu:avx512: the CPU lacks ..."."""
    return f"{limit}: {LIMITS[limit].doc}"


def skip_if_limit(limit: str) -> None:
    """Skips the running test when this host has `limit`; the test must
    carry @pytest.mark.platform_limit(limit) for the gate to accept it."""
    if LIMITS[limit].holds():
        pytest.skip(limit_reason(limit))


def limit_named(reason: str) -> str | None:
    """The listed limit a skip's or xfail's reason names first ("cpu:avx2: ..."), else None."""
    m = re.match(r"(?:Skipped: |reason: )?(\S+?):?(?:\s|$)", reason.strip())
    return m.group(1) if m and m.group(1) in LIMITS else None


def record_isa(config: pytest.Config, isa: str) -> None:
    """Records that the running test ran code on ISA copy `isa` (a Runtime's kernel_isa)."""
    plugin = config.pluginmanager.get_plugin(_PLUGIN_NAME)
    if plugin is not None:
        plugin.record_isa(isa)


def _marker_arg(marker: pytest.Mark) -> str:
    value = marker.kwargs.get("reason", marker.args[0] if marker.args else "")
    return value.strip() if isinstance(value, str) else ""


def _skip_reason(report) -> str:
    # A skip's longrepr is (path, line, "Skipped: reason").
    if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        return str(report.longrepr[2])
    return str(report.longrepr)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


class SkipGate:
    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.offenders: list[str] = []
        self.limit_skips: dict[str, set[str]] = defaultdict(set)  # limit -> the tests it skipped
        self.ran: set[str] = set()  # tests whose body ran
        self.skipped: set[str] = set()
        self.isa_run: dict[str, set[str]] = defaultdict(set)  # ISA copy -> the tests that ran code on it
        self.isa_required: set[str] = set()  # copies an isa_coverage marker asks for
        self.all_skipped = False
        self.isa_missing: list[str] = []
        # The test running in this process (a pytest-xdist worker's, or the
        # only one) and the copies it ran: record_isa adds to them.
        self._item: pytest.Item | None = None
        self._item_isas: set[str] = set()

    # -- collection: the markers name listed limits and copies; a limit the host has skips the test

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        listed = ", ".join(LIMITS)
        for item in items:
            limits = []
            for marker in item.iter_markers(MARKER):
                limit = _marker_arg(marker)
                if not limit:
                    raise pytest.UsageError(
                        f'{item.nodeid}: @pytest.mark.{MARKER} needs a limit, e.g. @pytest.mark.{MARKER}("cpu:avx512"); '
                        f"listed: {listed} (docs/testing.md, Skips)"
                    )
                if limit not in LIMITS:
                    raise pytest.UsageError(
                        f"{item.nodeid}: @pytest.mark.{MARKER}({limit!r}) names no listed limit; use one of {listed}, "
                        f"or add one with its check to LIMITS in tests/skip_gate.py and to docs/testing.md (Skips)"
                    )
                limits.append(limit)
            for marker in item.iter_markers(ISA_MARKER):
                unknown = [isa for isa in marker.args if isa not in ISA_COPIES]
                if unknown or not marker.args:
                    raise pytest.UsageError(
                        f"{item.nodeid}: @pytest.mark.{ISA_MARKER}{marker.args!r}: name ISA copies among "
                        f"{', '.join(ISA_COPIES)} (docs/testing.md, Skips)"
                    )
            holding = next((limit for limit in limits if LIMITS[limit].holds()), None)
            if holding:
                item.add_marker(pytest.mark.skip(reason=limit_reason(holding)))

    # -- running: which copies each test ran, carried on its teardown report (pytest-xdist sends reports,
    # with such attributes, from the workers to the process that summarises)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self._item, self._item_isas = item, set()
        try:
            return (yield)
        finally:
            self._item = None

    def record_isa(self, isa: str) -> None:
        if self._item is not None:
            self._item_isas.add(isa)
        else:
            self.isa_run[isa].add("(outside any test)")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if call.when == "teardown":
            report.pare_isa_run = sorted(self._item_isas)
            report.pare_isa_required = sorted({isa for m in item.iter_markers(ISA_MARKER) for isa in m.args})
        return report

    # -- judging each report

    def pytest_collectreport(self, report):
        # A module skipped at import (module-level skip or importorskip)
        # never reaches its tests' markers, so it is never a platform limit.
        if report.skipped:
            self.offenders.append(f"SKIPPED {report.nodeid} (whole module): {_skip_reason(report)}")

    def pytest_runtest_logreport(self, report):
        for isa in getattr(report, "pare_isa_run", ()):
            self.isa_run[isa].add(report.nodeid)
        self.isa_required.update(getattr(report, "pare_isa_required", ()))
        if hasattr(report, "wasxfail"):
            kind, reason = ("XPASS" if report.passed else "XFAIL"), report.wasxfail or "(no reason)"
        elif report.skipped:
            kind, reason = "SKIPPED", _skip_reason(report)
        else:
            if report.when == "call" or report.failed:  # an error in setup counts as having run
                self.ran.add(report.nodeid)
            return
        self.skipped.add(report.nodeid)
        line = f"{kind} {report.nodeid}: {reason}"
        if MARKER not in report.keywords:
            self.offenders.append(line)
            return
        limit = limit_named(reason)
        if limit is None:
            self.offenders.append(f"{line} (a {MARKER} skip's reason starts with one listed limit, 'cpu:avx512: ...')")
        elif not LIMITS[limit].holds():
            self.offenders.append(f"{line} (this host does not have the limit {limit}: the test could have run)")
        else:
            self.limit_skips[limit].add(report.nodeid)

    # -- the session's verdict

    def pytest_sessionfinish(self, session):
        skipped = self.skipped - self.ran
        cpu_skips = set().union(*(tests for limit, tests in self.limit_skips.items() if limit.startswith("cpu:")))
        # A suite that ran nothing proves nothing, unless the CPU cannot run any of it.
        self.all_skipped = bool(skipped) and not self.ran and not skipped <= cpu_skips
        host = host_isa_copies()
        self.isa_missing = [isa for isa in host if isa in self.isa_required and not self.isa_run.get(isa)]
        failing = self.offenders or self.all_skipped or self.isa_missing
        if self.enabled and failing and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        if self.limit_skips:
            tr.section("platform limits: tests this host cannot run", sep="=", yellow=True)
            for limit in sorted(self.limit_skips):
                n = len(self.limit_skips[limit])
                tr.line(f"{limit}: {_count(n, 'test')} skipped ({LIMITS[limit].doc})", yellow=True)
        if self.isa_run or self.isa_required:
            self._isa_summary(tr)
        if not (self.enabled and (self.offenders or self.all_skipped or self.isa_missing)):
            return
        tr.section(f"{ENV_VAR}: what did not run", sep="=", red=True, bold=True)
        for line in self.offenders:
            tr.line(line, red=True)
        if self.offenders:
            tr.line(
                f"{len(self.offenders)} skipped/xfailed test(s) without a listed @pytest.mark.{MARKER} this host has: "
                f"make each one run (require what it needs), delete it, or mark a listed platform limit "
                f"(docs/testing.md, Skips)",
                red=True,
                bold=True,
            )
        if self.all_skipped:
            tr.line(
                f"every test skipped ({_count(len(self.skipped), 'test')}), not all for a CPU feature this host lacks: "
                f"a suite that runs nothing proves nothing; make its tests run here (docs/testing.md, Skips)",
                red=True,
                bold=True,
            )
        for isa in self.isa_missing:
            tr.line(
                f"{isa}: this host runs it and the suite's @pytest.mark.{ISA_MARKER} asks for it, but no test ran "
                f"code on it: its runtime ran another copy, or no test runs this one (docs/testing.md, Skips)",
                red=True,
                bold=True,
            )

    def _isa_summary(self, tr) -> None:
        host = host_isa_copies()
        copies = [isa for isa in ISA_COPIES if isa in host or isa in self.isa_run or isa in ISA_LIMITS and _x86_64()]
        tr.section("ISA copies run (pare_kernel_isa after each execute)", sep="=")
        for isa in copies:
            tests = self.isa_run.get(isa)
            if tests:
                tr.line(f"{isa}: {_count(len(tests), 'test')}")
            elif isa not in host:
                tr.line(f"{isa}: not run: {limit_reason(ISA_LIMITS[isa])}")
            elif isa in self.isa_required:
                tr.line(f"{isa}: NOT RUN, though this host runs it and @pytest.mark.{ISA_MARKER} asks for it", red=True)
            else:
                tr.line(f"{isa}: not run (no test here asks for it)")


def register(config: pytest.Config) -> None:
    if config.pluginmanager.has_plugin(_PLUGIN_NAME):
        return
    config.addinivalue_line(
        "markers",
        f"{MARKER}(limit): skips this test where the host has `limit`, one of {', '.join(LIMITS)} "
        f"(docs/testing.md, Skips); with {ENV_VAR}=1 or CI=true every other skip or xfail fails the session",
    )
    config.addinivalue_line(
        "markers",
        f"{ISA_MARKER}(*copies): the suite must run each of these ISA copies this host runs "
        f"(with {ENV_VAR}=1 or CI=true; docs/testing.md, Skips)",
    )
    config.pluginmanager.register(SkipGate(gate_enabled()), _PLUGIN_NAME)


def pytest_configure(config: pytest.Config) -> None:
    register(config)
