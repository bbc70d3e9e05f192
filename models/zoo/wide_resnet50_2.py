"""torchvision Wide ResNet-50-2.

Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, 64x64 images, batch 1.
"""

from _zoo import vision

KIND = "classification"


def build():
    return vision("wide_resnet50_2", 1)
