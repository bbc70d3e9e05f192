"""python -m tools.generate MODEL.py: generation on Pare, optionally beside torch eager (docs/llm.md).

    python -m tools.generate models/llm/stories15m.py --prompt-tokens 64 --steps 64 --compare torch

Exports the spec, prefills the prompt (the spec's first representative
tokens, or --prompt-tokens N seeded tokens) and decodes --steps tokens
greedily (or sampled: --temperature T [--top-k K] [--seed S], the same
tokens for the same seed), printing the tokens, the prefill time and the
decode tokens/s.
With --compare torch it first checks Pare against torch eager in lockstep
(every step's logits within the float tolerance, greedy tokens equal except
at a near-tie), then times both in interleaved rounds; --compare also takes
executorch and llama.cpp-F32 / -Q8_0 / -Q4_0 (a comma list), timed in the
same rounds (tools/bench's workers; they decode greedily). Exit status: 0, 1 on
a mismatch with torch, 2 on a user error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tools.cli_parser import one_line_parser
from tools.generate import GenerateError

EXIT_MISMATCH = 1
EXIT_USER_ERROR = 2


def _parser() -> argparse.ArgumentParser:
    p = one_line_parser(GenerateError, see="python -m tools.generate --help")(
        prog="python -m tools.generate",
        description="Generation (greedy, or sampled with --temperature) with an LLM model spec on Pare, optionally beside torch eager (docs/llm.md).",
    )
    p.add_argument("model", metavar="MODEL", help="LLM model spec (.py; docs/llm.md)")
    p.add_argument("--runtime", metavar="LIB", help="Pare runtime library (default: $PARE_RUNTIME_LIB)")
    p.add_argument("--prompt-tokens", type=int, metavar="N", help="a prompt of N seeded tokens (default: the spec's)")
    p.add_argument(
        "--steps", "--max-new-tokens", dest="steps", type=int, default=32, metavar="N", help="new tokens (default 32)"
    )
    p.add_argument("--threads", type=int, default=1, metavar="N", help="threads for Pare and torch (default 1)")
    p.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        metavar="T",
        help="sample from softmax(logits / T) (default 0: greedy; --compare's check stays greedy)",
    )
    p.add_argument(
        "--top-k", type=int, metavar="K", help="sample among the K largest logits only (needs --temperature)"
    )
    p.add_argument(
        "--seed", type=int, default=0, metavar="S", help="the sampler's seed: the same seed, the same tokens"
    )
    p.add_argument(
        "--compare",
        type=_peers,
        default=(),
        metavar="PEERS",
        help=f"a comma list of {', '.join(PEERS)}: check against torch eager (torch), and time each beside Pare "
        "(executorch: ExecuTorch + XNNPACK on the same module; llama.cpp-*: the spec's weights as GGUF)",
    )
    p.add_argument("--rounds", type=int, default=3, metavar="N", help="timed rounds, interleaved (default 3)")
    p.add_argument("--rtol", type=float, help="the logits' rtol (default: the spec's TOLERANCE, else 1e-4)")
    p.add_argument("--atol", type=float, help="the logits' atol (default: the spec's TOLERANCE, else 1e-4)")
    p.add_argument("--json", metavar="FILE", help="write the tokens and timings as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    return p


PEERS = ("torch", "executorch", "llama.cpp-F32", "llama.cpp-Q8_0", "llama.cpp-Q4_0")


def _peers(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(","))
    unknown = [n for n in names if n not in PEERS]
    if unknown:
        raise argparse.ArgumentTypeError(f"invalid choice {unknown[0]!r} (choose from {', '.join(PEERS)})")
    return tuple(dict.fromkeys(names))


def _peer_runners(args, spec, threads: int, tmp: Path) -> tuple[dict, list]:
    """name -> callable(prompt, steps) -> (prefill s, decode tokens/s, tokens)
    for --compare's executorch and llama.cpp peers, and their workers to close."""
    runners, workers = {}, []
    for name in args.compare:
        try:
            if name == "executorch":
                from tools.bench.executorch_llm import ExecuTorchLlmPeer

                peer = ExecuTorchLlmPeer(spec.path, threads)
            elif name.startswith("llama.cpp-"):
                from tools.bench.llama_cpp_peer import LlamaCppPeer, write_gguf

                fmt = name.removeprefix("llama.cpp-")
                peer = LlamaCppPeer(write_gguf(spec.module, tmp / f"model-{fmt}.gguf", fmt), threads)
            else:
                continue
        except (FileNotFoundError, ValueError) as e:
            raise GenerateError(f"--compare {name}: {e}") from None
        workers.append(peer)

        def run(p, n, peer=peer):
            r = peer.generate(p, n)
            return r["prefill_seconds"], (n - 1) / r["decode_seconds"] if n > 1 else 0.0, r["tokens"]

        runners[name] = run
    return runners, workers


