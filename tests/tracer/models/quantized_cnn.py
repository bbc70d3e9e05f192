"""A small CNN quantized with Pare's PT2E quantizer (pare/quantizer.py):
conv + relu, conv + residual add + relu, mean, linear, calibrated and
converted by torchao's convert_pt2e. What tests/tracer/test_trace.py
traces and checks against torch eager of the converted module (quantized_cnn_dynamic.py: the
same with dynamically quantized linear inputs; tests/tracer/xnnpack_fixture.py: the same
quantized by ExecuTorch's XNNPACKQuantizer)."""

import torch
from torch import nn
from torch.nn import functional as F
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

from pare.quantizer import PareQuantizer


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.body = nn.Conv2d(8, 8, 3, padding=1)
        self.head = nn.Linear(8, 10)

    def forward(self, x):
        y = F.relu(self.stem(x))
        y = F.relu(self.body(y) + y)
        return self.head(y.mean((2, 3)))


def quantized(quantizer=None, **options):
    """The calibrated, converted model and its inputs: quantized by `quantizer`
    (tests/tracer/xnnpack_fixture.py passes ExecuTorch's XNNPACKQuantizer),
    by default PareQuantizer(**options)."""
    torch.manual_seed(0)
    model = SmallCNN().eval()
    inputs = [(torch.randn(2, 3, 16, 16),), (torch.randn(2, 3, 16, 16) * 2,)]
    # Drawn before prepare_pt2e, which may draw random numbers itself (as
    # XNNPACKQuantizer's does): every quantizer calibrates on the same batches.
    calibration = [torch.randn(2, 3, 16, 16) for _ in range(4)]
    exported = torch.export.export(model, inputs[0]).module()
    prepared = prepare_pt2e(exported, quantizer or PareQuantizer(**options))
    for batch in calibration:
        prepared(batch)
    return convert_pt2e(prepared), inputs


def build():
    return quantized()
