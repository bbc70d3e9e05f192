"""torchvision Inception-v3 (asymmetric 1x7/7x1 convolutions; auxiliary head off). Needs at least 75x75.

torchvision's own init (truncated normal, std 0.1, for every conv) grows activations
to ~1e9 through 94 untrained layers; PyTorch's default init keeps them O(1), as
trained weights do.

Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, 96x96 images, batch 1.
"""

from _zoo import vision

KIND = "classification"


def build():
    return vision("inception_v3", 1, size=96, aux_logits=False, init_weights=False)
