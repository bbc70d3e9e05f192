"""A spatial transformer network: a localisation net predicts an affine transform, affine_grid + grid_sample warp the input, a CNN classifies it.

Jaderberg et al.'s STN as in the PyTorch tutorial (MNIST-sized input);
the same warp is how on-device models crop and align (faces, documents).
Zoo model (docs/model_zoo.md): random weights around the identity
transform, 1 x 28 x 28 images, batch 1 and 2 (dynamic batch).
"""

import torch
from _zoo import images
from torch import nn
from torch.nn import functional as F

KIND = "classification"


class SpatialTransformer(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.localization = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=7),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(),
            nn.Conv2d(8, 10, kernel_size=5),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(),
        )
        self.theta = nn.Sequential(nn.Linear(10 * 3 * 3, 32), nn.ReLU(), nn.Linear(32, 6))
        self.classifier = nn.Sequential(
            nn.Conv2d(1, 10, kernel_size=5),
            nn.MaxPool2d(2),
            nn.ReLU(),
            nn.Conv2d(10, 20, kernel_size=5),
            nn.MaxPool2d(2),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(320, 50),
            nn.ReLU(),
            nn.Linear(50, classes),
        )

    def forward(self, x):
        theta = self.theta(self.localization(x).flatten(1)).view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        warped = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        return F.log_softmax(self.classifier(warped), dim=1)


def build():
    torch.manual_seed(0)
    model = SpatialTransformer()
    with torch.no_grad():  # a trained STN starts at the identity; small weights make each input's warp its own
        last = model.theta[-1]
        last.weight.mul_(0.1)
        last.bias.copy_(torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]))
    return model.eval(), images(1, 2, size=28, channels=1)
