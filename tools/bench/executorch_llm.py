"""ExecuTorch + XNNPACK as a peer of Pare's decoders (docs/llm.md, "Peers").

A worker in .venv-executorch exports the spec's module twice with
torch.export, lowers each with to_edge_transform_and_lower and the
XnnpackPartitioner, and then generates on request, one line each way:

    python -m tools.bench.executorch_llm --worker SPEC.py THREADS
    stdin:  {"prompt": [tokens], "steps": N}
    stdout: {"tokens": [...], "prefill_seconds": s, "decode_seconds": s,
             "static_tokens": [...], "static_decode_seconds": s}

- The dynamic program takes tokens int64 [1, S] and input_pos int64 [S] with
  S dynamic (1 to the model's cache length - 1), as ExecuTorch's own LLM
  export does with `enable_dynamic_shape`: the prompt is one call (a real
  prefill), then one token a call. `tokens`, `prefill_seconds` and
  `decode_seconds` are this program's.
- The static program has S = 1, the one shape a decode step needs, which
  XNNPACK runs a little faster than the dynamic program's: its prompt is fed
  one token a call (untimed), then its decode steps are timed
  (`static_decode_seconds`). A bench takes the faster of the two decodes, so
  ExecuTorch is measured at its best.

Both keep the KV cache in the module's buffers, which ExecuTorch keeps as
mutable state between calls. THREADS sizes ExecuTorch's threadpool
(`_unsafe_reset_threadpool`) and torch's. A weight-only spec
(pare.weight_only) keeps its dequantize ops, which XNNPACK does not take:
they run on ExecuTorch's quantized kernels.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tools.bench.line_worker import REPO, LineWorker

VENV = REPO / ".venv-executorch"


class ExecuTorchLlmPeer(LineWorker):
    """A worker process running one LLM spec on ExecuTorch + XNNPACK with
    `threads` threads. `program_bytes` is the dynamic program's size."""

    def __init__(self, spec_path: Path, threads: int = 1):
        python = VENV / "bin" / "python3"
        if not python.exists():
            raise FileNotFoundError(f"{python}: no ExecuTorch venv; run tools/setup_executorch.sh")
        super().__init__(
            python,
            "tools.bench.executorch_llm",
            [str(spec_path), str(threads)],
            f"the ExecuTorch worker ({spec_path})",
        )
        self.program_bytes = int(self.ready.split()[1])

    def generate(self, prompt: list[int], steps: int) -> dict:
        """The worker's answer, with `decode_seconds` the faster of its two
        programs' decodes (both give the same tokens, or this raises)."""
        r = super().generate(prompt, steps)
        if r["static_tokens"] != r["tokens"]:
            raise RuntimeError(f"{self.what}: the static and dynamic programs generated different tokens")
        r["decode_seconds"] = min(r["decode_seconds"], r["static_decode_seconds"])
        return r


def _worker(spec_path: str, threads: int) -> int:
    import torch

    torch.set_num_threads(threads)
    torch.set_grad_enabled(False)
    from tools.bench.executorch_worker import load_spec

    model, _, _ = load_spec(Path(spec_path))
    for p in model.parameters():
        p.requires_grad_(False)
    import executorch.kernels.quantized  # noqa: F401  (the dequantize ops' kernels)
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower
    from executorch.exir.passes import MemoryPlanningPass
    from executorch.extension.pybindings import portable_lib as runtime

    # The inputs outside the arena, so the ones set for a call stay valid through it.
    config = ExecutorchBackendConfig(memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False))

    def lower(example: tuple, dynamic_shapes=None) -> bytes:
        exported = torch.export.export(model, example, dynamic_shapes=dynamic_shapes)
        lowered = to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()])
        return lowered.to_executorch(config).buffer

    max_seq = getattr(getattr(model, "config", None), "max_seq", None)
    if not isinstance(max_seq, int):  # the first line is the reason LineWorker reports
        print(f"{spec_path}: the module has no config.max_seq (its KV cache's length; models/llm/_llm.py)", flush=True)
        return 1
    s = torch.export.Dim("s", min=1, max=max_seq - 1)
    dynamic = lower((torch.tensor([[0, 1]]), torch.tensor([0, 1])), ({1: s}, {0: s}))
    static = lower((torch.tensor([[0]]), torch.tensor([0])))
    runtime._unsafe_reset_threadpool(threads)
    methods = [runtime._load_program_from_buffer(b).load_method("forward") for b in (dynamic, static)]
    print("ready", len(dynamic), flush=True)

    def call(method, tokens: list[int], start: int) -> int:
        """Run `tokens` at positions start.. in one call; the next token (greedy)."""
        inputs = [torch.tensor([tokens]), torch.arange(start, start + len(tokens))]
        method.set_inputs(inputs)  # `inputs` stays alive through execute (not copied)
        method.execute()
        return int(torch.argmax(method.get_outputs()[0]))

    def decode(method, token: int, start: int, steps: int) -> tuple[list[int], float]:
        tokens = [token]
        t0 = time.perf_counter()
        for position in range(start, start + steps - 1):
            tokens.append(call(method, [tokens[-1]], position))
        return tokens, time.perf_counter() - t0

    for line in sys.stdin:
        req = json.loads(line)
        prompt, steps = req["prompt"], req["steps"]
        # Each round rewrites the cache rows a previous round left.
        t0 = time.perf_counter()
        first = call(methods[0], prompt, 0)
        prefill = time.perf_counter() - t0
        tokens, seconds = decode(methods[0], first, len(prompt), steps)
        for position, token in enumerate(prompt):
            first = call(methods[1], [token], position)
        static_tokens, static_seconds = decode(methods[1], first, len(prompt), steps)
        print(
            json.dumps(
                {
                    "tokens": tokens,
                    "prefill_seconds": prefill,
                    "decode_seconds": seconds,
                    "static_tokens": static_tokens,
                    "static_decode_seconds": static_seconds,
                }
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "--worker":
    sys.exit(_worker(sys.argv[2], int(sys.argv[3])))
