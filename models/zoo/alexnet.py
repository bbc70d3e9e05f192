"""torchvision AlexNet (large linear layers: 57M parameters).

Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, 64x64 images, batch 1.
"""

from _zoo import vision

KIND = "classification"


def build():
    return vision("alexnet", 1)