def _check_args(args) -> None:
    if args.steps < 1:
        raise GenerateError(f"--steps must be at least 1, got {args.steps}")
    if args.rounds < 1:
        raise GenerateError(f"--rounds must be at least 1, got {args.rounds}")
    if not 1 <= args.threads <= 64:
        raise GenerateError(f"--threads must be in [1, 64], got {args.threads}")
    if not (math.isfinite(args.temperature) and args.temperature >= 0):
        raise GenerateError(f"--temperature must be a finite number >= 0 (0: greedy), got {args.temperature}")
    if args.top_k is not None and args.top_k < 1:
        raise GenerateError(f"--top-k must be at least 1, got {args.top_k}")
    if args.top_k is not None and args.temperature == 0:
        raise GenerateError("--top-k needs --temperature > 0: without it generation is greedy")


def _runtime_path(args) -> Path:
    given = args.runtime or os.environ.get("PARE_RUNTIME_LIB")
    if not given:
        raise GenerateError(
            "no Pare runtime: pass --runtime LIB or set PARE_RUNTIME_LIB (e.g. a bundle of "
            "`tools/bazel build //runtime:full`)"
        )
    path = Path(given)
    if not path.is_file():
        raise GenerateError(f"{path}: no such runtime library; build it (tools/bazel build //runtime:full)")
    return path


def _rate(r: dict) -> str:
    return (
        f"prefill {r['prompt_tokens']} tokens {r['prefill_seconds'] * 1e3:.2f} ms, "
        f"decode {r['decode_tokens_per_s']:.1f} tokens/s"
    )


def _median_run(runs: list) -> dict:
    return {
        "tokens": runs[0].tokens,
        "prompt_tokens": runs[0].prompt_tokens,
        "prefill_seconds": statistics.median(g.prefill_seconds for g in runs),
        "prefill_tokens_per_s": statistics.median(g.prefill_tokens_per_s for g in runs),
        "decode_tokens_per_s": statistics.median(g.decode_tokens_per_s for g in runs),
    }


