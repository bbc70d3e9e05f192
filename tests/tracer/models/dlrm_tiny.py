"""A tiny DLRM-style recommender, one of issue 49's models that failed at
trace time: a bottom MLP over the dense features, three embedding bags over
the sparse ones (weighted sum with offsets, mean over a 2-d batch of fixed
bags, max with padding_idx and an empty bag), a pairwise dot-product
interaction whose upper triangle torch.triu_indices picks, and a top MLP."""

import torch
from torch import nn

DIM = 8


def mlp(*sizes: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


class TinyDLRM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bottom = mlp(4, 16, DIM)
        self.clicks = nn.EmbeddingBag(20, DIM, mode="sum")
        self.genres = nn.EmbeddingBag(12, DIM, mode="mean")
        self.history = nn.EmbeddingBag(30, DIM, mode="max", padding_idx=0)
        self.top = mlp(DIM + 6, 16, 1)

    def forward(self, dense, clicks, click_offsets, click_weights, genres, history, history_offsets):
        features = [
            self.bottom(dense),
            self.clicks(clicks, click_offsets, per_sample_weights=click_weights),
            self.genres(genres),
            self.history(history, history_offsets),
        ]
        t = torch.stack(features, dim=1)  # [batch, 4, DIM]
        dots = torch.bmm(t, t.transpose(1, 2))
        i, j = torch.triu_indices(4, 4, offset=1)
        pairs = dots[:, i, j]  # each pair of features once
        return torch.sigmoid(self.top(torch.cat([features[0], pairs], dim=1)))


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    batch = 3
    dense = torch.randn(batch, 4, generator=g)
    clicks = torch.randint(0, 20, (7,), generator=g)
    click_offsets = torch.tensor([0, 2, 5])
    click_weights = torch.rand(7, generator=g)
    genres = torch.randint(0, 12, (batch, 2), generator=g)
    history = torch.tensor([3, 0, 17, 29, 0, 5])  # 0 is padding
    history_offsets = torch.tensor([0, 4, 4])  # the second bag is empty
    return TinyDLRM().eval(), [(dense, clicks, click_offsets, click_weights, genres, history, history_offsets)]
