"""torchvision ShuffleNetV2 x1.0 (channel shuffle: reshape/transpose, chunk).

Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, 64x64 images, batch 1 and 2 (dynamic batch).
"""

from _zoo import vision

KIND = "classification"


def build():
    return vision("shufflenet_v2_x1_0")
