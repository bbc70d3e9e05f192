"""A DLRM-style recommender: EmbeddingBag tables for the sparse features, a bottom MLP for the dense ones, pairwise dot-product interaction, a top MLP.

Naumov et al.'s DLRM (facebookresearch/dlrm): each sparse feature is a
bag of ids per sample, given as flat indices plus per-sample offsets
(`nn.EmbeddingBag`, sum mode); the interaction keeps the dot products
above the diagonal (`triu_indices`) and concatenates them with the dense
vector.
Zoo model (docs/model_zoo.md): random weights, three tables, batch 2 and
4 (dynamic batch and bag sizes): float32 dense features [N, 13], int64
indices [tables, ids] and offsets [tables, N].
"""

import torch
from torch import nn

KIND = "recommendation"


def mlp(*widths, sigmoid=False):
    layers = []
    for cin, cout in zip(widths, widths[1:]):
        layers += [nn.Linear(cin, cout), nn.ReLU()]
    if sigmoid:
        layers[-1] = nn.Sigmoid()
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    def __init__(self, dense=13, rows=(100, 60, 40), dim=16):
        super().__init__()
        self.tables = nn.ModuleList(nn.EmbeddingBag(n, dim, mode="sum") for n in rows)
        self.bottom = mlp(dense, 32, dim)
        features = len(rows) + 1
        self.register_buffer("pairs", torch.triu_indices(features, features, offset=1), persistent=False)
        self.top = mlp(dim + features * (features - 1) // 2, 32, 16, 1, sigmoid=True)

    def forward(self, dense, indices, offsets):
        x = self.bottom(dense)
        embedded = [table(indices[t], offsets[t]) for t, table in enumerate(self.tables)]
        t = torch.stack([x, *embedded], dim=1)  # N x features x dim
        z = torch.bmm(t, t.transpose(1, 2))
        interactions = z[:, self.pairs[0], self.pairs[1]]
        return self.top(torch.cat((x, interactions), dim=1))


def sample(batch, ids_per_table, rows, g):
    dense = torch.rand(batch, 13, generator=g)
    indices = torch.stack([torch.randint(0, n, (ids_per_table,), generator=g) for n in rows])
    # bag sizes vary per sample (one empty bag included): sorted cut points in [0, ids)
    cuts = [torch.randint(0, ids_per_table + 1, (batch - 1,), generator=g).sort().values for _ in rows]
    offsets = torch.stack([torch.cat((torch.zeros(1, dtype=torch.int64), c)) for c in cuts])
    offsets[:, -1] = offsets[:, -2]  # the second-to-last sample's bag ends where the last one's starts: empty
    return dense, indices, offsets


def build():
    torch.manual_seed(0)
    model = DLRM()
    g = torch.Generator().manual_seed(1)
    rows = tuple(t.num_embeddings for t in model.tables)
    return model.eval(), [sample(2, 7, rows, g), sample(4, 12, rows, g)]
