"""A second app: a tiny bag-of-embeddings text classifier (Int64 token ids).

Different operators and dtypes from the demo (embedding, layer norm, a mean
over tokens, integer inputs), so its selective runtime differs: the two apps
build side by side in one `bazel build` and load into one process.
"""

import torch
from torch import nn

VOCAB = 100
DIM = 16
CLASSES = 4


class BagOfEmbeddings(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, CLASSES)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        features = self.norm(self.embed(tokens)).mean(dim=1)
        return torch.log_softmax(self.head(torch.tanh(features)), dim=-1)


def build():
    torch.manual_seed(0)
    model = BagOfEmbeddings().eval()
    generator = torch.Generator().manual_seed(1)
    inputs = [
        (torch.randint(0, VOCAB, (1, 12), generator=generator),),
        (torch.randint(0, VOCAB, (3, 7), generator=generator),),
    ]
    return model, inputs
