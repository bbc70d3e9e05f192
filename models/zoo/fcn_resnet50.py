"""torchvision FCN-ResNet50 (dilated ResNet-50 backbone, bilinear upsampling to the input size).

Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, 64x64 images, batch 1. The model returns {"out": logits}.
"""

from _zoo import vision

KIND = "segmentation"


def build():
    return vision("fcn_resnet50", 1, weights_backbone=None, aux_loss=False)
