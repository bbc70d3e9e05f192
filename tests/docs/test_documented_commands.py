"""Every command the user docs show is run by a test or by CI, or is marked
as an illustration (issue 42; the convention is in doc_commands.py).

COVERED names, for each command of an `sh` block in README.md or
docs/*.md, what runs it: a test (file::name, which must exist) or a step of
.ci/run (which must contain it). A command missing here fails, and so does
an entry no doc shows any more.
"""

from __future__ import annotations

import re

from tests.docs.doc_commands import REPO, blocks, sh_block, user_docs

CI_RUN = ".ci/run"
PIPELINE = "tests/docs/test_readme_pipeline.py::test_readme_pipeline_runs_as_written"
EXTERNAL = "tests/rules/test_external_workspace.py::example_bin"
COVERED = {
    # README.md: the two commands.
    "make demo": CI_RUN,
    "make test": CI_RUN,
    # README.md: the pipeline, run as written (prune on the demo).
    ".venv/bin/python -m tools.tracer trace apps/demo/model.py -o apps/demo/manifest.yaml": PIPELINE,
    "tools/bazel build //apps/demo:runtime --define ops=manifest.yaml": PIPELINE,
    "ls bazel-bin/apps/demo/runtime/": PIPELINE,
    "tools/bazel test //apps/demo:all": PIPELINE,
    ".venv/bin/python -m tools.size_diff report --bundle bazel-bin/apps/demo/runtime --markdown size.md": PIPELINE,
    "tools/bazel build //apps/demo:android_aar //apps/demo:ios_xcframework": PIPELINE,
    ".venv/bin/python -m tools.tracer check apps/demo/model.py --runtime "
    "bazel-bin/apps/demo/runtime/android_arm64/libpare_runtime.so": PIPELINE,
    ".venv/bin/python -m tools.prune models/bench/mobilenet_v2_224.py --target-latency 0.6 -o out/mbv2": PIPELINE,
    # docs/bazel.md: the external workspace (`bazel test //...` builds what `build //...` does, then tests).
    "cd examples/external_workspace": EXTERNAL,
    "../../tools/bazel build //...": EXTERNAL,
    "../../tools/bazel test //...": EXTERNAL,
    # docs/mobile.md: the app bundles, built by the pipeline's step 5 one at a time.
    "tools/bazel build //apps/demo:android_aar": PIPELINE,
    "tools/bazel build //apps/demo:ios_xcframework": PIPELINE,
}


def _sh_commands() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for doc in user_docs():
        for block in blocks(doc):
            if block.info == "sh":
                for command in block.commands():
                    found.setdefault(command, []).append(block.where)
    return found


def test_every_fenced_block_says_what_it_holds():
    untagged = [b.where for doc in user_docs() for b in blocks(doc) if not b.info]
    assert not untagged, (
        "fenced blocks without an info string: tag commands users run `sh` (a test must run them: COVERED in "
        "tests/docs/test_documented_commands.py), and synopses, output and long runs CI leaves out `text`:\n  "
        + "\n  ".join(untagged)
    )


def test_every_documented_command_is_run_by_a_test_or_ci():
    missing = {c: where for c, where in _sh_commands().items() if c not in COVERED}
    assert not missing, (
        "documented commands (sh blocks) that no test runs: add them to a test and to COVERED, or show them in a "
        "`text` block as an illustration:\n" + "\n".join(f"  {where[0]}: {c}" for c, where in missing.items())
    )


def test_no_stale_coverage_entries():
    stale = sorted(set(COVERED) - set(_sh_commands()))
    assert not stale, f"COVERED names commands no doc shows any more: {stale}"


def test_what_covers_a_command_exists():
    ci = (REPO / CI_RUN).read_text().splitlines()
    for command, by in COVERED.items():
        if by == CI_RUN:
            assert command in (line.strip() for line in ci), f"{CI_RUN} does not run `{command}`"
            continue
        path, name = by.split("::")
        text = (REPO / path).read_text()
        assert re.search(rf"^def {re.escape(name)}\(", text, re.M), f"{by} (covers `{command}`) does not exist"


def test_ci_runs_the_readme_commands_test_first():
    """.ci/run runs the README's two commands: the tests, then the main job
    (on a warm build)."""
    ci = [line.strip() for line in (REPO / CI_RUN).read_text().splitlines()]
    assert [line for line in ci if line in ("make test", "make demo")] == ["make test", "make demo"]
    readme = sh_block(REPO / "README.md", "Pare").commands()
    assert [c.split("#")[0].strip() for c in readme] == ["make demo", "make test"]
