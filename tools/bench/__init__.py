"""Benchmarks: speed claims measured side by side, outside the test suite.

Tests never assert on elapsed time (it depends on the machine and its load);
each module here measures one claim and prints numbers for a person to read.

    python -m tools.bench MODEL.py ...        Pare vs torch eager and ExecuTorch (portable, XNNPACK) per
                                              model (models.py; docs/performance.md)
    python -m tools.bench.sgemm               float32 GEMM GFLOP/s against one core's peak
    python -m tools.bench.run_overhead        what Method.run() adds over execute()
    python -m tools.bench.prepacked_linear    prepacked linear vs addmm

`timing.py` holds what they share: pinning, interleaved rounds, medians.
ExecuTorch runs in its own venv: `executorch_worker.py` there, driven by
`executorch_peer.py` here.
"""
