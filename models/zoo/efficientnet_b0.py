"""torchvision EfficientNet-B0 (MBConv, SiLU, squeeze-excite, stochastic depth off in eval).

Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, 64x64 images, batch 1 and 2 (dynamic batch).
"""

from _zoo import vision

KIND = "classification"


def build():
    return vision("efficientnet_b0")
