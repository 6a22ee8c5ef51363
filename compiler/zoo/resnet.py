"""ResNet-18 (torchvision's architecture, written out) with seeded weights and batch-norm
statistics: :func:`resnet18`."""

from __future__ import annotations

import torch
from torch import nn

from compiler.zoo.seeded import seeded

__all__ = ["BasicBlock", "ResNet18", "resnet18"]


class BasicBlock(nn.Module):
    """Two 3x3 conv + BN layers and a skip connection (a 1x1 conv + BN where the block
    strides or widens), as torchvision's."""

    #: output channels per unit of width (torchvision's Bottleneck has 4)
    expansion = 1

    def __init__(self, in_channels: int, channels: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.downsample = None
        if stride != 1 or in_channels != channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, channels, 1, stride, bias=False), nn.BatchNorm2d(channels)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class ResNet18(nn.Module):
    """conv1 7x7/2 + BN + ReLU + max pool 3x3/2, four stages of two :class:`BasicBlock`\\ s
    (64, 128, 256, 512 channels; the last three stride 2), global average pool, fc."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        widths = (64, 128, 256, 512)
        stages = []
        for k, width in enumerate(widths):
            previous = widths[max(k - 1, 0)]
            stride = 1 if k == 0 else 2
            stages.append(
                nn.Sequential(BasicBlock(previous, width, stride), BasicBlock(width, width))
            )
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18(seed: int = 0, num_classes: int = 1000) -> ResNet18:
    """A seeded ResNet-18 in eval mode, its batch-norm statistics measured on a batch of
    8 random 3x64x64 images (see :func:`tests.models.seeded`)."""
    return seeded(lambda: ResNet18(num_classes), seed, (8, 3, 64, 64))
