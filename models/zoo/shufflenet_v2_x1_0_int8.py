"""torchvision ShuffleNetV2 x1.0, PT2E int8 (PareQuantizer: per-channel int8 weights, int8 activations, float biases as XNNPACKQuantizer)."""

from _zoo import quantized_twin

KIND = "classification"
FLOAT_TWIN = "shufflenet_v2_x1_0.py"  # tools.bench times Pare on it alongside
build = quantized_twin(FLOAT_TWIN)
