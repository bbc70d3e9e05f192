"""torchvision ResNet-18 at 1x3x224x224 (random weights), the size issue
12's thread speed-up is measured at (docs/performance.md, "Threads"). The
zoo's copy (models/zoo/resnet18.py) runs 64x64 images."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).absolute().parents[1] / "zoo"))
from _zoo import vision  # noqa: E402


def build():
    return vision("resnet18", 1, size=224)
