"""torchvision ResNet-50, PT2E int8 (PareQuantizer: per-channel int8 weights, int8 activations, float biases as XNNPACKQuantizer).

Zoo model (docs/model_zoo.md), the quantized twin of resnet50.py: the same
random weights and batch-norm statistics, exported at batch 1 of 64x64
images, calibrated on seeded batches, converted by convert_pt2e
(docs/quantization.md).
"""

from _zoo import quantized, vision

KIND = "classification"
FLOAT_TWIN = "resnet50.py"  # tools.bench times Pare on it alongside


def build():
    return quantized(*vision("resnet50", 1))
