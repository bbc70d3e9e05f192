"""The small CNN block of quantized_cnn_32.py at 1x3x32x32, PT2E int8 with
PareQuantizer(int32_bias=False): one of the models issue 44's speed target
is measured on (Pare int8 no slower than ExecuTorch+XNNPACK int8)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).absolute().parents[1] / "zoo"))
from _zoo import quantized_twin  # noqa: E402

FLOAT_TWIN = "quantized_cnn_32.py"  # tools.bench times Pare on it alongside
build = quantized_twin(FLOAT_TWIN, int32_bias=False)
