"""The model zoo's fast subset (docs/model_zoo.md), run by make test.

`make zoo` runs every model; tests/zoo/test_zoo_end_to_end.py runs a few
small ones through the same runner end to end. Here: the zoo's specs,
manifests and record agree, the models that found a failure class have
their checked-in manifests re-traced, and the runner's errors.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT
from tools.tracer.progress import Progress
from tools.zoo import report, zoo

RETRACED = ["convnext_tiny", "lraspp_mobilenet_v3_large", "mha_padding_mask"]


def test_every_spec_has_a_manifest_and_a_kind():
    specs = zoo.discover()
    assert len(specs) >= 30
    manifests = {p.stem for p in (zoo.zoo_dir() / "manifests").glob("*.yaml")}
    assert {p.stem for p in specs} == manifests
    kinds = {zoo.spec_metadata(p)[0] for p in specs}
    # Exactly the kinds models/zoo/README.md lists: a misspelt or missing KIND fails.
    assert kinds == {
        "classification",
        "detection",
        "segmentation",
        "image-to-image",
        "video",
        "sequence",
        "recommendation",
        "point cloud",
        "graph",
        "audio",
        "language model",
    }


def test_the_checked_in_record_covers_the_zoo_and_the_doc_shows_it():
    record = report.load_record(zoo.zoo_dir() / "results.json")
    assert set(record["models"]) == {p.stem for p in zoo.discover()}
    doc = (REPO_ROOT / "docs" / "model_zoo.md").read_text()
    assert report.table(record) in doc


@pytest.mark.parametrize("model", RETRACED)
def test_checked_in_manifest_is_current(model):
    path = zoo.zoo_dir() / f"{model}.py"
    traced = zoo.trace_one(path, Progress.silent(), zoo.zoo_dir() / "manifests", frozen=True)
    assert isinstance(traced, zoo._Traced), f"{traced.status}: {traced.error}"


def test_unknown_model_is_a_usage_error_listing_the_zoo():
    proc = subprocess.run(
        [sys.executable, "-m", "tools.zoo", "--only", "resnet19", "--no-record"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "no zoo model resnet19; the zoo has" in proc.stderr and "resnet18" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_failing_step_is_a_row_not_a_crash(tmp_path):
    (tmp_path / "models" / "zoo").mkdir(parents=True)
    (tmp_path / "models" / "zoo" / "broken.py").write_text('"""Broken."""\nKIND = "sequence"\nraise ImportError("x")\n')
    results = zoo.run(None, root=tmp_path, progress=Progress.silent(), timing=False)
    (r,) = results
    assert (r.model, r.kind, r.status) == ("broken", "sequence", "trace failed")
    assert "importing the model spec raised ImportError" in r.error


def test_build_errors_are_attributed_to_their_model():
    errors = [
        "ERROR: /w/models/zoo/BUILD.bazel:13:23: C++ compilation of rule '//models/zoo:resnet18_selection_unit' failed",
        "ERROR: //models/zoo:mobilenet_v3_small: linking failed",
    ]
    failed = zoo.failed_models(["resnet18", "resnet1", "mobilenet_v3", "mobilenet_v3_small"], errors, 1)
    assert failed == {"resnet18": errors[0], "mobilenet_v3_small": errors[1]}
    assert zoo.failed_models(["resnet18"], errors, 0) == {}
    # An error naming no model (the server died): every model failed, with it.
    assert zoo.failed_models(["a", "b"], ["ERROR: server crashed"], 1) == {
        "a": "ERROR: server crashed",
        "b": "ERROR: server crashed",
    }


def test_a_zoo_run_keeps_the_arm64_estimate():
    # python -m tools.bench.arm64_cost --record writes each model's "arm64"; make zoo keeps it.
    record = {"models": {"resnet18": {"model": "resnet18", "arm64": {"cycles": {"cortex-a55": 1}}}}}
    merged = report.merge(record, [zoo.ModelResult("resnet18", "classification", "ResNet-18")], ["resnet18"])
    assert merged["models"]["resnet18"]["arm64"] == {"cycles": {"cortex-a55": 1}}
    assert merged["models"]["resnet18"]["kind"] == "classification"
