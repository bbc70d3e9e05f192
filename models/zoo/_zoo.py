"""Shared helpers for the zoo's model specs (models/zoo/*.py; docs/model_zoo.md).

A spec imports this module by name (the tracer puts the spec's directory on
sys.path). Every spec is deterministic: seeded weights, seeded inputs.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path

import torch
from torch import nn

TORCHVISION_VERSION = "0.28.0"


def torchvision_models():
    """`torchvision.models`, imported without torchvision's compiled ops.

    The package's `__init__` loads its C++ extension (nms, roi_align, image
    decoding), which is built against a different torch and fails to
    register; the model code itself is plain PyTorch. So the package object
    is created empty and only its `models` subpackage is imported. Installed
    by tools/setup.sh (`pip install --no-deps torchvision==0.28.0`).
    """
    existing = sys.modules.get("torchvision")
    if existing is None:
        spec = importlib.util.find_spec("torchvision")
        if spec is None or spec.submodule_search_locations is None:
            raise RuntimeError(
                f"torchvision is not installed in this venv; run `make setup` (it installs torchvision=="
                f"{TORCHVISION_VERSION} with --no-deps)"
            )
        package = types.ModuleType("torchvision")
        package.__path__ = list(spec.submodule_search_locations)
        package.__spec__ = spec
        package.__file__ = spec.origin
        package.__version__ = TORCHVISION_VERSION
        sys.modules["torchvision"] = package
    import torchvision.models
    import torchvision.models.segmentation
    import torchvision.models.video

    return torchvision.models


def randomize_norm_stats(model: nn.Module) -> nn.Module:
    """Non-trivial batch-norm statistics and affine terms, as a trained model has.

    Freshly built models have running mean 0 / var 1, which hides errors in
    how a runtime applies them. The ranges keep activations in scale.
    """
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.8, 1.25)
                if m.affine:
                    m.weight.uniform_(0.8, 1.2)
                    m.bias.uniform_(-0.1, 0.1)
    return model


def images(*batches: int, size: int | tuple[int, int] = 64, channels: int = 3, seed: int = 1):
    """One input tuple per batch size: N x C x H x W, values as a normalized image."""
    h, w = (size, size) if isinstance(size, int) else size
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(n, channels, h, w, generator=g),) for n in batches]


def clips(*batches: int, frames: int = 4, size: int = 32, seed: int = 1):
    """One video input per batch size: N x 3 x T x H x W."""
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(n, 3, frames, size, size, generator=g),) for n in batches]


def video(name: str):
    """(model, inputs) for a torchvision video classifier, random weights: clips of 4 frames of 32x32, batch 1."""
    torch.manual_seed(0)
    model = getattr(torchvision_models().video, name)(weights=None)
    return randomize_norm_stats(model).eval(), clips(1)


def vision(name: str, *batches: int, size: int | tuple[int, int] = 64, **kwargs):
    """(model, inputs) for a torchvision classification/segmentation builder, random weights."""
    torch.manual_seed(0)
    models = torchvision_models()
    builder = getattr(models, name, None) or getattr(models.segmentation, name, None)
    model = builder(weights=None, **kwargs)
    return randomize_norm_stats(model).eval(), images(*(batches or (1, 2)), size=size)


def quantized(
    model: nn.Module,
    inputs,
    *,
    calibration_batches: int = 4,
    dynamic: bool = False,
    seed: int = 2,
    int32_bias: bool = False,
):
    """(converted, inputs): `model` quantized by PT2E with PareQuantizer (docs/quantization.md).

    Exported at the shape of `inputs[0]` (torch.export fixes the batch
    size, so a quantized spec has one input tuple), calibrated on
    `calibration_batches` seeded batches of that shape and dtype (random
    normal floats, integer inputs drawn within their range), then
    converted. `dynamic`: PareQuantizer(dynamic=True), linear layers'
    inputs quantized at run time, no calibration needed but harmless.
    `int32_bias`: PareQuantizer(int32_bias=...), False leaves biases float.
    """
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    from pare.quantizer import PareQuantizer

    example = inputs[0]
    m = torch.export.export(model.eval(), example).module()
    # Float biases: configured as ExecuTorch's XNNPACKQuantizer, so tools.bench
    # times the same module on ExecuTorch+XNNPACK (whose partitioner takes no
    # int32 bias); Pare's int8 layers take either.
    m = prepare_pt2e(m, PareQuantizer(dynamic=dynamic, int32_bias=int32_bias))
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _ in range(calibration_batches):
            m(*(_like(t, g) for t in example))
        m(*example)
    return convert_pt2e(m), [example]


def quantized_twin(float_twin: str, **kwargs):
    """build() for a spec that is `float_twin` quantized: its FLOAT_TWIN's
    `build()` (same seeded weights, batch-norm statistics and first input
    tuple), then `quantized(model, inputs, **kwargs)`.

    The float spec is imported now, as a neighbour of the calling spec: the
    tracer has the spec's directory on sys.path only while the spec's
    module runs (docs/model_spec.md).
    """
    float_build = importlib.import_module(Path(float_twin).stem).build

    def build():
        return quantized(*float_build(), **kwargs)

    return build


LLM_SPECS = Path(__file__).resolve().parent.parent / "llm"


def llm_spec(name: str):
    """build() of the LLM spec models/llm/<name>.py (docs/llm.md), which the
    zoo runs as it is rather than as a copy.

    Imported now, with models/llm on sys.path while it runs (it imports its
    neighbour _llm), as quantized_twin imports a float twin.
    """
    path = LLM_SPECS / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"llm_spec_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(LLM_SPECS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(LLM_SPECS))
    return module.build


def _like(t: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """A seeded random tensor of t's shape and dtype (integers within t's range)."""
    if t.is_floating_point():
        return torch.randn(t.shape, generator=g, dtype=t.dtype)
    return torch.randint(int(t.min()), int(t.max()) + 1, t.shape, generator=g, dtype=t.dtype)
