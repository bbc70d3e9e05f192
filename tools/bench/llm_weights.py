"""Decode and prefill speed of LLM specs side by side: Pare on each spec
(fp32 and weight-only int8 / int4 twins), optionally torch eager on the same
modules and llama.cpp on the float model's weights as GGUF (docs/llm.md,
"What is measured").

    taskset -c 1 python -m tools.bench.llm_weights models/llm/stories15m.py \\
        models/llm/stories15m_int8.py models/llm/stories15m_int4.py --torch --llama-cpp F32,Q8_0,Q4_0

Every system generates the same prompt (--prompt-tokens seeded tokens) and
--steps greedy tokens once per round, the systems interleaved within each
round; medians over --rounds, and ratios against the first spec on Pare.
ExecuTorch (tools/bench/executorch_llm.py, --executorch) prefills in one
call on a program with S dynamic and decodes on the faster of that program
and a static one-token one; its threadpool takes --threads.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tools.bench.llm_weights", description=__doc__.split("\n\n")[0])
    p.add_argument("specs", nargs="+", metavar="SPEC", help="LLM model specs; the first is the baseline")
    p.add_argument("--runtime", help="Pare runtime library (default: $PARE_RUNTIME_LIB)")
    p.add_argument("--prompt-tokens", type=int, default=64)
    p.add_argument("--steps", type=int, default=64)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--torch", action="store_true", help="also torch eager on each spec's module")
    p.add_argument("--llama-cpp", metavar="FORMATS", help="also llama.cpp on the first spec's weights: F32,Q8_0,Q4_0")
    p.add_argument("--executorch", action="store_true", help="also ExecuTorch + XNNPACK on each spec's module")
    p.add_argument(
        "--without",
        metavar="PASSES",
        help="also Pare on each spec exported without these graph passes (a comma list, e.g. fuse_attention: "
        "the program before that pass, on the same runtime)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    import torch

    from pare.generate import generate
    from pare.runtime import Runtime
    from tools.bench.llama_cpp_peer import FORMATS, LlamaCppPeer, write_gguf
    from tools.generate import TorchDecoder, prompt_of
    from tools.tracer import passes as graph_passes
    from tools.tracer.exporter import export_model
    from tools.tracer.model_spec import load_model_spec

    args = _parser().parse_args(argv)
    runtime = Runtime(args.runtime or os.environ["PARE_RUNTIME_LIB"])
    torch.set_num_threads(args.threads)
    systems = {}  # name -> callable(prompt, steps) -> (prefill s, decode tokens/s, tokens)
    specs = [load_model_spec(Path(s)) for s in args.specs]
    vocab = specs[0].module.config.vocab
    prompt = prompt_of(specs[0], args.prompt_tokens, vocab)
    try:
        without = graph_passes.resolve("default", skip=args.without) if args.without else None
    except graph_passes.UnknownPassError as e:
        print(f"error: --without: {e}", file=sys.stderr)
        return 2
    for spec in specs:
        for label, passes in ((spec.path.stem, "default"), (f"{spec.path.stem} -{args.without}", without)):
            if passes is None:
                continue
            method = runtime.load(export_model(spec, passes=passes).program).method()
            if args.threads > 1:
                method.set_num_threads(args.threads)

            def pare_run(p, n, method=method):
                g = generate(method, p, n)
                return g.prefill_seconds, g.decode_tokens_per_s, g.tokens

            systems[f"pare {label}"] = pare_run
        if args.torch:
            decoder = TorchDecoder(spec.module)

            def torch_run(p, n, decoder=decoder):
                g = decoder.generate(p, n)
                return g.prefill_seconds, g.decode_tokens_per_s, g.tokens

            systems[f"torch {spec.path.stem}"] = torch_run
    peers = []
    tmp = tempfile.TemporaryDirectory(prefix="pare-gguf-")
    for fmt in args.llama_cpp.split(",") if args.llama_cpp else []:
        if fmt not in FORMATS:
            print(f"error: --llama-cpp {fmt!r}: one of {', '.join(FORMATS)}", file=sys.stderr)
            return 2
        path = write_gguf(specs[0].module, Path(tmp.name) / f"model-{fmt}.gguf", fmt)
        try:
            peer = LlamaCppPeer(path, args.threads)
        except FileNotFoundError as e:
            print(f"error: --llama-cpp: {e}", file=sys.stderr)
            return 2
        peers.append(peer)

        def llama_run(p, n, peer=peer):
            r = peer.generate(p, n)
            return r["prefill_seconds"], (n - 1) / r["decode_seconds"], r["tokens"]

        systems[f"llama.cpp {fmt} ({path.stat().st_size / 1e6:.1f} MB)"] = llama_run
    if args.executorch:
        from tools.bench.executorch_llm import ExecuTorchLlmPeer

        for spec in specs:
            peer = ExecuTorchLlmPeer(spec.path, args.threads)
            peers.append(peer)

            def et_run(p, n, peer=peer):
                r = peer.generate(p, n)
                return r["prefill_seconds"], (n - 1) / r["decode_seconds"], r["tokens"]

            systems[f"executorch+xnnpack {spec.path.stem} ({peer.program_bytes / 1e6:.1f} MB)"] = et_run
    results: dict[str, list] = {name: [] for name in systems}
    for r in range(args.rounds):
        for name, run in systems.items():
            results[name].append(run(prompt, args.steps))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    for peer in peers:
        peer.close()
    tmp.cleanup()
    base = None
    print(f"{'system':44} {'prefill ms':>10} {'decode tok/s':>12} {'x first':>8}  first tokens")
    for name, runs in results.items():
        prefill = statistics.median(x[0] for x in runs) * 1e3
        decode = statistics.median(x[1] for x in runs)
        base = base or decode
        print(f"{name:44} {prefill:10.2f} {decode:12.1f} {decode / base:8.2f}  {runs[0][2][:8]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
