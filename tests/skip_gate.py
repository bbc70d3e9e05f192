"""The skip gate: with PARE_NO_SKIPS=1 (or CI=true), a pytest session that
skipped or xfailed any test fails, listing each one, unless the test carries
`@pytest.mark.platform_limit("why")` (docs/testing.md, "Skips").

A skip usually hides something missing: a tool setup installs, an artifact
nobody built, a feature not written yet. Only a limit of the platform the
suite runs on (not of this checkout or this machine's setup) may skip.

tests/conftest.py registers this plugin; `-p tests.skip_gate` loads it alone
(tests/test_skip_gate.py runs it on throwaway test files that way).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import pytest

ENV_VAR = "PARE_NO_SKIPS"
MARKER = "platform_limit"
_PLUGIN_NAME = "pare_skip_gate"
_TRUE = ("1", "true", "yes", "on")


def gate_enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """PARE_NO_SKIPS decides when set (1/true or 0/false); otherwise CI=true turns the gate on."""
    value = environ.get(ENV_VAR, "").strip().lower()
    if value:
        return value in _TRUE
    return environ.get("CI", "").strip().lower() in _TRUE


def _marker_reason(marker: pytest.Mark) -> str:
    reason = marker.kwargs.get("reason", marker.args[0] if marker.args else "")
    return reason.strip() if isinstance(reason, str) else ""


def _skip_reason(report) -> str:
    # A skip's longrepr is (path, line, "Skipped: reason").
    if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        return str(report.longrepr[2])
    return str(report.longrepr)


class SkipGate:
    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.offenders: list[str] = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        # A platform limit without its reason is as opaque as a bare skip.
        for item in items:
            for marker in item.iter_markers(MARKER):
                if not _marker_reason(marker):
                    raise pytest.UsageError(
                        f"{item.nodeid}: @pytest.mark.{MARKER} needs a reason, e.g. "
                        f'@pytest.mark.{MARKER}("no KVM on macOS hosts") (docs/testing.md, Skips)'
                    )

    def pytest_collectreport(self, report):
        # A module skipped at import (module-level skip or importorskip)
        # never reaches its tests' markers, so it is never a platform limit.
        if report.skipped:
            self.offenders.append(f"SKIPPED {report.nodeid} (whole module): {_skip_reason(report)}")

    def pytest_runtest_logreport(self, report):
        if MARKER in report.keywords:
            return
        if hasattr(report, "wasxfail"):
            kind = "XPASS" if report.passed else "XFAIL"
            self.offenders.append(f"{kind} {report.nodeid}: {report.wasxfail or '(no reason)'}")
        elif report.skipped:
            self.offenders.append(f"SKIPPED {report.nodeid}: {_skip_reason(report)}")

    def pytest_sessionfinish(self, session):
        if (
            self.enabled
            and self.offenders
            and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
        ):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        if not (self.enabled and self.offenders):
            return
        tr = terminalreporter
        tr.section(f"{ENV_VAR}: skips that are not platform limits", sep="=", red=True, bold=True)
        for line in self.offenders:
            tr.line(line, red=True)
        tr.line(
            f"{len(self.offenders)} skipped/xfailed test(s) without @pytest.mark.{MARKER}: make each one run "
            f"(require what it needs), delete it, or mark a true platform limit (docs/testing.md, Skips)",
            red=True,
            bold=True,
        )


def register(config: pytest.Config) -> None:
    if config.pluginmanager.has_plugin(_PLUGIN_NAME):
        return
    config.addinivalue_line(
        "markers",
        f"{MARKER}(reason): this test may skip or xfail for a documented platform limit (docs/testing.md, Skips); "
        f"with {ENV_VAR}=1 or CI=true every other skip or xfail fails the session",
    )
    config.pluginmanager.register(SkipGate(gate_enabled()), _PLUGIN_NAME)


def pytest_configure(config: pytest.Config) -> None:
    register(config)
