"""Regenerates the seed corpora in fuzz/corpus/ (checked in; run this only
when the program format or the test suites change a lot).

    .venv/bin/python -m fuzz.make_seeds

loader/: every program the runtime tests load (captured by running
tests/runtime/test_interpreter.py and the kernel families' tests in
tests/runtime/kernels/, for at most CAPTURE_SECONDS, with a pytest plugin
that records Runtime.load), reduced greedily to the smallest programs that
together cover every operator seen, plus the demo and text_classifier apps exported by tools.tracer (with
--passes=none and the default passes; `--keep-exports` reuses the ones in
the corpus, since exporting
takes a while). manifest/ and codegen/: the real
manifests (tests/codegen/fixtures/manifests, apps/*/manifest.yaml); codegen
seeds carry the target's leading flag byte. The whole corpus stays under
MAX_CORPUS_BYTES.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).absolute().parents[1]
CORPUS = REPO / "fuzz" / "corpus"
PYTHON = REPO / ".venv" / "bin" / "python"
MAX_CORPUS_BYTES = 1_000_000
MAX_PROGRAM_BYTES = 64 * 1024
# The op tests load thousands of programs; a few minutes of them cover the
# operators well, and a loaded machine should not make this take an hour.
CAPTURE_SECONDS = 600
CAPTURED_TESTS = [
    "tests/runtime/test_interpreter.py",
    "tests/runtime/kernels/test_prepacked.py",
    "tests/runtime/kernels/test_nn.py",
    "tests/runtime/kernels/test_indexing.py",
    "tests/runtime/kernels/test_reduction.py",
    "tests/runtime/kernels/test_linalg.py",
    "tests/runtime/kernels/test_conversion.py",
    "tests/runtime/kernels/test_softmax.py",
    "tests/runtime/kernels/test_unary_math.py",
    "tests/runtime/kernels/test_binary_math.py",
]
EXPORTED_MODELS = ["apps/demo/model.py", "apps/text_classifier/model.py"]

# A pytest plugin (loaded with -p) that saves every program loaded.
CAPTURE_PLUGIN = """
import hashlib, os
from pathlib import Path
from pare import runtime as _rt
_out = Path(os.environ["PARE_SEED_CAPTURE"])
_load = _rt.Runtime.load
def _capturing_load(self, data, **kw):
    data = bytes(data)
    (_out / hashlib.sha1(data).hexdigest()).write_bytes(data)
    return _load(self, data, **kw)
_rt.Runtime.load = _capturing_load
"""


def _features(data: bytes) -> set[str]:
    """What a program exercises: its operators (mutations reach the dtypes)."""
    from pare import program

    try:
        info = program.read(data)
    except program.ProgramError:
        return set()
    return {ins.op for m in info.methods for ins in m.instructions}


def captured_programs() -> list[bytes]:
    with tempfile.TemporaryDirectory() as tmp:
        plugin_dir = Path(tmp) / "plugin"
        plugin_dir.mkdir()
        (plugin_dir / "pare_seed_capture.py").write_text(CAPTURE_PLUGIN)
        out = Path(tmp) / "programs"
        out.mkdir()
        env = {**__import__("os").environ, "PARE_SEED_CAPTURE": str(out), "PYTHONPATH": f"{plugin_dir}:{REPO}"}
        try:
            subprocess.run(
                [str(PYTHON), "-m", "pytest", "-q", "-x", "-p", "pare_seed_capture", *CAPTURED_TESTS],
                cwd=REPO,
                env=env,
                check=False,
                timeout=CAPTURE_SECONDS,
            )
        except subprocess.TimeoutExpired:
            print(f"capture stopped after {CAPTURE_SECONDS}s: seeds from the tests run so far", file=sys.stderr)
        return [p.read_bytes() for p in sorted(out.iterdir())]


def reduce_programs(programs: list[bytes]) -> list[bytes]:
    """Smallest first, keep a program only when it adds a feature."""
    covered: set[str] = set()
    kept = []
    for data in sorted(programs, key=lambda d: (len(d), d)):
        if len(data) > MAX_PROGRAM_BYTES:
            continue
        new = _features(data) - covered
        if new:
            covered |= new
            kept.append(data)
    return kept


def exported_programs() -> dict[str, bytes]:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for model in EXPORTED_MODELS:
            # No graph passes, and the default ones (weights packed ahead of
            # time, fused epilogues).
            for suffix, passes in (("", "none"), ("_prepack", "default")):
                name = Path(model).parent.name + suffix
                path = Path(tmp) / f"{name}.pare"
                subprocess.run(
                    [str(PYTHON), "-m", "tools.tracer", "export", "-q", f"--passes={passes}", "-o", str(path), model],
                    cwd=REPO,
                    check=True,
                )
                out[f"export_{name}.pare"] = path.read_bytes()
    return out


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m fuzz.make_seeds", description="Regenerate the seed corpora in fuzz/corpus/ (checked in)."
    )
    parser.add_argument(
        "--keep-exports", action="store_true", help="reuse the exported app programs already in the corpus"
    )
    args = parser.parse_args()
    loader = CORPUS / "loader"
    exports = (
        {p.name: p.read_bytes() for p in loader.glob("export_*.pare")} if args.keep_exports else exported_programs()
    )
    if CORPUS.exists():
        shutil.rmtree(CORPUS)
    loader.mkdir(parents=True)
    for name, data in exports.items():
        (loader / name).write_bytes(data)
    for data in reduce_programs(captured_programs()):
        (loader / f"test_{hashlib.sha1(data).hexdigest()[:12]}.pare").write_bytes(data)

    manifests = sorted((REPO / "tests/codegen/fixtures/manifests").glob("*.yaml"))
    manifests += sorted((REPO / "apps").glob("*/manifest.yaml"))
    for sub in ("manifest", "codegen"):
        (CORPUS / sub).mkdir()
    for path in manifests:
        name = path.name if "fixtures" in str(path) else f"app_{path.parent.name}.yaml"
        (CORPUS / "manifest" / name).write_bytes(path.read_bytes())
        for flag in (0, 1):  # codegen_target's first byte: allow_unknown_ops
            (CORPUS / "codegen" / f"{Path(name).stem}_{flag}.yaml").write_bytes(bytes([flag]) + path.read_bytes())

    total = sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file())
    counts = {d.name: len(list(d.iterdir())) for d in sorted(CORPUS.iterdir())}
    print(f"fuzz/corpus: {counts}, {total} bytes")
    if total > MAX_CORPUS_BYTES:
        print(f"corpus is over {MAX_CORPUS_BYTES} bytes: lower MAX_PROGRAM_BYTES", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
