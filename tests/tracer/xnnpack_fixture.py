"""Runs in .venv-executorch, not the project venv: quantizes
tests/tracer/models/quantized_cnn.py's small CNN with ExecuTorch's XNNPACKQuantizer
(`get_symmetric_quantization_config(is_per_channel=True)`, the same seeded
calibration), exports the converted module and saves it with
torch.export.save, for tests/tracer/test_xnnpack_quantizer.py to load,
trace and check in the project venv; its inputs go to INPUTS.pt (torch.save).

    .venv-executorch/bin/python tests/tracer/xnnpack_fixture.py PROGRAM.pt2 INPUTS.pt

The checkout must be on PYTHONPATH (quantized_cnn.py imports pare.quantizer
for its default quantizer); tools.bench.executorch_peer.child_env() sets it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)

sys.path.insert(0, str(Path(__file__).absolute().parent / "models"))
from quantized_cnn import quantized  # noqa: E402


def main(program: Path, inputs_file: Path) -> None:
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
    converted, inputs = quantized(quantizer)
    torch.export.save(torch.export.export(converted, inputs[0]), program)
    torch.save(inputs, inputs_file)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
