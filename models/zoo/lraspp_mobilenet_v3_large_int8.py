"""torchvision LR-ASPP MobileNetV3-Large, PT2E int8 (PareQuantizer: per-channel int8 weights, int8 activations, float biases as XNNPACKQuantizer)."""

from _zoo import quantized_twin

KIND = "segmentation"
FLOAT_TWIN = "lraspp_mobilenet_v3_large.py"  # tools.bench times Pare on it alongside
build = quantized_twin(FLOAT_TWIN)
