"""torchvision R3D-18 (3D ResNet: conv3d throughout).

Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, clips of 4 frames of 32x32, batch 1.
"""

from _zoo import video

KIND = "video"


def build():
    return video("r3d_18")
