"""torchvision DeepLabV3 with a MobileNetV3-Large backbone (atrous spatial pyramid pooling, bilinear upsampling).

Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, 64x64 images, batch 1 and 2. The model returns {"out": logits}.
"""

from _zoo import vision

KIND = "segmentation"


def build():
    return vision("deeplabv3_mobilenet_v3_large", weights_backbone=None, aux_loss=False)
