"""torchvision GoogLeNet (inception blocks, ceil-mode max pooling; auxiliary heads off).

Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, 64x64 images, batch 1 and 2 (dynamic batch).
"""

from _zoo import vision

KIND = "classification"


def build():
    return vision("googlenet", aux_logits=False, init_weights=True)
