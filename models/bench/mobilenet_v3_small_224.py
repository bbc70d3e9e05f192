"""torchvision MobileNetV3-Small at 1x3x224x224 (random weights), the float
twin of mobilenet_v3_small_224_int8.py. The zoo's copy
(models/zoo/mobilenet_v3_small.py) runs 64x64 images."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).absolute().parents[1] / "zoo"))
from _zoo import vision  # noqa: E402


def build():
    return vision("mobilenet_v3_small", 1, size=224)
