"""Memory of N method instances sharing one loaded program (issue 12's
target: the weights of 4 instances within 5% of 1 instance's).

    .venv/bin/python -m tools.bench.instances [MODEL.py ...] [--instances N] [--runtime LIB]

Per model spec (default: torchvision MobileNetV2 and ResNet-18 from
models/zoo, and apps/demo): export it, load the program file once (the
runtime reads it into one buffer and uses the packed weights there in
place), then create 1, then N instances of its method, each run twice so it
holds its steady-state arena. Prints the program's bytes, each instance's
own bytes (value slots, plans, init results: persistent_bytes) and arena,
and the runtime memory other than arenas with N instances over that with 1,
from the runtime's own counters; then the growth from 1 to N instances as
counted (slots and arenas) and as the process's resident set grew, a
cross-check that nothing else (no weight copy) was allocated
(page-granular, so approximate). A
benchmark, never a test: tests/runtime/test_concurrency.py checks the
bytes with the recording PAL.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pare.runtime import PareError, Runtime
from tools.bench.runtimes import REPO_ROOT, default_runtime
from tools.bench.timing import BenchError
from tools.cli_parser import one_line_errors
from tools.tracer.errors import TracerError

PROG = "python -m tools.bench.instances"
DEFAULT_MODELS = (
    REPO_ROOT / "models/zoo/mobilenet_v2.py",
    REPO_ROOT / "models/zoo/resnet18.py",
    REPO_ROOT / "apps/demo/model.py",
)


def resident_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise BenchError("no VmRSS in /proc/self/status: the resident-set check needs Linux")


def measure(runtime: Runtime, path: Path, instances: int) -> dict:
    from tools.tracer.exporter import export_model
    from tools.tracer.model_spec import load_model_spec

    spec = load_model_spec(path)
    exported = export_model(spec)
    group = exported.groups[0]
    inputs = [t.numpy() for t in spec.inputs[group.indices[0]]]
    with tempfile.TemporaryDirectory() as tmp:
        program_file = Path(tmp) / "model.pare"
        program_file.write_bytes(exported.program)
        program = runtime.load_file(program_file)
        rss0 = resident_bytes()
        methods = []
        rows = {}
        for n in (1, instances):
            while len(methods) < n:
                method = program.method(group.name)
                method.run(*inputs)
                method.run(*inputs)
                methods.append(method)
            stats = [m.memory_stats() for m in methods]
            rows[n] = {
                "persistent_bytes": sum(s.persistent_bytes for s in stats),
                "arena_bytes": sum(s.arena_bytes for s in stats),
                "rss_bytes": resident_bytes() - rss0,
            }
        for m in methods:
            m.close()
        program.close()
    size = len(exported.program)
    one, many = rows[1], rows[instances]
    return {
        "model": str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path),
        "program_bytes": size,
        "instance_persistent_bytes": one["persistent_bytes"],
        "instance_arena_bytes": one["arena_bytes"],
        "non_arena_ratio": (size + many["persistent_bytes"]) / (size + one["persistent_bytes"]),
        "rss_growth_bytes": many["rss_bytes"] - one["rss_bytes"],
        "counted_growth_bytes": many["persistent_bytes"]
        + many["arena_bytes"]
        - one["persistent_bytes"]
        - one["arena_bytes"],
    }


@one_line_errors(BenchError, PareError, TracerError, prefix=f"{PROG}: error: ")
def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="*", type=Path, default=list(DEFAULT_MODELS), metavar="MODEL")
    p.add_argument("--instances", type=int, default=4, help="instances to compare with one (default 4)")
    p.add_argument(
        "--runtime",
        type=Path,
        default=default_runtime(),
        help="linux_x86_64 Pare runtime (default: $PARE_RUNTIME_LIB, else Bazel's //runtime:full)",
    )
    args = p.parse_args(argv)
    if args.instances < 2:
        raise BenchError(f"--instances must be at least 2, got {args.instances}")
    if not args.runtime.is_file():
        raise BenchError(f"no runtime at {args.runtime}: run `tools/bazel build //runtime:full` or pass --runtime")
    runtime = Runtime(args.runtime)
    n = args.instances
    print(f"runtime {args.runtime}; 1 and {n} instances of each model's method on one loaded program")
    print(
        f"{'model':<32} {'program B':>11} {'instance B':>11} {'arena B':>10} {f'non-arena {n}/1':>15} "
        f"{f'1->{n} counted B':>16} {f'1->{n} RSS B':>14}"
    )
    for path in args.models:
        r = measure(runtime, path.resolve(), n)
        print(
            f"{r['model']:<32} {r['program_bytes']:>11,} {r['instance_persistent_bytes']:>11,} "
            f"{r['instance_arena_bytes']:>10,} {r['non_arena_ratio']:>15.4f} {r['counted_growth_bytes']:>16,} "
            f"{r['rss_growth_bytes']:>14,}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
