"""torchvision ResNeXt-50 32x4d (grouped 3x3 convolutions).

Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, 64x64 images, batch 1.
"""

from _zoo import vision

KIND = "classification"


def build():
    return vision("resnext50_32x4d", 1)
