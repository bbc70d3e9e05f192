"""Pare's own memory while an LLM generates, against issue 48's bound: at
most the weights plus the KV cache plus 10%, the weights held once however
many instances run (docs/llm.md, "Memory while generating").

    python -m tools.bench.llm_memory models/llm/stories15m.py models/llm/stories15m_int8.py [--instances 2]

Per spec: export it, load the program into the runtime (a copy: its bytes
are the runtime's own), then on each of 1..N method instances generate
--prompt-tokens seeded tokens' prefill and --steps greedy decode steps. The
runtime is the full one linked with the recording PAL
(runtime/pal/pal_test_double.cc, //runtime:full_test_double), whose counter
sees every byte Pare allocates: the program, each instance's value slots,
state, plans and arena, the planning runs' blocks. Prints the weights (the
module's parameters and buffers but its state), the KV cache (the method's
state), the peak and the bytes held after the last step, and the peak over
weights + N x KV cache. A benchmark, never a test: tests/llm/test_memory.py
asserts the bound on a smaller model.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from tools.bench.runtimes import REPO_ROOT

PROG = "python -m tools.bench.llm_memory"
TEST_DOUBLE_RUNTIME = REPO_ROOT / "bazel-bin/runtime/full_test_double/linux_x86_64/libpare_full_test_double.so"
BOUND = 1.10  # issue 48: weights + KV cache + 10%


class PalStats(ctypes.Structure):
    """pare_test_pal_stats_t (runtime/pal/pal_test_double.cc)."""

    _fields_ = [
        (n, ctypes.c_uint64)
        for n in ("malloc_calls", "free_calls", "failed_mallocs", "live_blocks", "live_bytes", "peak_bytes")
    ] + [("log_calls", ctypes.c_uint64), ("abort_calls", ctypes.c_uint64), ("last_log", ctypes.c_char * 256)]


def pal_stats(runtime) -> PalStats:
    lib = runtime._lib
    if not hasattr(lib, "pare_test_pal_stats"):
        raise ValueError(
            f"{runtime.path} has no recording PAL (pare_test_pal_stats): pass the full runtime linked with it, "
            "`tools/bazel build //runtime:full_test_double`"
        )
    s = PalStats()
    lib.pare_test_pal_stats(ctypes.byref(s))
    return s


def weight_bytes(module, state_names: Sequence[str]) -> int:
    """The module's parameters and buffers but those the method keeps as state."""
    state = set(state_names)
    tensors = [p for _, p in module.named_parameters()]
    tensors += [b for n, b in module.named_buffers() if n not in state]
    return sum(t.numel() * t.element_size() for t in tensors)


def measure(runtime, program: bytes, module, prompt: Sequence[int], steps: int, instances: int) -> list[dict]:
    """Generates on 1..`instances` instances of the program's method, one
    after another, all kept alive; a row per instance count: the bytes the
    runtime held at its peak and after the generation, with the weights and
    the KV cache they are held against."""
    from pare.generate import generate

    runtime._lib.pare_test_pal_reset()  # the peak restarts at what is live now
    base = pal_stats(runtime).live_bytes
    loaded = runtime.load(program)
    program_bytes = pal_stats(runtime).live_bytes - base
    methods, rows = [], []
    try:
        for n in range(1, instances + 1):
            method = loaded.method()
            methods.append(method)
            generate(method, list(prompt), steps)
            names = method.state_names
            kv = sum(method.state(name).nbytes for name in names)
            weights = weight_bytes(module, names)
            s = pal_stats(runtime)
            rows.append(
                {
                    "instances": n,
                    "weights_bytes": weights,
                    "kv_cache_bytes": kv,
                    "program_bytes": program_bytes,
                    "peak_bytes": s.peak_bytes - base,
                    "held_bytes": s.live_bytes - base,
                    "instance_bytes": [
                        m.memory_stats().persistent_bytes + m.memory_stats().arena_bytes for m in methods
                    ],
                    "ratio": (s.peak_bytes - base) / (weights + n * kv),
                }
            )
    finally:
        for m in methods:
            m.close()
        loaded.close()
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    from pare.runtime import PareError, Runtime
    from tools.generate import prompt_of
    from tools.tracer.errors import TracerError
    from tools.tracer.exporter import export_model
    from tools.tracer.model_spec import load_model_spec

    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("specs", nargs="+", type=Path, metavar="SPEC", help="LLM model specs")
    p.add_argument("--instances", type=int, default=2, help="instances of each method, kept alive together")
    p.add_argument("--prompt-tokens", type=int, default=64)
    p.add_argument("--steps", type=int, default=64, help="decode steps after the prefill")
    p.add_argument(
        "--runtime",
        type=Path,
        default=Path(os.environ.get("PARE_TEST_DOUBLE_RUNTIME_LIB") or TEST_DOUBLE_RUNTIME),
        help="the full runtime with the recording PAL (default: $PARE_TEST_DOUBLE_RUNTIME_LIB, else Bazel's "
        "//runtime:full_test_double)",
    )
    args = p.parse_args(argv)
    try:
        if args.instances < 1:
            raise ValueError(f"--instances must be at least 1, got {args.instances}")
        if not args.runtime.is_file():
            raise ValueError(
                f"no runtime at {args.runtime}: run `tools/bazel build //runtime:full_test_double` or pass --runtime"
            )
        runtime = Runtime(args.runtime)
        pal_stats(runtime)
        print(f"runtime {args.runtime}; prefill {args.prompt_tokens} tokens, {args.steps} decode steps per instance")
        print(
            f"{'spec':<28} {'inst':>4} {'weights B':>12} {'KV cache B':>11} {'program B':>12} {'peak B':>12} "
            f"{'held B':>12} {'peak/(W+n*KV)':>14}"
        )
        for path in args.specs:
            spec = load_model_spec(path)
            prompt = prompt_of(spec, args.prompt_tokens, spec.module.config.vocab)
            program = export_model(spec).program
            for r in measure(runtime, program, spec.module, prompt, args.steps, args.instances):
                print(
                    f"{path.stem:<28} {r['instances']:>4} {r['weights_bytes']:>12,} {r['kv_cache_bytes']:>11,} "
                    f"{r['program_bytes']:>12,} {r['peak_bytes']:>12,} {r['held_bytes']:>12,} {r['ratio']:>14.4f}"
                    f"{'' if r['ratio'] <= BOUND else '  over the bound'}"
                )
    except (ValueError, PareError, TracerError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
