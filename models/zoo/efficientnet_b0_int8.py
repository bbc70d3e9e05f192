"""torchvision EfficientNet-B0, PT2E int8 (PareQuantizer: per-channel int8 weights, int8 activations, float biases as XNNPACKQuantizer)."""

from _zoo import quantized_twin

KIND = "classification"
FLOAT_TWIN = "efficientnet_b0.py"  # tools.bench times Pare on it alongside
build = quantized_twin(FLOAT_TWIN)
