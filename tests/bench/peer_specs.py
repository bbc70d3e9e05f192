"""Model specs the peer suites share (test_executorch_peer.py,
test_onnxruntime_peer.py), as spec-file text."""

# Eager runs first (the expected output: x * 1), the export traces the second
# call (x * 2): a deterministic mismatch whatever the runtime.
STATEFUL = """
import torch
from torch import nn

class CallCounter(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * self.calls

def build():
    return CallCounter(), [(torch.ones(2, 3),)]
"""
