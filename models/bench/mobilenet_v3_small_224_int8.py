"""torchvision MobileNetV3-Small at 1x3x224x224 (random weights), PT2E int8
with PareQuantizer(int32_bias=False): the int8 twin of
mobilenet_v3_small_224.py, one of the models issue 44's speed target is
measured on (Pare int8 no slower than ExecuTorch+XNNPACK int8)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).absolute().parents[1] / "zoo"))
from _zoo import quantized_twin  # noqa: E402

FLOAT_TWIN = "mobilenet_v3_small_224.py"  # tools.bench times Pare on it alongside
build = quantized_twin(FLOAT_TWIN, int32_bias=False)
