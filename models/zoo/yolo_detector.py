"""A YOLO-style detector: a small conv backbone, detection heads at strides 8 and 16, and the box decoding (no NMS).

The decoding is the part on-device apps ship with the network: sigmoid of
the raw outputs, cell offsets from a grid, anchor scaling with exp for
width and height, every scale concatenated to N x boxes x (5 + classes).
NMS is left to the app (docs/model_zoo.md, "Out of scope").
Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, 64x64 images, batch 1 and 2 (dynamic batch).
"""

import torch
from _zoo import images, randomize_norm_stats
from torch import nn

KIND = "detection"


def conv(cin, cout, stride=1, kernel=3):
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel, stride, kernel // 2, bias=False),
        nn.BatchNorm2d(cout),
        nn.LeakyReLU(0.1),
    )


class Decode(nn.Module):
    """One scale: raw head output N x A*(5+C) x H x W -> N x A*H*W x (5+C), boxes in input pixels."""

    def __init__(self, anchors, stride, size, classes):
        super().__init__()
        self.stride = stride
        self.outputs = 5 + classes
        self.anchors = len(anchors)
        ys, xs = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
        self.register_buffer("grid", torch.stack((xs, ys), -1).view(1, 1, size, size, 2).float())
        self.register_buffer("anchor_wh", torch.tensor(anchors, dtype=torch.float32).view(1, -1, 1, 1, 2))

    def forward(self, p):
        n, _, h, w = p.shape
        p = p.view(n, self.anchors, self.outputs, h, w).permute(0, 1, 3, 4, 2)
        xy = (p[..., :2].sigmoid() + self.grid) * self.stride
        wh = p[..., 2:4].exp() * self.anchor_wh
        conf = p[..., 4:].sigmoid()  # objectness and class scores
        return torch.cat((xy, wh, conf), -1).reshape(n, -1, self.outputs)


class YoloDetector(nn.Module):
    def __init__(self, classes=8, size=64):
        super().__init__()
        anchors = {8: [(10, 13), (16, 30), (33, 23)], 16: [(30, 61), (62, 45), (59, 119)]}
        self.stem = nn.Sequential(conv(3, 16, 2), conv(16, 32, 2), conv(32, 32), conv(32, 64, 2))  # stride 8
        self.down = nn.Sequential(conv(64, 128, 2), conv(128, 64, kernel=1), conv(64, 128))  # stride 16
        self.up = nn.Sequential(conv(128, 32, kernel=1), nn.Upsample(scale_factor=2, mode="nearest"))
        self.head8 = nn.Sequential(conv(64 + 32, 64), nn.Conv2d(64, 3 * (5 + classes), 1))
        self.head16 = nn.Conv2d(128, 3 * (5 + classes), 1)
        self.decode8 = Decode(anchors[8], 8, size // 8, classes)
        self.decode16 = Decode(anchors[16], 16, size // 16, classes)

    def forward(self, x):
        c8 = self.stem(x)
        c16 = self.down(c8)
        p8 = self.head8(torch.cat((c8, self.up(c16)), 1))
        return torch.cat((self.decode8(p8), self.decode16(self.head16(c16))), 1)


def build():
    torch.manual_seed(0)
    return randomize_norm_stats(YoloDetector()).eval(), images(1, 2)
