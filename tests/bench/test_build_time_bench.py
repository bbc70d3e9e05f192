"""python -m tools.bench.build_time: the edit it makes is a valid manifest
that selects one more operator, it counts the actions Bazel's profile shows,
bad arguments are one-line errors (never how long a build takes: that is
the benchmark's job, and it runs Bazel for minutes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen import manifest as codegen_manifest
from tools.bench import build_time
from tools.bench.timing import BenchError

DEMO = Path(__file__).absolute().parents[2] / "apps/demo/manifest.yaml"


def test_the_edit_adds_sigmoid_and_its_float_kernel_and_nothing_else():
    before = codegen_manifest.loads(DEMO.read_text())
    after = codegen_manifest.loads(build_time.add_sigmoid(DEMO.read_text()))
    assert set(after.operators) - set(before.operators) == {"aten::sigmoid"}
    assert not after.operators["aten::sigmoid"].include_all_overloads
    assert after.kernel_metadata == {**before.kernel_metadata, "sigmoid_kernel": ("Float",)}
    assert (after.custom_classes, after.build_features) == (before.custom_classes, before.build_features)


def test_the_edit_keeps_other_dtypes_of_the_tag():
    text = "operators:\n  aten::relu: {}\nkernel_metadata:\n  sigmoid_kernel: [Double]\n"
    after = codegen_manifest.loads(build_time.add_sigmoid(text))
    assert after.kernel_metadata["sigmoid_kernel"] == ("Double", "Float")


@pytest.mark.parametrize(
    "text,message",
    [
        ("operators:\n  aten::sigmoid: {}\n", "already selects aten::sigmoid"),
        ("include_all_operators: true\noperators: {}\n", "already selects aten::sigmoid"),
        ("operators: [1, 2\n", "apps/demo/manifest.yaml"),
    ],
)
def test_an_edit_that_cannot_apply_is_a_bench_error(text, message):
    with pytest.raises(BenchError, match=message):
        build_time.add_sigmoid(text)


def test_actions_and_compiles_are_counted_from_the_profile(tmp_path):
    events = [
        {"cat": "action processing", "name": "Compiling runtime/core/tensor.cc", "dur": 10},
        {"cat": "action processing", "name": "Compiling runtime/core/memory.cc", "dur": 10},
        {"cat": "action processing", "name": "Linking libpare_runtime.so", "dur": 10},
        {"cat": "action dependency checking", "name": "Compiling runtime/core/tensor.cc"},
        {"cat": "build phase marker", "name": "Execution"},
    ]
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"otherData": {}, "traceEvents": events}))
    assert build_time.count_actions(profile) == (3, 2)
    profile.write_text("{not json")
    with pytest.raises(BenchError, match="cannot read Bazel's profile .*profile.json"):
        build_time.count_actions(profile)


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--rounds", "0"], "--rounds 0: at least 1"),
        (["--scenarios", "cold,warm"], "--scenarios 'cold,warm': choose from cold, second, edit, four"),
        (["--scenarios", ","], "choose from"),
        (["--rev", "no-such-revision-anywhere"], "--rev no-such-revision-anywhere: not a commit"),
    ],
)
def test_bad_arguments_are_one_line_errors(argv, message, capsys):
    assert build_time.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("build_time: ") and message in err and err.count("\n") == 1
