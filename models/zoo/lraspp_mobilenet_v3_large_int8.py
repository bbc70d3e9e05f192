"""torchvision LR-ASPP MobileNetV3-Large, PT2E int8 (PareQuantizer: per-channel int8 weights, int8 activations, float biases as XNNPACKQuantizer).

Zoo model (docs/model_zoo.md), the quantized twin of lraspp_mobilenet_v3_large.py: the same
random weights and batch-norm statistics, exported at batch 1 of 64x64
images, calibrated on seeded batches, converted by convert_pt2e
(docs/quantization.md). The model returns {"out": logits}.
"""

from _zoo import quantized, vision

KIND = "segmentation"
FLOAT_TWIN = "lraspp_mobilenet_v3_large.py"  # tools.bench times Pare on it alongside


def build():
    return quantized(*vision("lraspp_mobilenet_v3_large", 1, weights_backbone=None))
