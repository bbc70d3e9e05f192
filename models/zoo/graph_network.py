"""A graph network: GCN message passing summed with index_add, a max-aggregating layer with scatter_reduce, mean pooling to a graph label.

Messages flow along an edge index given as an int64 input (2 x edges,
source and target rows, as PyTorch Geometric stores it): a GCN layer
(symmetric degree normalisation, `index_add`), a GraphSAGE-style layer
(`scatter_reduce` with amax over the neighbours), then a mean over the
nodes and a linear classifier.
Zoo model (docs/model_zoo.md): random weights, node features [nodes, 8]
and edge indices of two graphs of 12 and 20 nodes (dynamic node and edge
counts), every node with a self loop.
"""

import torch
from torch import nn

KIND = "graph"


class GCNLayer(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.linear = nn.Linear(cin, cout)

    def forward(self, x, edges):
        src, dst = edges[0], edges[1]
        degree = torch.zeros(x.shape[0], dtype=x.dtype).index_add(0, dst, torch.ones_like(dst, dtype=x.dtype))
        norm = degree.rsqrt()
        messages = self.linear(x)[src] * (norm[src] * norm[dst]).unsqueeze(1)
        return torch.relu(torch.zeros_like(messages[: x.shape[0]]).index_add(0, dst, messages))


class MaxAggregationLayer(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.neighbours = nn.Linear(cin, cout)
        self.root = nn.Linear(cin, cout)

    def forward(self, x, edges):
        src, dst = edges[0], edges[1]
        messages = self.neighbours(x)[src]
        index = dst.unsqueeze(1).expand_as(messages)
        pooled = torch.zeros(x.shape[0], messages.shape[1], dtype=x.dtype).scatter_reduce(
            0, index, messages, reduce="amax", include_self=False
        )
        return torch.relu(self.root(x) + pooled)


class GraphNetwork(nn.Module):
    def __init__(self, features=8, hidden=32, classes=4):
        super().__init__()
        self.gcn = GCNLayer(features, hidden)
        self.sage = MaxAggregationLayer(hidden, hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x, edges):  # x: nodes x features, edges: 2 x E (int64)
        x = self.sage(self.gcn(x, edges), edges)
        return self.head(x.mean(dim=0, keepdim=True))


def graph(nodes, extra_edges, g):
    loops = torch.arange(nodes).repeat(2, 1)
    random = torch.randint(0, nodes, (2, extra_edges), generator=g)
    return torch.randn(nodes, 8, generator=g), torch.cat((loops, random, random.flip(0)), dim=1)


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return GraphNetwork().eval(), [graph(12, 18, g), graph(20, 30, g)]
