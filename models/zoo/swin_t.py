"""torchvision Swin-T (shifted-window attention: roll, window partition, relative position bias, patch merging).

Zoo model (docs/model_zoo.md): random weights, 64x64 images, batch 1. At
64x64 the later stages are smaller than the 7x7 window, so torchvision's
padding and its no-shift rule for small stages are exercised too.
"""

from _zoo import vision

KIND = "classification"


def build():
    return vision("swin_t", 1)
