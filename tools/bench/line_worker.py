"""A peer benchmark's worker process in another venv (ExecuTorch's,
llama.cpp's), speaking one JSON line per request: the LLM peers of
tools/bench/llm_weights.py start one per model and interleave its rounds
with Pare's.

    the worker, on start:  "ready[ ...]"  (or a one-line reason it is not)
    stdin:   {"prompt": [tokens], "steps": N}
    stdout:  {"tokens": [...], "prefill_seconds": s, "decode_seconds": s}
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


class LineWorker:
    """`python -m MODULE --worker ARGS...` in the venv of `python`, this
    checkout's modules on its path and nothing of this process's venv;
    `what` names the peer in errors. `ready` is the worker's first line."""

    def __init__(self, python: Path, module: str, args: list[str], what: str):
        self.what = what
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        env["PYTHONPATH"] = str(REPO)
        self.proc = subprocess.Popen(
            [str(python), "-m", module, "--worker", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.ready = self.proc.stdout.readline()
        if not self.ready.startswith("ready"):
            raise RuntimeError(f"{what} failed to start: {self.ready.strip() or 'no answer'}")

    def generate(self, prompt: list[int], steps: int) -> dict:
        self.proc.stdin.write(json.dumps({"prompt": prompt, "steps": steps}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.what} died")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
