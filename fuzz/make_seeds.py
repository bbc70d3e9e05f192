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

loader/ctl_*: a few of those programs followed by a control block
(loader_fuzzer.cc, fuzz/README.md), one per scenario in CONTROL_SCENARIOS,
so the fuzzer starts from inputs that already reach strided inputs, output
buffers, thread counts, planners, instruction-set caps and misuse;
`--controls-only` rewrites just these from the programs in the corpus.
"""

from __future__ import annotations

import dataclasses
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
    "tests/runtime/test_state.py",
    "tests/runtime/test_interpreter.py",
    # Delegate calls: the example backend's blobs, valid and corrupt.
    "tests/runtime/test_delegate_calls.py",
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
    """What a program exercises: its operators (mutations reach the dtypes), and state."""
    from pare import program

    try:
        info = program.read(data)
    except program.ProgramError:
        return set()
    state = {"state (format 1.2)"} if any(m.states for m in info.methods) else set()
    return {ins.op for m in info.methods for ins in m.instructions} | state


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


# The control block, in the order loader_fuzzer.cc reads it (its comments
# say what each byte's values mean): a program byte, then per method a flags
# byte, a planner byte and a thread-count byte, then per run a dynamic-size
# byte, a thread-count and a planner byte when the flags ask for them, one
# byte per output (at most 16) and one per input.
PROFILE, MISUSE_EARLY, THREADS_PER_RUN, PLANNER_PER_RUN = 1, 2, 16, 32
MISSING_METHOD = 8
CONTROL_PROGRAMS = ["export_demo.pare", "export_text_classifier_prepack.pare"]
SMALL_CONTROL_PROGRAMS = 4  # and this many of the smallest test programs with inputs and outputs


@dataclasses.dataclass(frozen=True)
class Scenario:
    program: int = 0
    flags: int = 0  # PROFILE | MISUSE_EARLY | extra runs << 2 | THREADS_PER_RUN | PLANNER_PER_RUN
    planner: int = 0
    threads: int = 0
    sizes: tuple[int, ...] = ()  # per run (0: the plain 2, 3, 2, ...)
    run_threads: tuple[int, ...] = ()
    run_planners: tuple[int, ...] = ()
    outputs: tuple[int, ...] = ()  # per run, every output's byte
    inputs: tuple[int, ...] = ()  # per run, cycled over the inputs (+ 16 * input index)


# Dynamic dims of 1, 2, 1 (the second run plans again, the third replays the
# first plan): the demo's [?, 3, 32, 32] input is small enough to run at 1.
SIZES = (2, 3, 2)
CONTROL_SCENARIOS = {
    # Padded, transposed, broadcast, all-zero and overlapping strides.
    "strided": Scenario(flags=3 << 2, sizes=SIZES, inputs=(2 | 1 << 4, 3, 4, 6)),
    "broadcast_scalar": Scenario(flags=1 << 2, sizes=SIZES, inputs=(5, 1)),
    # Bound exactly (64 bytes before the first run), one byte short, with slack, unbound.
    "output_buffers": Scenario(flags=3 << 2, sizes=SIZES, outputs=(1 | 4 << 3, 1, 2, 3)),
    "output_buffer_misuse": Scenario(flags=3 << 2, sizes=SIZES, outputs=(5, 6, 7, 4)),
    "threads_and_planners": Scenario(
        flags=PROFILE | THREADS_PER_RUN | PLANNER_PER_RUN | 3 << 2,
        planner=2,
        threads=2,
        sizes=SIZES,
        run_threads=(3, 4, 1, 5),
        run_planners=(1, 2, 3, 3 | 1 << 2),
    ),
    "empty_and_larger_dims": Scenario(flags=1 << 2, sizes=(1, 5, 3)),
    "baseline_kernels": Scenario(program=1, threads=3, sizes=SIZES),
    "misuse": Scenario(
        program=3 | MISSING_METHOD,
        flags=MISUSE_EARLY | 3 << 2,
        planner=3 | 2 << 2,
        threads=6,
        sizes=SIZES,
        inputs=(7, 8, 9, 10, 11, 12, 13, 14, 15, 15 | 1 << 4, 14 | 1 << 4),
    ),
}


def control_block(methods: list[tuple[int, int]], s: Scenario) -> bytes:
    """The block for scenario `s` on a program whose methods have these
    (inputs, outputs) counts."""
    out = [s.program]
    for inputs, outputs in methods[:8]:
        out += [s.flags, s.planner, s.threads]
        for r in range(2 + ((s.flags >> 2) & 3)):
            out.append(s.sizes[r] if r < len(s.sizes) else 0)
            if s.flags & THREADS_PER_RUN:
                out.append(s.run_threads[r % len(s.run_threads)])
            if s.flags & PLANNER_PER_RUN:
                out.append(s.run_planners[r % len(s.run_planners)])
            out += [s.outputs[r % len(s.outputs)] if s.outputs else 0] * min(outputs, 16)
            picks = s.inputs or (0,)
            out += [(picks[(r + i) % len(picks)] + 16 * i) & 0xFF for i in range(inputs)]
    return bytes(out)


def control_seeds(loader: Path) -> dict[str, bytes]:
    """ctl_<scenario>_<program>: CONTROL_PROGRAMS and the smallest test
    programs with inputs and outputs, each followed by every scenario's block."""
    from pare import program

    def io(data: bytes) -> list[tuple[int, int]]:
        return [(len(m.inputs), len(m.outputs)) for m in program.read(data).methods]

    tests = sorted(loader.glob("test_*.pare"), key=lambda p: (p.stat().st_size, p.name))
    bases = [loader / name for name in CONTROL_PROGRAMS]
    bases += [p for p in tests if all(i and o for i, o in io(p.read_bytes()))][:SMALL_CONTROL_PROGRAMS]
    seeds = {}
    for base in bases:
        data = base.read_bytes()
        for name, scenario in CONTROL_SCENARIOS.items():
            seeds[f"ctl_{name}_{base.stem}.pare"] = data + control_block(io(data), scenario)
    return seeds


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m fuzz.make_seeds", description="Regenerate the seed corpora in fuzz/corpus/ (checked in)."
    )
    parser.add_argument(
        "--keep-exports", action="store_true", help="reuse the exported app programs already in the corpus"
    )
    parser.add_argument(
        "--controls-only", action="store_true", help="rewrite only loader/ctl_* from the programs in the corpus"
    )
    args = parser.parse_args()
    loader = CORPUS / "loader"
    if args.controls_only:
        for old in loader.glob("ctl_*"):
            old.unlink()
        for name, data in control_seeds(loader).items():
            (loader / name).write_bytes(data)
        return _report()
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
    for name, data in control_seeds(loader).items():
        (loader / name).write_bytes(data)

    manifests = sorted((REPO / "tests/codegen/fixtures/manifests").glob("*.yaml"))
    manifests += sorted((REPO / "apps").glob("*/manifest.yaml"))
    for sub in ("manifest", "codegen"):
        (CORPUS / sub).mkdir()
    for path in manifests:
        name = path.name if "fixtures" in str(path) else f"app_{path.parent.name}.yaml"
        (CORPUS / "manifest" / name).write_bytes(path.read_bytes())
        for flag in (0, 1):  # codegen_target's first byte: allow_unknown_ops
            (CORPUS / "codegen" / f"{Path(name).stem}_{flag}.yaml").write_bytes(bytes([flag]) + path.read_bytes())

    return _report()


def _report() -> int:
    total = sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file())
    counts = {d.name: len(list(d.iterdir())) for d in sorted(CORPUS.iterdir())}
    print(f"fuzz/corpus: {counts}, {total} bytes")
    if total > MAX_CORPUS_BYTES:
        print(f"corpus is over {MAX_CORPUS_BYTES} bytes: lower MAX_PROGRAM_BYTES", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
