"""torchvision ConvNeXt-Tiny (7x7 depthwise, LayerNorm over channels via permutes, GELU, layer scale).

Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, 64x64 images, batch 1 and 2 (dynamic batch).
"""

from _zoo import vision

KIND = "classification"


def build():
    return vision("convnext_tiny")
