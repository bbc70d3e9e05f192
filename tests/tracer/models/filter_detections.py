"""Post-processing that sorts and filters (issue 49): a detector's scores
kept above a threshold (nonzero: an output whose size depends on the data),
their boxes gathered, the kept scores ranked, and the rest masked with where.
Representative inputs keep different numbers of detections, so the same
plan must serve outputs of every size up to its bound."""

import torch
from torch import nn


class FilterDetections(nn.Module):
    def forward(self, scores: torch.Tensor, boxes: torch.Tensor):
        keep = torch.nonzero(scores > 0.6)  # [kept, 2]: (image, anchor)
        kept_scores = scores[keep[:, 0], keep[:, 1]]
        kept_boxes = boxes[keep[:, 0], keep[:, 1]]
        ranked, order = torch.sort(kept_scores, descending=True, stable=True)
        masked = torch.where(scores > 0.6, scores, torch.zeros_like(scores))
        best, _ = masked.topk(3, dim=1)
        return keep, ranked, kept_boxes[order], best


def build():
    g = torch.Generator().manual_seed(0)
    inputs = []
    for scale in (1.0, 0.7, 1.3):  # few, fewer, many detections
        inputs.append(((torch.rand(2, 16, generator=g) * scale).clamp(max=1.0), torch.rand(2, 16, 4, generator=g)))
    return FilterDetections(), inputs
