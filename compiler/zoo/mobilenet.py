"""MobileNets with seeded weights and batch-norm statistics: the depthwise separable block of
MobileNet v1 (:func:`depthwise_separable`), the inverted residual of MobileNet v2
(:func:`inverted_residual`) and the whole MobileNetV2 at full width (:func:`mobilenet_v2`,
torchvision's architecture written out)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from compiler.zoo.seeded import seeded

__all__ = [
    "DepthwiseSeparable",
    "InvertedResidual",
    "MobileNetV2",
    "depthwise_separable",
    "inverted_residual",
    "mobilenet_v2",
]


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


class _InvertedResidualV2(nn.Module):
    """torchvision's MobileNetV2 block: [1x1 expansion + BN + ReLU6], 3x3 depthwise + BN +
    ReLU6, 1x1 linear projection + BN; the input added back at stride 1 where widths match."""

    def __init__(self, cin: int, cout: int, stride: int, expansion: int) -> None:
        super().__init__()
        hidden = cin * expansion
        self.use_res_connect = stride == 1 and cin == cout
        layers: list[nn.Module] = []
        if expansion != 1:
            layers += [*_conv_bn(cin, hidden, 1), nn.ReLU6(inplace=True)]
        layers += [
            *_conv_bn(hidden, hidden, 3, stride, groups=hidden),
            nn.ReLU6(inplace=True),
            *_conv_bn(hidden, cout, 1),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    """torchvision's MobileNetV2: a 3x3/2 stem of ``stem`` channels, inverted residuals by
    (expansion, channels, repeats, stride) ``settings`` (the paper's table at width 1.0 by
    default), a 1x1 head of ``head`` channels + ReLU6, global average pool, dropout and the
    classifier."""

    SETTINGS = (
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    )

    def __init__(
        self,
        num_classes: int = 1000,
        settings: Sequence[tuple[int, int, int, int]] = SETTINGS,
        stem: int = 32,
        head: int = 1280,
    ) -> None:
        super().__init__()
        cin = stem
        features: list[nn.Module] = [nn.Sequential(*_conv_bn(3, cin, 3, 2), nn.ReLU6(True))]
        for expansion, channels, repeats, stride in settings:
            for k in range(repeats):
                step = stride if k == 0 else 1
                features.append(_InvertedResidualV2(cin, channels, step, expansion))
                cin = channels
        features.append(nn.Sequential(*_conv_bn(cin, head, 1), nn.ReLU6(inplace=True)))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(head, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


def mobilenet_v2(seed: int = 0, num_classes: int = 1000) -> MobileNetV2:
    """A seeded :class:`MobileNetV2` in eval mode (statistics from 4 random 3x64x64 images)."""
    return seeded(lambda: MobileNetV2(num_classes), seed, (4, 3, 64, 64))
