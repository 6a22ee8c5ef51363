"""MobileNet building blocks with seeded weights and batch-norm statistics: the depthwise
separable block of MobileNet v1 (:func:`depthwise_separable`) and the inverted residual of
MobileNet v2 (:func:`inverted_residual`)."""

from __future__ import annotations

import torch
from torch import nn

from compiler.zoo.seeded import seeded

__all__ = ["DepthwiseSeparable", "InvertedResidual", "depthwise_separable", "inverted_residual"]


def _conv_bn(
    in_channels: int, out_channels: int, kernel: int, stride: int = 1, groups: int = 1
) -> list[nn.Module]:
    return [
        nn.Conv2d(
            in_channels, out_channels, kernel, stride, kernel // 2, groups=groups, bias=False
        ),
        nn.BatchNorm2d(out_channels),
    ]


class DepthwiseSeparable(nn.Module):
    """Depthwise 3x3 conv (one group per channel) + BN + ReLU6, then pointwise 1x1 conv + BN
    + ReLU."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            *_conv_bn(in_channels, in_channels, 3, stride, groups=in_channels),
            nn.ReLU6(inplace=True),
            *_conv_bn(in_channels, out_channels, 1),
            nn.ReLU(inplace=True),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class InvertedResidual(nn.Module):
    """Pointwise expansion + BN + ReLU6, depthwise 3x3 + BN + ReLU6, linear pointwise
    projection + BN, and the input added back (stride 1, as many channels out as in)."""

    def __init__(self, channels: int, expansion: int = 4) -> None:
        super().__init__()
        hidden = channels * expansion
        self.layers = nn.Sequential(
            *_conv_bn(channels, hidden, 1),
            nn.ReLU6(inplace=True),
            *_conv_bn(hidden, hidden, 3, groups=hidden),
            nn.ReLU6(inplace=True),
            *_conv_bn(hidden, channels, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.layers(x)


def depthwise_separable(
    seed: int = 0, in_channels: int = 16, out_channels: int = 32, stride: int = 1
) -> DepthwiseSeparable:
    """A seeded :class:`DepthwiseSeparable` in eval mode (statistics from 4x16x16 inputs)."""
    return seeded(
        lambda: DepthwiseSeparable(in_channels, out_channels, stride),
        seed,
        (4, in_channels, 16, 16),
    )


def inverted_residual(seed: int = 0, channels: int = 16, expansion: int = 4) -> InvertedResidual:
    """A seeded :class:`InvertedResidual` in eval mode (statistics from 4x16x16 inputs)."""
    return seeded(lambda: InvertedResidual(channels, expansion), seed, (4, channels, 16, 16))
