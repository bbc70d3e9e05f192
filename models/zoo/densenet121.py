"""torchvision DenseNet-121 (concatenation-heavy dense blocks, average pooling).

Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, 64x64 images, batch 1.
"""

from _zoo import vision

KIND = "classification"


def build():
    return vision("densenet121", 1)
