"""An SSD-lite head on a small MobileNet-like backbone: depthwise-separable class and box predictors on three feature maps.

As torchvision's SSDLite320 builds it: for each feature map a 3x3
depthwise conv + batch norm + ReLU6 and a 1x1 conv, class logits and box
regressions reshaped to N x anchors x K and concatenated over the maps;
anchor generation and NMS are the app's.
Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, 64x64 images, batch 1 and 2 (dynamic batch).
"""

import torch
from _zoo import images, randomize_norm_stats
from torch import nn

KIND = "detection"


def conv_bn(cin, cout, kernel=1, stride=1, groups=1):
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU6(),
    )


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand=4):
        super().__init__()
        hidden = cin * expand
        self.residual = stride == 1 and cin == cout
        self.block = nn.Sequential(
            conv_bn(cin, hidden),
            conv_bn(hidden, hidden, 3, stride, groups=hidden),
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )

    def forward(self, x):
        y = self.block(x)
        return x + y if self.residual else y


def predictor(cin, cout):
    """torchvision's `_prediction_block`: depthwise 3x3 + BN + ReLU6, then a 1x1 conv with bias."""
    return nn.Sequential(conv_bn(cin, cin, 3, groups=cin), nn.Conv2d(cin, cout, 1))


class SSDLite(nn.Module):
    def __init__(self, classes=11, anchors=(4, 6, 6)):
        super().__init__()
        self.classes = classes
        self.stage8 = nn.Sequential(
            conv_bn(3, 16, 3, 2),
            InvertedResidual(16, 16, 1, expand=1),
            InvertedResidual(16, 24, 2),
            InvertedResidual(24, 24, 1),
            InvertedResidual(24, 32, 2),
        )
        self.stage16 = nn.Sequential(InvertedResidual(32, 48, 2), InvertedResidual(48, 48, 1))
        self.extra32 = nn.Sequential(conv_bn(48, 24), conv_bn(24, 24, 3, 2, groups=24), conv_bn(24, 64))
        widths = (32, 48, 64)
        self.cls = nn.ModuleList(predictor(c, a * classes) for c, a in zip(widths, anchors))
        self.box = nn.ModuleList(predictor(c, a * 4) for c, a in zip(widths, anchors))

    @staticmethod
    def flatten(x, k):
        n, _, h, w = x.shape
        return x.view(n, -1, k, h, w).permute(0, 3, 4, 1, 2).reshape(n, -1, k)

    def forward(self, x):
        f8 = self.stage8(x)
        f16 = self.stage16(f8)
        features = (f8, f16, self.extra32(f16))
        logits = torch.cat([self.flatten(h(f), self.classes) for h, f in zip(self.cls, features)], 1)
        boxes = torch.cat([self.flatten(h(f), 4) for h, f in zip(self.box, features)], 1)
        return logits, boxes


def build():
    torch.manual_seed(0)
    return randomize_norm_stats(SSDLite()).eval(), images(1, 2)
