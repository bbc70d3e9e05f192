"""Every entry point starts the same way (issue 42).

The one bootstrap (docs/testing.md, "Entry points"): a Python entry point is
a module of the repository's packages, started as `python -m PACKAGE.MODULE`
from the repository root; the Makefile and the shell scripts change into the
root first; under Bazel, py_binary's launcher puts the workspace's runfiles
on sys.path. No entry point edits sys.path itself, so none can work one way
and fail another (`python tools/main_job.py` failed on every fresh clone
while `python -m` worked).
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.docs.doc_commands import REPO

PACKAGES = ("tools", "codegen", "pare", "fuzz")
PYTHON = REPO / ".venv" / "bin" / "python"
EXECUTORCH_PYTHON = REPO / ".venv-executorch" / "bin" / "python"
# Modules that run in the ExecuTorch venv (tools/bench/executorch_peer.py starts them there).
EXECUTORCH_MODULES = {"tools.bench.executorch_worker"}
# Loading a *user's* file (a model spec, a data file, a pruned spec) puts
# that file's folder on sys.path so it may import its neighbours: that is the
# spec's contract (docs/model_spec.md), not a bootstrap.
SPEC_LOADERS = {
    "tools/tracer/model_spec.py": "a model spec may import its neighbours",
    "tools/prune/data.py": "a --data file may import its neighbours",
    "tools/bench/executorch_worker.py": "a model spec may import its neighbours (in the ExecuTorch venv)",
    "tools/prune/saved.py": "the pruned model.py it writes imports tools.prune from the checkout it came from",
}


def _entry_points() -> list[str]:
    modules = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            text = path.read_text()
            if path.name != "__main__.py" and 'if __name__ == "__main__":' not in text:
                continue
            parts = path.relative_to(REPO).with_suffix("").parts
            modules.append(".".join(parts[:-1] if path.name == "__main__.py" else parts))
    return modules + ["tests.runtime.runtime_build"]  # tools/sanitize.sh runs it


def _help(module: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    python = EXECUTORCH_PYTHON if module in EXECUTORCH_MODULES else PYTHON
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    return subprocess.run(
        [str(python), "-m", module, "--help"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_entry_points_are_found():
    modules = _entry_points()
    for expected in ("tools.main_job", "tools.tracer", "tools.verify", "tools.size_diff", "tools.zoo", "codegen"):
        assert expected in modules
    assert len(modules) >= 25, modules


def test_every_entry_point_answers_help_from_the_repository_root():
    """`python -m MODULE --help` from the root, as the docs say: the module
    imports its packages and answers with its usage (exit 0)."""
    modules = _entry_points()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(modules, pool.map(_help, modules)))
    bad = {
        m: (p.returncode, (p.stderr.strip().splitlines() or ["(no output)"])[-1])
        for m, p in results.items()
        if p.returncode != 0 or "usage" not in p.stdout.lower()
    }
    assert not bad, "entry points that do not answer --help from the repository root:\n" + "\n".join(
        f"  python -m {m} --help: exit {rc}: {line}" for m, (rc, line) in bad.items()
    )


def test_no_entry_point_edits_sys_path():
    offenders = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            rel = str(path.relative_to(REPO))
            if rel in SPEC_LOADERS:
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if re.search(r"\bsys\.path\b", line) and not line.lstrip().startswith("#"):
                    offenders.append(f"{rel}:{n}: {line.strip()}")
    assert not offenders, (
        "sys.path edited outside the spec loaders: start the entry point with `python -m` from the repository "
        "root instead (docs/testing.md, 'Entry points'):\n" + "\n".join(offenders)
    )


SCRIPT_RUN = re.compile(r"(?:python3?|\$\(PYTHON\)|\$python|\"\$python\")\s+(?!-m\b|-c\b)(\S+\.py)\b")


def test_scripts_run_python_entry_points_as_modules():
    """The Makefile, .ci/run and tools/*.sh start Python as `python -m`, never `python path/file.py`."""
    files = [REPO / "Makefile", REPO / ".ci" / "run", *sorted((REPO / "tools").glob("*.sh"))]
    files += sorted((REPO / "tools").glob("*/*.sh"))
    offenders = [
        f"{f.relative_to(REPO)}:{n}: {line.strip()}"
        for f in files
        for n, line in enumerate(f.read_text().splitlines(), 1)
        if SCRIPT_RUN.search(line) and not line.lstrip().startswith("#")
    ]
    assert not offenders, "run these as `python -m PACKAGE.MODULE`:\n" + "\n".join(offenders)


@pytest.mark.parametrize("how", ["-C", "-f"])
def test_make_recipes_run_from_any_directory(tmp_path, how):
    """`make -C ROOT demo` and `make -f ROOT/Makefile demo` from elsewhere:
    every recipe changes into the root, and its Python commands import."""
    where = ["-C", str(REPO)] if how == "-C" else ["-f", str(REPO / "Makefile")]
    targets = ["setup", "demo", "test", "sanitize", "fuzz", "zoo", "lint"]
    dry = subprocess.run(["make", "-n", *where, *targets], cwd=tmp_path, capture_output=True, text=True, check=True)
    recipes = [line for line in dry.stdout.splitlines() if line and not line.startswith("make")]
    assert len(recipes) >= len(targets)
    for line in recipes:
        assert line.startswith(f'cd "{REPO}" && '), f"a recipe that does not start in the repository root: {line}"
    python = [line for line in recipes if " -m " in line and ".venv/bin/python" in line]
    assert {line.split(" -m ")[1].split()[0] for line in python} >= {"tools.main_job", "tools.zoo"}
    for line in python:
        proc = subprocess.run(["bash", "-c", f"{line} --help"], cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode == 0 and "usage" in proc.stdout, f"{line} --help from {tmp_path}: {proc.stderr[-2000:]}"


def test_a_script_run_as_a_file_is_what_fails():
    """What the bootstrap prevents, shown: the old Makefile line fails, the
    module form works (a guard that the tests above test the right thing)."""
    as_file = subprocess.run([str(PYTHON), "tools/main_job.py", "--help"], cwd=REPO, capture_output=True, text=True)
    assert as_file.returncode != 0 and "No module named 'tools'" in as_file.stderr
    assert _help("tools.main_job").returncode == 0
