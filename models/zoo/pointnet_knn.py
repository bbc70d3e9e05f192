"""A DGCNN-style point-cloud classifier: k nearest neighbours by cdist + topk, edge features gathered from them, max over neighbours.

Wang et al.'s dynamic graph CNN (EdgeConv): each layer finds every
point's k nearest neighbours in the current feature space (`torch.cdist`,
`topk` of the smallest), gathers their features (`torch.gather`), builds
edge features [x_j - x_i, x_i], a shared 1x1 conv + batch norm +
LeakyReLU, and keeps the max over the neighbours; a global max pool and an
MLP classify the cloud.
Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, clouds of 64 points (N x 3 x 64), batch 1 and 2 (dynamic
batch).
"""

import torch
from _zoo import randomize_norm_stats
from torch import nn

KIND = "point cloud"


class EdgeConv(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.k = k
        self.mlp = nn.Sequential(nn.Conv2d(2 * cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.LeakyReLU(0.2))

    def forward(self, x):  # N x C x P
        n, c, p = x.shape
        points = x.transpose(1, 2)  # N x P x C
        neighbours = torch.cdist(points, points).topk(self.k, dim=-1, largest=False).indices  # N x P x k, self first
        index = neighbours.reshape(n, p * self.k, 1).expand(n, p * self.k, c)
        gathered = torch.gather(points, 1, index).view(n, p, self.k, c)
        centre = points.unsqueeze(2).expand(n, p, self.k, c)
        edges = torch.cat((gathered - centre, centre), dim=3).permute(0, 3, 1, 2)  # N x 2C x P x k
        return self.mlp(edges).amax(dim=-1)  # N x cout x P


class DGCNN(nn.Module):
    def __init__(self, k=8, classes=10):
        super().__init__()
        self.edge1 = EdgeConv(3, 32, k)
        self.edge2 = EdgeConv(32, 32, k)
        self.fuse = nn.Sequential(nn.Conv1d(64, 128, 1, bias=False), nn.BatchNorm1d(128), nn.LeakyReLU(0.2))
        self.head = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, classes))

    def forward(self, points):
        x1 = self.edge1(points)
        x2 = self.edge2(x1)
        x = self.fuse(torch.cat((x1, x2), dim=1)).amax(dim=-1)
        return self.head(x)


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    clouds = [(torch.rand(n, 3, 64, generator=g) * 2 - 1,) for n in (1, 2)]
    return randomize_norm_stats(DGCNN()).eval(), clouds
