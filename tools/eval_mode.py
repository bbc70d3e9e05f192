"""A model spec's module in eval mode, as deployed: shared by the tracer
(tools/tracer/model_spec.py) and ExecuTorch's bench worker
(tools/bench/executorch_worker.py), which runs in another venv and imports
nothing of pare: so this module imports only torchao, and only when needed."""

from __future__ import annotations

from typing import Any


def to_eval(module: Any) -> Any:
    """module.eval(); a module that torch.export made (what PT2E's
    convert_pt2e returns) refuses it, and torchao's helper does its job.
    Returns the module."""
    try:
        module.eval()
    except NotImplementedError:
        from torchao.quantization.pt2e import move_exported_model_to_eval

        move_exported_model_to_eval(module)
    return module
