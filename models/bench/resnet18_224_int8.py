"""torchvision ResNet-18 at 1x3x224x224 (random weights), PT2E int8 with
PareQuantizer(int32_bias=False): the int8 twin of resnet18_224.py, the size
issue 44's int8-versus-float target is measured at (Pare int8 at least 1.6x
faster than Pare float, and no slower than ExecuTorch+XNNPACK int8)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).absolute().parents[1] / "zoo"))
from _zoo import quantized_twin  # noqa: E402

FLOAT_TWIN = "resnet18_224.py"  # tools.bench times Pare on it alongside
build = quantized_twin(FLOAT_TWIN, int32_bias=False)
