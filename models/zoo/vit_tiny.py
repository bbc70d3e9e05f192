"""torchvision's VisionTransformer at a ViT-Tiny-like size (patch 8, 4 layers, 3 heads, width 192).

torchvision's vit_b_16 is the same code at 86M parameters and 224x224 only;
this configuration keeps every operator (patch conv, class token, learned
position embedding, pre-norm encoder blocks with multi-head attention, GELU
MLP) at a size the zoo runs in seconds, also under qemu.

Zoo model (docs/model_zoo.md): random weights, 64x64 images, batch 1 and 2.
"""

import torch
from _zoo import images, torchvision_models

KIND = "classification"


def build():
    torch.manual_seed(0)
    vit = torchvision_models().vision_transformer.VisionTransformer
    model = vit(image_size=64, patch_size=8, num_layers=4, num_heads=3, hidden_dim=192, mlp_dim=768)
    return model.eval(), images(1, 2)
