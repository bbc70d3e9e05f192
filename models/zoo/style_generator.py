"""A style-transfer / GAN generator: reflection padding, instance norm, strided down-sampling, residual blocks, PixelShuffle up-sampling, tanh.

Johnson et al.'s fast style-transfer network, the generator of
CycleGAN-style image-to-image models, with sub-pixel (PixelShuffle)
up-sampling in place of transposed convs.
Zoo model (docs/model_zoo.md): random weights, affine instance norm with
non-trivial scales, 64x64 images, batch 1 and 2 (dynamic batch).
"""

import torch
from _zoo import images
from torch import nn

KIND = "image-to-image"


def conv_in(cin, cout, kernel, stride=1, relu=True):
    layers = [
        nn.ReflectionPad2d(kernel // 2),
        nn.Conv2d(cin, cout, kernel, stride),
        nn.InstanceNorm2d(cout, affine=True),
    ]
    return nn.Sequential(*layers, nn.ReLU()) if relu else nn.Sequential(*layers)


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.body = nn.Sequential(conv_in(channels, channels, 3), conv_in(channels, channels, 3, relu=False))

    def forward(self, x):
        return x + self.body(x)


class StyleGenerator(nn.Module):
    def __init__(self, width=16, blocks=3):
        super().__init__()
        self.encode = nn.Sequential(
            conv_in(3, width, 7), conv_in(width, 2 * width, 3, 2), conv_in(2 * width, 4 * width, 3, 2)
        )
        self.residual = nn.Sequential(*(ResidualBlock(4 * width) for _ in range(blocks)))
        self.decode = nn.Sequential(
            nn.Conv2d(4 * width, 2 * width * 4, 3, padding=1),
            nn.PixelShuffle(2),
            nn.InstanceNorm2d(2 * width, affine=True),
            nn.ReLU(),
            nn.Conv2d(2 * width, width * 4, 3, padding=1),
            nn.PixelShuffle(2),
            nn.InstanceNorm2d(width, affine=True),
            nn.ReLU(),
            nn.ReflectionPad2d(3),
            nn.Conv2d(width, 3, 7),
            nn.Tanh(),
        )

    def forward(self, x):
        return self.decode(self.residual(self.encode(x)))


def build():
    torch.manual_seed(0)
    model = StyleGenerator()
    with torch.no_grad():  # trained instance-norm scales and shifts, not the 1 / 0 init
        for m in model.modules():
            if isinstance(m, nn.InstanceNorm2d):
                m.weight.uniform_(0.8, 1.2)
                m.bias.uniform_(-0.1, 0.1)
    return model.eval(), images(1, 2)
