"""The selections apps ship, built as their runtimes are and run on their models.

The demo's manifest and two zoo models' manifests (checked in), generated
into selection headers by codegen and built the way selective_runtime
builds an app's runtime (runtime_build.selected_objects: the selection
folded into the runtime's bitcode, so only what the manifest selects stays);
each model is then exported and checked against torch on that runtime.
`make test` runs it on plain builds; `make sanitize` (tools/sanitize.sh) on
ASan + UBSan builds, so what ships, not only the full runtime, runs under
the sanitizers (issue 46).

Not a Bazel suite: it reads the model specs and manifests of apps/ and
models/zoo/ from the checkout.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import runtime_build

import codegen
from tools.tracer import check_model
from tools.tracer.model_spec import load_model_spec

REPO = runtime_build.REPO
# (name, model spec, manifest): the demo, a depthwise-separable CNN with
# squeeze-excitation, and a recurrent sequence model.
SHIPPED = [
    ("demo", "apps/demo/model.py", "apps/demo/manifest.yaml"),
    ("mobilenet_v3_small", "models/zoo/mobilenet_v3_small.py", "models/zoo/manifests/mobilenet_v3_small.yaml"),
    ("lstm_tagger", "models/zoo/lstm_tagger.py", "models/zoo/manifests/lstm_tagger.yaml"),
]


def _selection_dir(root: Path, manifest: Path) -> Path:
    """codegen's selection headers for `manifest`, as the Bazel rule generates them."""
    inventory = codegen.load_inventory(REPO / "runtime" / "inventory")
    selection = codegen.resolve(codegen.load(manifest), inventory, allow_unknown_ops=False)
    root.mkdir(parents=True, exist_ok=True)
    codegen.write_outputs(root, codegen.render(selection))
    assert (root / "pare_selection" / "selected_ops.h").is_file()
    return root


@pytest.mark.parametrize("name,spec,manifest", SHIPPED, ids=[s[0] for s in SHIPPED])
def test_a_shipped_selection_runs_its_model_like_torch(selection_cache, name, spec, manifest):
    selection = _selection_dir(selection_cache / f"shipped_{name}_selection", REPO / manifest)
    lib = runtime_build.build(selection_cache, f"shipped_{name}", selection_dir=selection)
    checks = check_model(load_model_spec(REPO / spec), lib)
    assert checks and all(c.ok for c in checks), [c.line() for c in checks if not c.ok]
