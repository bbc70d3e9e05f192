"""torchvision MC3-18 (mixed convolutions: conv3d stem, then 2D-in-space convolutions).

Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, clips of 4 frames of 32x32, batch 1.
"""

from _zoo import video

KIND = "video"


def build():
    return video("mc3_18")