def _run(args) -> int:
    import torch

    from pare.generate import check_llm_method, generate
    from pare.runtime import Runtime
    from tools.generate import TorchDecoder, check_llm_spec, compare, prompt_of, tolerance
    from tools.tracer.exporter import export_model
    from tools.tracer.model_spec import load_model_spec
    from tools.tracer.progress import Progress

    _check_args(args)
    progress = Progress.silent() if args.quiet else Progress(prefix="generate: ")
    runtime_path = _runtime_path(args)
    spec = load_model_spec(args.model)
    check_llm_spec(spec)
    with progress.step(f"exporting {spec.path.name}"):
        program = export_model(spec).program
    runtime = Runtime(runtime_path)
    method = runtime.load(program).method()
    check_llm_method(method)
    if args.threads > 1:
        method.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    decoder = TorchDecoder(spec.module)
    vocab = decoder.step(spec.inputs[0][0].numpy(), spec.inputs[0][1].numpy()).shape[0]
    prompt = prompt_of(spec, args.prompt_tokens, vocab)
    report: dict = {"model": str(spec.path), "runtime": str(runtime_path), "threads": args.threads}
    status = 0
    if "torch" in args.compare:
        rtol, atol = tolerance(spec, args.rtol, args.atol)
        with progress.step(f"checking {args.steps} steps against torch eager"):
            check = compare(method, decoder, prompt, args.steps, rtol, atol)
        ties = f", near-ties at steps {check.near_ties}" if check.near_ties else ""
        if check.ok:
            print(
                f"check: {check.steps} steps match torch eager (logits max abs err {check.max_abs_err:.3g}, "
                f"rtol {rtol:g} atol {atol:g}{ties})"
            )
        else:
            print(f"check: MISMATCH after {check.steps} matching steps: {check.failure}")
            status = EXIT_MISMATCH
        report["check"] = {
            "ok": check.ok,
            "steps": check.steps,
            "near_ties": check.near_ties,
            "max_abs_err": check.max_abs_err,
            "failure": check.failure,
            "rtol": rtol,
            "atol": atol,
        }
    sampling = {"temperature": args.temperature, "top_k": args.top_k, "seed": args.seed}
    report["sampling"] = sampling
    pare_runs, torch_runs = [], []
    with tempfile.TemporaryDirectory(prefix="pare-generate-") as tmp:
        with progress.step(f"starting {', '.join(n for n in args.compare if n != 'torch') or 'no other peers'}"):
            runners, workers = _peer_runners(args, spec, args.threads, Path(tmp))
        peer_runs: dict[str, list] = {name: [] for name in runners}
        try:
            for r in range(args.rounds):
                with progress.step(f"round {r + 1}/{args.rounds}"):
                    pare_runs.append(generate(method, prompt, args.steps, **sampling))
                    if "torch" in args.compare:
                        torch_runs.append(decoder.generate(prompt, args.steps, **sampling))
                    for name, run in runners.items():
                        peer_runs[name].append(run(prompt, args.steps))
        finally:
            for worker in workers:
                worker.close()
    pare = _median_run(pare_runs)
    report.update(pare)
    print("tokens:", " ".join(map(str, pare["tokens"])))
    print(f"pare:  {_rate(pare)} (median of {args.rounds})")
    if torch_runs:
        eager = _median_run(torch_runs)
        report["torch"] = eager
        print(f"torch: {_rate(eager)} (median of {args.rounds})")
        decode_ratio = pare["decode_tokens_per_s"] / eager["decode_tokens_per_s"]
        prefill_ratio = eager["prefill_seconds"] / pare["prefill_seconds"]
        report["pare_over_torch"] = {"decode_tokens_per_s": decode_ratio, "prefill_speed": prefill_ratio}
        print(f"pare / torch: decode tokens/s {decode_ratio:.2f}x, prefill speed {prefill_ratio:.2f}x")
    for name, runs in peer_runs.items():
        peer = {
            "tokens": runs[0][2],
            "prefill_seconds": statistics.median(x[0] for x in runs),
            "decode_tokens_per_s": statistics.median(x[1] for x in runs),
        }
        peer["pare_over_peer"] = {
            "decode_tokens_per_s": pare["decode_tokens_per_s"] / peer["decode_tokens_per_s"],
            "prefill_speed": peer["prefill_seconds"] / pare["prefill_seconds"],
        }
        report.setdefault("peers", {})[name] = peer
        print(
            f"{name}: prefill {peer['prefill_seconds'] * 1e3:.2f} ms, decode "
            f"{peer['decode_tokens_per_s']:.1f} tokens/s (median of {args.rounds}); pare / {name}: decode "
            f"tokens/s {peer['pare_over_peer']['decode_tokens_per_s']:.2f}x, prefill speed "
            f"{peer['pare_over_peer']['prefill_speed']:.2f}x"
        )
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        except OSError as e:
            raise GenerateError(f"{args.json}: cannot write ({e.strerror}); check the directory exists") from None
    return status


def main(argv: Sequence[str] | None = None) -> int:
    working_dir = os.environ.get("BUILD_WORKING_DIRECTORY")
    if working_dir:
        os.chdir(working_dir)
    from pare.runtime import PareError
    from tools.tracer.errors import TracerError

    try:
        args = _parser().parse_args(argv)
        return _run(args)
    except (GenerateError, TracerError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    except PareError as e:
        print(f"error: the Pare runtime failed: {e.status_name}: {e}", file=sys.stderr)
        return EXIT_USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
