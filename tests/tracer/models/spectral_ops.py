"""Spectra (docs/complex.md): a real FFT, a conjugate-and-scale applied to
the (real, imaginary) pairs, the inverse back to a signal, the magnitude and
the complex spectrum itself as outputs (compared with torch on both
parts), an orthonormal 2-d FFT, and a complex input. Two lengths: a power
of two and one Bluestein's algorithm handles."""

import torch
from torch import nn


class SpectralOps(nn.Module):
    def forward(self, signal: torch.Tensor, spectrum: torch.Tensor):
        bins = torch.fft.rfft(signal)  # complex64 [batch, n / 2 + 1]
        pairs = torch.view_as_real(bins) * torch.tensor([0.5, -0.5])  # conjugate, halve
        filtered = torch.fft.irfft(torch.view_as_complex(pairs.contiguous()), n=signal.shape[-1])
        image = torch.fft.rfft2(signal.unsqueeze(0), norm="ortho")
        return filtered, bins.abs(), bins, image, torch.fft.ifft(spectrum).abs()


def build():
    g = torch.Generator().manual_seed(0)

    def spectrum(n):
        return torch.complex(torch.randn(2, n, generator=g), torch.randn(2, n, generator=g))

    return SpectralOps(), [
        (torch.randn(3, 64, generator=g), spectrum(16)),
        (torch.randn(3, 50, generator=g), spectrum(12)),
    ]
