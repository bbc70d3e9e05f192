"""The Transformer encoder of transformer_encoder_16.py with PT2E dynamically
quantized linears (PareQuantizer(dynamic=True): per-channel int8 weights,
inputs quantized per tensor at run time), the zoo's
transformer_encoder_classifier_int8.py at batch 1: one of the models issue
44's speed target is measured on (Pare int8 no slower than
ExecuTorch+XNNPACK int8)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).absolute().parents[1] / "zoo"))
from _zoo import quantized_twin  # noqa: E402

# The output is float (the dynamic linears' outputs are not quantized), so
# Pare keeps the float tolerances; this bound is for the ExecuTorch peers'
# check: XNNPACK's dynamic int8 linears round their inputs' quantization
# differently from torch's reference graph (logits about 1e-3 apart).
TOLERANCE = {"rtol": 0.0, "atol": 0.01}
FLOAT_TWIN = "transformer_encoder_16.py"  # tools.bench times Pare on it alongside
build = quantized_twin(FLOAT_TWIN, dynamic=True)
