"""Index-heavy post-processing, one of issue 49's models that failed at
trace time: the best anchors of each image by score (topk, then their boxes
by gather), every score ranked (a stable sort), the lowest scores in no
particular order (topk with sorted=False) and a per-class score total
(scatter_add)."""

import torch
from torch import nn


class PostProcess(nn.Module):
    def forward(self, scores: torch.Tensor, boxes: torch.Tensor, labels: torch.Tensor):
        best, anchors = scores.topk(5, dim=-1)
        picked = boxes.gather(1, anchors.unsqueeze(-1).expand(-1, -1, 4))
        ranked, order = torch.sort(scores, dim=-1, descending=True, stable=True)
        worst, worst_anchors = scores.topk(3, dim=1, largest=False, sorted=False)
        per_class = torch.zeros(scores.shape[0], 6).scatter_add(1, labels, scores)
        # 40 labels of 6 classes: ties, in torch's unstable (std::sort) order.
        # Short: no CPU's torch sends it to another algorithm (x86-simd-sort).
        by_class = torch.sort(labels.short(), dim=1)
        return best, picked, ranked, order, worst, worst_anchors, per_class, by_class.values, by_class.indices


def build():
    g = torch.Generator().manual_seed(0)
    scores = torch.randn(2, 40, generator=g)
    boxes = torch.rand(2, 40, 4, generator=g)
    labels = torch.randint(0, 6, (2, 40), generator=g)
    return PostProcess(), [(scores, boxes, labels)]
