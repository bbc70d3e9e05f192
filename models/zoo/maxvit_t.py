"""torchvision MaxViT-T's layers (MBConv with squeeze-excite, block and grid attention with relative position bias).

torchvision's maxvit_t fixes the partition size at 7, so it takes 224x224
only; this is the same configuration (channels 64-512, layers 2-2-5-2, head
dim 32) with partition 4 at 128x128, the smallest size whose every stage
divides into 4x4 windows.

Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, 128x128 images, batch 1.
"""

import torch
from _zoo import images, randomize_norm_stats, torchvision_models

KIND = "classification"


def build():
    torch.manual_seed(0)
    maxvit = torchvision_models().maxvit.MaxVit
    model = maxvit(
        input_size=(128, 128),
        stem_channels=64,
        partition_size=4,
        block_channels=[64, 128, 256, 512],
        block_layers=[2, 2, 5, 2],
        head_dim=32,
        stochastic_depth_prob=0.2,
    )
    return randomize_norm_stats(model).eval(), images(1, size=128)
