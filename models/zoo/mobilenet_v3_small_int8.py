"""torchvision MobileNetV3-Small, PT2E int8 (PareQuantizer: per-channel int8 weights, int8 activations, float biases as XNNPACKQuantizer).

Zoo model (docs/model_zoo.md), the quantized twin of mobilenet_v3_small.py: the same
random weights and batch-norm statistics, exported at batch 1 of 64x64
images, calibrated on seeded batches, converted by convert_pt2e
(docs/quantization.md).
"""

from _zoo import quantized, vision

KIND = "classification"
FLOAT_TWIN = "mobilenet_v3_small.py"  # tools.bench times Pare on it alongside


def build():
    return quantized(*vision("mobilenet_v3_small", 1))
