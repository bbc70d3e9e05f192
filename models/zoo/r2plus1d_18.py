"""torchvision R(2+1)D-18 (factorized (1,3,3) spatial + (3,1,1) temporal convolutions).

Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, clips of 4 frames of 32x32, batch 1.
"""

from _zoo import video

KIND = "video"


def build():
    return video("r2plus1d_18")
