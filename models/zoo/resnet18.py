"""torchvision ResNet-18 (basic blocks, 7x7 stem, max pool).

Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, 64x64 images, batch 1 and 2 (dynamic batch).
"""

from _zoo import vision

KIND = "classification"


def build():
    return vision("resnet18")
