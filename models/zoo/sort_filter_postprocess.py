"""A dense detector's post-processing after a small network: per-class topk, a global sort, a score threshold (nonzero, where).

Anchor-free heads (FCOS, CenterNet) end like this on device: sigmoid
class scores per location, the k best locations per class (`topk`), all
candidates sorted by score (`sort`), those over a threshold kept
(`nonzero`: a variable number of detections), boxes decoded from
distances with `where` clamping them to the image. NMS is the app's.
Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, two 64x64 images of batch 1 (one image per call, as the
detections' count depends on the image).
"""

import torch
from _zoo import images, randomize_norm_stats
from torch import nn

KIND = "detection"


def conv(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class DetectorWithPostprocess(nn.Module):
    def __init__(self, classes=5, per_class=6, threshold=0.6, size=64, stride=8):
        super().__init__()
        self.per_class = per_class
        self.threshold = threshold
        self.size = size
        self.backbone = nn.Sequential(conv(3, 16, 2), conv(16, 32, 2), conv(32, 32, 2), conv(32, 32))
        self.scores = nn.Conv2d(32, classes, 1)
        self.distances = nn.Conv2d(32, 4, 1)  # left, top, right, bottom from the cell centre
        cells = size // stride
        ys, xs = torch.meshgrid(torch.arange(cells), torch.arange(cells), indexing="ij")
        centres = (torch.stack((xs, ys, xs, ys), -1).reshape(-1, 4).float() + 0.5) * stride
        self.register_buffer("centres", centres)
        self.register_buffer("signs", torch.tensor([-1.0, -1.0, 1.0, 1.0]))

    def forward(self, image):  # 1 x 3 x H x W
        features = self.backbone(image)
        scores = self.scores(features).sigmoid().flatten(2)[0]  # classes x locations
        distances = self.distances(features).flatten(2)[0].t().exp() * 8  # locations x 4
        boxes = self.centres + self.signs * distances
        boxes = torch.where(boxes < 0, torch.zeros_like(boxes), boxes)
        boxes = torch.where(boxes > self.size, torch.full_like(boxes, self.size), boxes)

        top_scores, top_locations = scores.topk(self.per_class, dim=1)  # classes x per_class
        labels = torch.arange(scores.shape[0]).unsqueeze(1).expand_as(top_locations)
        candidates, order = top_scores.flatten().sort(descending=True)
        keep = torch.nonzero(candidates > self.threshold).squeeze(1)
        kept = order[keep]
        return boxes[top_locations.flatten()[kept]], candidates[keep], labels.flatten()[kept]


def build():
    torch.manual_seed(0)
    model = randomize_norm_stats(DetectorWithPostprocess())
    with torch.no_grad():  # spread the scores as a trained head's are: 12 and 13 of 30 candidates pass, no near ties
        model.scores.weight.mul_(8)
    return model.eval(), images(1, 1)
