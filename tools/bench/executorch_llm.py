"""ExecuTorch + XNNPACK as a peer of Pare's decoders (docs/llm.md, "Peers").

A worker in .venv-executorch exports the spec's module with torch.export
for one token a call (tokens int64 [1, 1], input_pos int64 [1]; the KV cache
stays in the module's buffers, which ExecuTorch keeps as mutable state
between calls), lowers it with to_edge_transform_and_lower and the
XnnpackPartitioner, and then generates on request, one line each way:

    python -m tools.bench.executorch_llm --worker SPEC.py
    stdin:  {"prompt": [tokens], "steps": N}
    stdout: {"tokens": [...], "prefill_seconds": s, "decode_seconds": s}

The prompt is fed one token a call (the program has one static shape), so
its time is not a prefill's; the decode steps are what is compared. A
weight-only spec (pare.weight_only) keeps its dequantize ops, which
XNNPACK does not take: they run on ExecuTorch's quantized kernels.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tools.bench.line_worker import REPO, LineWorker

VENV = REPO / ".venv-executorch"


class ExecuTorchLlmPeer(LineWorker):
    """A worker process running one LLM spec on ExecuTorch + XNNPACK."""

    def __init__(self, spec_path: Path):
        python = VENV / "bin" / "python3"
        if not python.exists():
            raise FileNotFoundError(f"{python}: no ExecuTorch venv; run tools/setup_executorch.sh")
        super().__init__(python, "tools.bench.executorch_llm", [str(spec_path)], f"the ExecuTorch worker ({spec_path})")
        self.program_bytes = int(self.ready.split()[1])


def _worker(spec_path: str) -> int:
    import torch

    torch.set_num_threads(1)
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

    exported = torch.export.export(model, (torch.tensor([[0]]), torch.tensor([0])))
    lowered = to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()])
    # The inputs outside the arena, so the ones set for a call stay valid through it.
    config = ExecutorchBackendConfig(memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False))
    buffer = lowered.to_executorch(config).buffer
    runtime._unsafe_reset_threadpool(1)
    method = runtime._load_program_from_buffer(buffer).load_method("forward")
    print("ready", len(buffer), flush=True)

    def step(token: int, position: int) -> int:
        inputs = [torch.tensor([[token]]), torch.tensor([position])]
        method.set_inputs(inputs)
        method.execute()
        return int(torch.argmax(method.get_outputs()[0]))

    for line in sys.stdin:
        req = json.loads(line)
        prompt = req["prompt"]
        t0 = time.perf_counter()
        for position, token in enumerate(prompt):  # rewrites the cache rows a previous round left
            token = step(token, position)
        t1 = time.perf_counter()
        tokens = [token]
        for position in range(len(prompt), len(prompt) + req["steps"] - 1):
            tokens.append(step(tokens[-1], position))
        t2 = time.perf_counter()
        print(json.dumps({"tokens": tokens, "prefill_seconds": t1 - t0, "decode_seconds": t2 - t1}), flush=True)
    return 0


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--worker":
    sys.exit(_worker(sys.argv[2]))
