"""A log-mel speech front end on raw audio, then a small conv classifier.

The front end keyword spotters and Whisper-style encoders run on the
device: torch.stft (reflect padding, a Hann window, a real FFT: complex64
spectra), the power spectrum, a mel filterbank as a matrix product, log;
then two conv1d + batch norm + ReLU and a pooled linear head. Zoo model
(docs/model_zoo.md, docs/complex.md): random weights, a triangular mel
filterbank, non-trivial batch-norm statistics, batch 2 of 0.25 s of 16 kHz
audio (n_fft 400, hop 160, as Whisper's).
"""

import torch
from _zoo import randomize_norm_stats
from torch import nn

KIND = "audio"


def mel_filterbank(n_fft: int, mels: int, sample_rate: int) -> torch.Tensor:
    """[n_fft / 2 + 1, mels] triangular filters, equally spaced on the mel scale."""

    def to_mel(f):
        return 2595.0 * torch.log10(1.0 + f / 700.0)

    def to_hz(m):
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)

    bins = torch.linspace(0, sample_rate / 2, n_fft // 2 + 1)
    edges = to_hz(torch.linspace(to_mel(torch.tensor(0.0)), to_mel(torch.tensor(sample_rate / 2)), mels + 2))
    lower, center, upper = edges[:-2], edges[1:-1], edges[2:]
    rising = (bins[:, None] - lower) / (center - lower)
    falling = (upper - bins[:, None]) / (upper - center)
    return torch.clamp(torch.minimum(rising, falling), min=0.0)


class LogMelClassifier(nn.Module):
    def __init__(self, n_fft=400, hop=160, mels=40, channels=48, classes=12, sample_rate=16000):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("window", torch.hann_window(n_fft))
        self.register_buffer("filters", mel_filterbank(n_fft, mels, sample_rate))
        self.convs = nn.Sequential(
            nn.Conv1d(mels, channels, kernel_size=3, padding=1),
            nn.BatchNorm1d(channels),
            nn.ReLU(),
            nn.Conv1d(channels, channels, kernel_size=3, stride=2, padding=1),
            nn.BatchNorm1d(channels),
            nn.ReLU(),
        )
        self.head = nn.Linear(channels, classes)

    def forward(self, audio):  # audio: N x samples
        spectrum = torch.stft(audio, self.n_fft, self.hop, window=self.window, return_complex=True)
        power = spectrum.abs().pow(2)  # N x bins x frames
        mel = torch.matmul(power.transpose(1, 2), self.filters).clamp(min=1e-10).log10()  # N x frames x mels
        x = self.convs(mel.transpose(1, 2))
        return self.head(x.mean(dim=2))


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return randomize_norm_stats(LogMelClassifier()).eval(), [(torch.randn(2, 4000, generator=g) * 0.1,)]
