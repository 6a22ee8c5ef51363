"""The architectures users bring, written out small: each factory returns ``(module,
example_inputs)`` with seeded weights, batch-norm statistics measured on random inputs and the
module in eval mode.

torchvision and transformers are not dependencies, so the networks are spelled here as those
libraries spell them (the same layers and operator sequences: SE blocks with hardsigmoid,
channel shuffle by view/transpose/view, fire modules and dense blocks concatenating, inception
branches, ConvNeXt and Swin blocks with their permutes, rolls and relative position bias, ViT
with a class token, BERT and GPT-2 blocks from int64 token ids), with reduced widths and depths
and 32x32 (or 64x64) images or 16-token sequences so that compiling them stays fast.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from compiler.zoo.bert import BertEncoder
from compiler.zoo.mobilenet import MobileNetV2
from compiler.zoo.resnet import BasicBlock
from compiler.zoo.seeded import seeded

__all__ = [
    "CNNS",
    "MODELS",
    "TRANSFORMERS",
    "random_like",
]

Example = tuple[torch.Tensor, ...]
Factory = Callable[[], tuple[nn.Module, Example]]


def _make(
    build: Callable[[], nn.Module], seed: int, calibration: Sequence[int] | None = None
) -> nn.Module:
    """``build()`` seeded by :func:`compiler.zoo.seeded.seeded` (Kaiming convolutions, random
    affine batch norms, running statistics of one train-mode batch of ``calibration`` shape),
    its layer norms given random affine parameters too so that folding them is exercised."""

    def perturbed() -> nn.Module:
        module = build()
        with torch.no_grad():
            for m in module.modules():
                if isinstance(m, nn.LayerNorm) and m.elementwise_affine:
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.25, 0.25)
        return module

    return seeded(perturbed, seed, calibration)


def _image(seed: int, size: int = 32, channels: int = 3) -> Example:
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(1, channels, size, size, generator=generator),)


def _tokens(seed: int, vocab: int, length: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (1, length), generator=generator, dtype=torch.int64)


def random_like(example: Example, seed: int) -> list[np.ndarray]:
    """Inputs drawn like ``example``: standard-normal floats; integers (token ids, attention
    masks) uniform between the example's least and greatest values."""
    rng = np.random.default_rng(seed)
    arrays = []
    for tensor in example:
        x = tensor.numpy()
        if np.issubdtype(x.dtype, np.floating):
            arrays.append(rng.standard_normal(x.shape).astype(x.dtype))
        else:
            arrays.append(rng.integers(int(x.min()), int(x.max()) + 1, x.shape).astype(x.dtype))
    return arrays


def _make_divisible(value: float, divisor: int = 8) -> int:
    """torchvision's ``_make_divisible``: ``value`` rounded to a multiple of ``divisor``, never
    below 90% of it."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def _conv_bn_act(
    cin: int,
    cout: int,
    kernel: int,
    stride: int = 1,
    groups: int = 1,
    act: type[nn.Module] | None = nn.ReLU,
) -> nn.Sequential:
    """torchvision's ``Conv2dNormActivation``: conv (no bias) + batch norm + activation."""
    layers: list[nn.Module] = [
        nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
    ]
    if act is not None:
        layers.append(act(inplace=True))
    return nn.Sequential(*layers)


# --------------------------------------------------------------------------------- ResNet


class Bottleneck(nn.Module):
    """torchvision's ResNet v1.5 bottleneck: 1x1 reduce, 3x3 (strided), 1x1 expand (x4), each
    with BN, the skip added, ReLU."""

    expansion = 4

    def __init__(self, cin: int, width: int, stride: int = 1) -> None:
        super().__init__()
        out = width * self.expansion
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample: nn.Module | None = None
        if stride != 1 or cin != out:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    """torchvision's ResNet: 7x7/2 stem + BN + ReLU + 3x3/2 max pool, four stages (the last
    three stride 2), global average pool, flatten, fc."""

    def __init__(
        self,
        block: type[BasicBlock] | type[Bottleneck],
        layers: Sequence[int],
        widths: Sequence[int],
        num_classes: int = 10,
    ) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = widths[0]
        stages = []
        for k, (count, width) in enumerate(zip(layers, widths, strict=True)):
            blocks = []
            for j in range(count):
                blocks.append(block(cin, width, 2 if k > 0 and j == 0 else 1))
                cin = width * block.expansion
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


def resnet18() -> tuple[nn.Module, Example]:
    """ResNet-18's structure (two basic blocks per stage), widths 16-128, 32x32 images."""
    build = lambda: ResNet(BasicBlock, (2, 2, 2, 2), (16, 32, 64, 128))  # noqa: E731
    return _make(build, 0, (8, 3, 32, 32)), _image(0)


def resnet50() -> tuple[nn.Module, Example]:
    """ResNet-50's bottlenecks (one per stage), widths 8-64 (outputs 32-256), 32x32 images."""
    build = lambda: ResNet(Bottleneck, (1, 1, 1, 1), (8, 16, 32, 64))  # noqa: E731
    return _make(build, 1, (8, 3, 32, 32)), _image(1)


# ---------------------------------------------------------------------------- MobileNets


def mobilenet_v2() -> tuple[nn.Module, Example]:
    """MobileNetV2 at a small width multiplier (8-32 block widths), 32x32 images."""
    settings = [(1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 2, 2), (6, 24, 1, 2), (6, 32, 1, 1)]
    build = partial(MobileNetV2, 10, settings, stem=8, head=64)
    return _make(build, 2, (8, 3, 32, 32)), _image(2)


class SqueezeExcitation(nn.Module):
    """torchvision's ``SqueezeExcitation``: global average pool, 1x1 conv, activation, 1x1
    conv, scale activation (hardsigmoid in MobileNetV3, sigmoid in EfficientNet), times the
    input."""

    def __init__(
        self,
        channels: int,
        squeeze: int,
        activation: type[nn.Module] = nn.ReLU,
        scale_activation: type[nn.Module] = nn.Sigmoid,
    ) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = self.avgpool(x)
        scale = self.activation(self.fc1(scale))
        scale = self.scale_activation(self.fc2(scale))
        return scale * x


class _Residual(nn.Module):
    """A block whose ``self.block`` output gets the input added where ``use_res_connect``
    (stride 1, as many channels out as in), as torchvision's MobileNetV3 and EfficientNet
    blocks do in place."""

    block: nn.Module
    use_res_connect: bool

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        result = self.block(x)
        if self.use_res_connect:
            result += x
        return result


class InvertedResidualV3(_Residual):
    """torchvision's MobileNetV3 block: [1x1 expand + BN + act], kxk depthwise + BN + act,
    [SE with hardsigmoid], 1x1 projection + BN, the input added back when it can be."""

    def __init__(
        self,
        cin: int,
        kernel: int,
        expanded: int,
        cout: int,
        use_se: bool,
        activation: str,
        stride: int,
    ) -> None:
        super().__init__()
        act = nn.Hardswish if activation == "HS" else nn.ReLU
        self.use_res_connect = stride == 1 and cin == cout
        layers: list[nn.Module] = []
        if expanded != cin:
            layers.append(_conv_bn_act(cin, expanded, 1, act=act))
        layers.append(_conv_bn_act(expanded, expanded, kernel, stride, expanded, act=act))
        if use_se:
            squeeze = _make_divisible(expanded // 4, 8)
            layers.append(SqueezeExcitation(expanded, squeeze, scale_activation=nn.Hardsigmoid))
        layers.append(_conv_bn_act(expanded, cout, 1, act=None))
        self.block = nn.Sequential(*layers)


class MobileNetV3Small(nn.Module):
    """torchvision's MobileNetV3-Small: 3x3/2 stem + Hardswish, the blocks, 1x1 head conv +
    Hardswish, global average pool, Linear + Hardswish + dropout + Linear."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        config = [
            (8, 3, 8, 8, True, "RE", 2),
            (8, 3, 24, 12, False, "RE", 2),
            (12, 3, 32, 12, False, "RE", 1),
            (12, 5, 48, 16, True, "HS", 2),
            (16, 5, 64, 16, True, "HS", 1),
            (16, 5, 64, 24, True, "HS", 2),
        ]
        layers: list[nn.Module] = [_conv_bn_act(3, 8, 3, 2, act=nn.Hardswish)]
        layers += [InvertedResidualV3(*c) for c in config]
        layers.append(_conv_bn_act(24, 96, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(96, 64),
            nn.Hardswish(inplace=True),
            nn.Dropout(0.2, inplace=True),
            nn.Linear(64, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.avgpool(self.features(x))
        x = torch.flatten(x, 1)
        return self.classifier(x)


def mobilenet_v3_small() -> tuple[nn.Module, Example]:
    """MobileNetV3-Small's block list shortened to six (SE with hardsigmoid, ReLU and
    Hardswish, 3x3 and 5x5 depthwise), 64x64 images (the network strides 32)."""
    return _make(MobileNetV3Small, 3, (8, 3, 64, 64)), _image(3, 64)


# ----------------------------------------------------------------------------- ShuffleNet


def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    """torchvision's channel shuffle: view as groups, transpose, view back."""
    batch, channels, height, width = x.size()
    x = x.view(batch, groups, channels // groups, height, width)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(batch, -1, height, width)


class ShuffleUnit(nn.Module):
    """torchvision's ShuffleNetV2 ``InvertedResidual``: at stride 1 the input is chunked in
    two and one half goes through the branch; at stride 2 both branches see it; the halves
    are concatenated and the channels shuffled."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        branch = cout // 2
        if stride > 1:
            self.branch1 = nn.Sequential(
                nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False),
                nn.BatchNorm2d(cin),
                nn.Conv2d(cin, branch, 1, bias=False),
                nn.BatchNorm2d(branch),
                nn.ReLU(inplace=True),
            )
        else:
            self.branch1 = nn.Sequential()
        first = cin if stride > 1 else branch
        self.branch2 = nn.Sequential(
            nn.Conv2d(first, branch, 1, bias=False),
            nn.BatchNorm2d(branch),
            nn.ReLU(inplace=True),
            nn.Conv2d(branch, branch, 3, stride, 1, groups=branch, bias=False),
            nn.BatchNorm2d(branch),
            nn.Conv2d(branch, branch, 1, bias=False),
            nn.BatchNorm2d(branch),
            nn.ReLU(inplace=True),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    """torchvision's ShuffleNetV2: 3x3/2 conv + BN + ReLU, 3x3/2 max pool, three stages (a
    stride-2 unit then stride-1 units), 1x1 conv5, mean over H and W, fc."""

    def __init__(
        self, repeats: Sequence[int], widths: Sequence[int], num_classes: int = 10
    ) -> None:
        super().__init__()
        self.conv1 = _conv_bn_act(3, widths[0], 3, 2)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = widths[0]
        stages = []
        for count, width in zip(repeats, widths[1:4], strict=True):
            units = [ShuffleUnit(cin, width, 2)]
            units += [ShuffleUnit(width, width, 1) for _ in range(count - 1)]
            stages.append(nn.Sequential(*units))
            cin = width
        self.stage2, self.stage3, self.stage4 = stages
        self.conv5 = _conv_bn_act(cin, widths[-1], 1)
        self.fc = nn.Linear(widths[-1], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.conv1(x))
        x = self.stage4(self.stage3(self.stage2(x)))
        x = self.conv5(x)
        x = x.mean([2, 3])
        return self.fc(x)


def shufflenet_v2_x0_5() -> tuple[nn.Module, Example]:
    """ShuffleNetV2 with repeats (2, 2, 1) and widths 8/16/32/64/128, 64x64 images."""
    build = lambda: ShuffleNetV2((2, 2, 1), (8, 16, 32, 64, 128))  # noqa: E731
    return _make(build, 4, (8, 3, 64, 64)), _image(4, 64)


# ----------------------------------------------------------------------------- SqueezeNet


class Fire(nn.Module):
    """torchvision's fire module: 1x1 squeeze + ReLU, then 1x1 and 3x3 expands (each + ReLU)
    concatenated."""

    def __init__(self, cin: int, squeeze: int, expand1x1: int, expand3x3: int) -> None:
        super().__init__()
        self.squeeze = nn.Conv2d(cin, squeeze, 1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze, expand1x1, 1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze, expand3x3, 3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.squeeze_activation(self.squeeze(x))
        return torch.cat(
            [
                self.expand1x1_activation(self.expand1x1(x)),
                self.expand3x3_activation(self.expand3x3(x)),
            ],
            1,
        )


class SqueezeNet11(nn.Module):
    """torchvision's SqueezeNet 1.1: 3x3/2 conv + ReLU, ceil-mode 3x3/2 max pools between
    pairs of fire modules, then dropout, 1x1 conv classifier + ReLU, global average pool,
    flatten."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(16, 4, 8, 8),
            Fire(16, 4, 8, 8),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(16, 8, 16, 16),
            Fire(32, 8, 16, 16),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(32, 12, 24, 24),
            Fire(48, 16, 32, 32),
        )
        self.classifier = nn.Sequential(
            nn.Dropout(0.5),
            nn.Conv2d(64, num_classes, 1),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((1, 1)),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = self.classifier(x)
        return torch.flatten(x, 1)


def squeezenet1_1() -> tuple[nn.Module, Example]:
    """SqueezeNet 1.1 with six fire modules of 4-16 squeeze channels, 64x64 images."""
    return _make(SqueezeNet11, 5), _image(5, 64)


# ---------------------------------------------------------------------------- EfficientNet


class MBConv(_Residual):
    """torchvision's EfficientNet MBConv: [1x1 expand + BN + SiLU], kxk depthwise + BN +
    SiLU, SE (squeeze to a quarter of the block's input, SiLU, sigmoid), 1x1 projection + BN,
    the input added back (stochastic depth is the identity in eval)."""

    def __init__(self, expand: int, kernel: int, stride: int, cin: int, cout: int) -> None:
        super().__init__()
        self.use_res_connect = stride == 1 and cin == cout
        hidden = cin * expand
        layers: list[nn.Module] = []
        if hidden != cin:
            layers.append(_conv_bn_act(cin, hidden, 1, act=nn.SiLU))
        layers.append(_conv_bn_act(hidden, hidden, kernel, stride, hidden, act=nn.SiLU))
        layers.append(SqueezeExcitation(hidden, max(1, cin // 4), activation=nn.SiLU))
        layers.append(_conv_bn_act(hidden, cout, 1, act=None))
        self.block = nn.Sequential(*layers)


class EfficientNet(nn.Module):
    """torchvision's EfficientNet-B0 layout: 3x3/2 stem + BN + SiLU, MBConv stages, 1x1 head
    conv + BN + SiLU, global average pool, flatten, dropout, Linear."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        settings = [  # expand, kernel, stride, in, out, layers
            (1, 3, 1, 8, 8, 1),
            (6, 3, 2, 8, 12, 2),
            (6, 5, 2, 12, 16, 1),
            (6, 3, 2, 16, 24, 1),
            (6, 5, 1, 24, 32, 1),
            (6, 5, 2, 32, 48, 1),
        ]
        layers: list[nn.Module] = [_conv_bn_act(3, 8, 3, 2, act=nn.SiLU)]
        for expand, kernel, stride, cin, cout, count in settings:
            stage = []
            for i in range(count):
                stage.append(MBConv(expand, kernel, stride if i == 0 else 1, cin, cout))
                cin = cout
            layers.append(nn.Sequential(*stage))
        layers.append(_conv_bn_act(48, 128, 1, act=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(0.2, inplace=True), nn.Linear(128, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.avgpool(self.features(x))
        x = torch.flatten(x, 1)
        return self.classifier(x)


def efficientnet_b0() -> tuple[nn.Module, Example]:
    """EfficientNet-B0's stages shortened (7 MBConvs, widths 8-48), 64x64 images."""
    return _make(EfficientNet, 6, (8, 3, 64, 64)), _image(6, 64)


# --------------------------------------------------------------------------------- RegNet


class ResBottleneckBlock(nn.Module):
    """torchvision's RegNet X block: 1x1 + BN + ReLU, 3x3 grouped (group width fixed,
    strided) + BN + ReLU, 1x1 + BN; a 1x1 strided projection + BN on the skip where the shape
    changes; ReLU of the sum."""

    def __init__(self, cin: int, cout: int, stride: int, group_width: int) -> None:
        super().__init__()
        self.proj: nn.Module | None = None
        if cin != cout or stride != 1:
            self.proj = _conv_bn_act(cin, cout, 1, stride, act=None)
        self.f = nn.Sequential(
            _conv_bn_act(cin, cout, 1),
            _conv_bn_act(cout, cout, 3, stride, groups=cout // group_width),
            _conv_bn_act(cout, cout, 1, act=None),
        )
        self.activation = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = x if self.proj is None else self.proj(x)
        return self.activation(skip + self.f(x))


class RegNetX(nn.Module):
    """torchvision's RegNet: 3x3/2 stem + BN + ReLU, stages of X blocks (each starting with
    stride 2), global average pool, flatten, fc."""

    def __init__(
        self,
        widths: Sequence[int],
        depths: Sequence[int],
        group_width: int,
        num_classes: int = 10,
    ) -> None:
        super().__init__()
        self.stem = _conv_bn_act(3, 8, 3, 2)
        cin = 8
        stages = []
        for width, depth in zip(widths, depths, strict=True):
            blocks = []
            for i in range(depth):
                blocks.append(ResBottleneckBlock(cin, width, 2 if i == 0 else 1, group_width))
                cin = width
            stages.append(nn.Sequential(*blocks))
        self.trunk_output = nn.Sequential(*stages)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.trunk_output(self.stem(x))
        x = self.avgpool(x)
        x = x.flatten(start_dim=1)
        return self.fc(x)


def regnet_x_400mf() -> tuple[nn.Module, Example]:
    """RegNetX-400MF's shape (group width 8: 2-8 groups), widths 16-64, depths (1, 1, 2, 1),
    64x64 images."""
    build = lambda: RegNetX((16, 32, 48, 64), (1, 1, 2, 1), 8)  # noqa: E731
    return _make(build, 7, (8, 3, 64, 64)), _image(7, 64)


# ------------------------------------------------------------------------------- DenseNet


class DenseLayer(nn.Module):
    """torchvision's dense layer: the previous features concatenated, BN + ReLU + 1x1 conv
    (bottleneck), BN + ReLU + 3x3 conv to ``growth`` channels."""

    def __init__(self, cin: int, growth: int, bn_size: int) -> None:
        super().__init__()
        self.norm1 = nn.BatchNorm2d(cin)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False)

    def forward(self, inputs: list[torch.Tensor]) -> torch.Tensor:
        concatenated = torch.cat(inputs, 1)
        bottleneck = self.conv1(self.relu1(self.norm1(concatenated)))
        return self.conv2(self.relu2(self.norm2(bottleneck)))


class DenseBlock(nn.ModuleDict):
    """torchvision's dense block: each layer sees every earlier feature map; the block's
    output concatenates them all."""

    def __init__(self, layers: int, cin: int, growth: int, bn_size: int) -> None:
        super().__init__()
        for i in range(layers):
            self.add_module(f"denselayer{i + 1}", DenseLayer(cin + i * growth, growth, bn_size))

    def forward(self, init_features: torch.Tensor) -> torch.Tensor:
        features = [init_features]
        for layer in self.values():
            features.append(layer(features))
        return torch.cat(features, 1)


class Transition(nn.Sequential):
    """torchvision's transition: BN + ReLU + 1x1 conv (halving the channels) + 2x2/2 average
    pool."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm2d(cin)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(cin, cout, 1, bias=False)
        self.pool = nn.AvgPool2d(2, 2)


class DenseNet(nn.Module):
    """torchvision's DenseNet: 7x7/2 conv + BN + ReLU + 3x3/2 max pool, dense blocks with
    transitions between, a final BN, then ReLU, global average pool, flatten, Linear."""

    def __init__(
        self,
        growth: int = 8,
        blocks: Sequence[int] = (2, 2, 2, 2),
        init_features: int = 16,
        bn_size: int = 2,
        num_classes: int = 10,
    ) -> None:
        super().__init__()
        layers: list[tuple[str, nn.Module]] = [
            ("conv0", nn.Conv2d(3, init_features, 7, 2, 3, bias=False)),
            ("norm0", nn.BatchNorm2d(init_features)),
            ("relu0", nn.ReLU(inplace=True)),
            ("pool0", nn.MaxPool2d(3, 2, 1)),
        ]
        channels = init_features
        for i, count in enumerate(blocks):
            layers.append((f"denseblock{i + 1}", DenseBlock(count, channels, growth, bn_size)))
            channels += count * growth
            if i != len(blocks) - 1:
                layers.append((f"transition{i + 1}", Transition(channels, channels // 2)))
                channels //= 2
        layers.append(("norm5", nn.BatchNorm2d(channels)))
        self.features = nn.Sequential(OrderedDict(layers))
        self.classifier = nn.Linear(channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.features(x)
        out = F.relu(features, inplace=True)
        out = F.adaptive_avg_pool2d(out, (1, 1))
        out = torch.flatten(out, 1)
        return self.classifier(out)


def densenet121() -> tuple[nn.Module, Example]:
    """DenseNet-121's structure with two layers per dense block, growth 8, 64x64 images."""
    return _make(DenseNet, 8, (8, 3, 64, 64)), _image(8, 64)


# ------------------------------------------------------------------------------ GoogLeNet


class BasicConv2d(nn.Module):
    """torchvision's GoogLeNet conv: conv (no bias) + BN (eps 0.001) + ReLU."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int = 1, padding: int = 0):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel, stride, padding, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=0.001)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.bn(self.conv(x)), inplace=True)


class Inception(nn.Module):
    """torchvision's inception module: 1x1; 1x1 then 3x3; 1x1 then 3x3 (torchvision's "5x5"
    branch); ceil-mode 3x3/1 max pool then 1x1; concatenated."""

    def __init__(
        self, cin: int, ch1x1: int, ch3x3red: int, ch3x3: int, ch5x5red: int, ch5x5: int, pool: int
    ) -> None:
        super().__init__()
        self.branch1 = BasicConv2d(cin, ch1x1, 1)
        self.branch2 = nn.Sequential(
            BasicConv2d(cin, ch3x3red, 1), BasicConv2d(ch3x3red, ch3x3, 3, padding=1)
        )
        self.branch3 = nn.Sequential(
            BasicConv2d(cin, ch5x5red, 1), BasicConv2d(ch5x5red, ch5x5, 3, padding=1)
        )
        self.branch4 = nn.Sequential(
            nn.MaxPool2d(3, 1, 1, ceil_mode=True), BasicConv2d(cin, pool, 1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outputs = [self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)]
        return torch.cat(outputs, 1)


class GoogLeNet(nn.Module):
    """torchvision's GoogLeNet (no auxiliary heads, no input transform): 7x7/2 conv, ceil-mode
    max pools, 1x1 and 3x3 convs, inception modules, global average pool, flatten, dropout,
    fc."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = BasicConv2d(3, 8, 7, 2, 3)
        self.maxpool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.conv2 = BasicConv2d(8, 8, 1)
        self.conv3 = BasicConv2d(8, 24, 3, padding=1)
        self.maxpool2 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.inception3a = Inception(24, 8, 12, 16, 2, 4, 4)  # 32
        self.inception3b = Inception(32, 16, 16, 24, 4, 12, 8)  # 60
        self.maxpool3 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.inception4a = Inception(60, 24, 12, 26, 2, 6, 8)  # 64
        self.maxpool4 = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.inception5a = Inception(64, 16, 12, 24, 4, 12, 12)  # 64
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool1(self.conv1(x))
        x = self.maxpool2(self.conv3(self.conv2(x)))
        x = self.maxpool3(self.inception3b(self.inception3a(x)))
        x = self.maxpool4(self.inception4a(x))
        x = self.inception5a(x)
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(self.dropout(x))


def googlenet() -> tuple[nn.Module, Example]:
    """GoogLeNet with four inception modules (3a, 3b, 4a, 5a) of 32-64 channels, 64x64
    images."""
    return _make(GoogLeNet, 9, (8, 3, 64, 64)), _image(9, 64)


# ------------------------------------------------------------------------------------ VGG


class VGG(nn.Module):
    """torchvision's VGG: 3x3 conv + ReLU layers and 2x2 max pools by a configuration, an
    adaptive average pool to the classifier's grid, flatten, Linear + ReLU + dropout twice,
    Linear."""

    def __init__(self, cfg: Sequence[int | str], grid: int, num_classes: int = 10) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin = 3
        for v in cfg:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                assert isinstance(v, int)
                layers += [nn.Conv2d(cin, v, 3, padding=1), nn.ReLU(inplace=True)]
                cin = v
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((grid, grid))
        self.classifier = nn.Sequential(
            nn.Linear(cin * grid * grid, 128),
            nn.ReLU(True),
            nn.Dropout(0.5),
            nn.Linear(128, 128),
            nn.ReLU(True),
            nn.Dropout(0.5),
            nn.Linear(128, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.avgpool(self.features(x))
        x = torch.flatten(x, 1)
        return self.classifier(x)


def vgg11() -> tuple[nn.Module, Example]:
    """VGG-11's configuration A at an eighth of the width, 64x64 images (2x2 features, the
    adaptive pool to 2x2 an identity as at 224x224 to 7x7)."""
    cfg: list[int | str] = [8, "M", 16, "M", 32, 32, "M", 64, 64, "M", 64, 64, "M"]
    return _make(lambda: VGG(cfg, 2), 10), _image(10, 64)


# ------------------------------------------------------------------------------- ConvNeXt


class LayerNorm2d(nn.LayerNorm):
    """torchvision's ConvNeXt ``LayerNorm2d``: permute to NHWC, layer norm, permute back."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class Permute(nn.Module):
    """torchvision's ``Permute`` module."""

    def __init__(self, dims: Sequence[int]) -> None:
        super().__init__()
        self.dims = list(dims)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.permute(x, self.dims)


class CNBlock(nn.Module):
    """torchvision's ConvNeXt block: 7x7 depthwise conv, permute to NHWC, LayerNorm, Linear
    (x4), GELU, Linear, permute back, times the layer scale, plus the input."""

    def __init__(self, dim: int, layer_scale: float) -> None:
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim, 7, padding=3, groups=dim, bias=True),
            Permute([0, 2, 3, 1]),
            nn.LayerNorm(dim, eps=1e-6),
            nn.Linear(dim, 4 * dim),
            nn.GELU(),
            nn.Linear(4 * dim, dim),
            Permute([0, 3, 1, 2]),
        )
        self.layer_scale = nn.Parameter(torch.ones(dim, 1, 1) * layer_scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer_scale * self.block(x) + x


class ConvNeXt(nn.Module):
    """torchvision's ConvNeXt: 4x4/4 patchify conv + LayerNorm2d, stages of CNBlocks with
    LayerNorm2d + 2x2/2 conv downsampling between, global average pool, LayerNorm2d, flatten,
    Linear."""

    def __init__(self, dims: Sequence[int], depths: Sequence[int], num_classes: int = 10) -> None:
        super().__init__()
        layers: list[nn.Module] = [
            nn.Sequential(nn.Conv2d(3, dims[0], 4, 4, bias=True), LayerNorm2d(dims[0], eps=1e-6))
        ]
        for i, (dim, depth) in enumerate(zip(dims, depths, strict=True)):
            layers.append(nn.Sequential(*(CNBlock(dim, 0.5) for _ in range(depth))))
            if i + 1 < len(dims):
                layers.append(
                    nn.Sequential(
                        LayerNorm2d(dim, eps=1e-6), nn.Conv2d(dim, dims[i + 1], 2, 2, bias=True)
                    )
                )
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            LayerNorm2d(dims[-1], eps=1e-6), nn.Flatten(1), nn.Linear(dims[-1], num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.avgpool(self.features(x))
        return self.classifier(x)


def convnext_tiny() -> tuple[nn.Module, Example]:
    """ConvNeXt-T's layout with one block per stage, dims 16-64 (layer scale 0.5 rather than
    1e-6, so the blocks count), 64x64 images."""
    build = lambda: ConvNeXt((16, 32, 48, 64), (1, 1, 1, 1))  # noqa: E731
    return _make(build, 11), _image(11, 64)


# ----------------------------------------------------------------------------------- Swin


def _relative_position_index(window: int) -> torch.Tensor:
    coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij"))
    flat = torch.flatten(coords, 1)
    relative = (flat[:, :, None] - flat[:, None, :]).permute(1, 2, 0).contiguous()
    relative[:, :, 0] += window - 1
    relative[:, :, 1] += window - 1
    relative[:, :, 0] *= 2 * window - 1
    return relative.sum(-1).flatten()


def shifted_window_attention(
    x: torch.Tensor,
    qkv: nn.Linear,
    proj: nn.Linear,
    relative_position_bias: torch.Tensor,
    window: int,
    num_heads: int,
    shift: int,
) -> torch.Tensor:
    """torchvision's ``shifted_window_attention`` (square windows): pad to whole windows,
    roll by the shift, partition into windows (view + permute), multi-head attention with the
    relative position bias and, when shifted, the mask of the regions that rolled together,
    windows merged back, the roll undone, the padding cropped."""
    batch, height, width, channels = x.shape
    pad_r = (window - width % window) % window
    pad_b = (window - height % window) % window
    x = F.pad(x, (0, 0, 0, pad_r, 0, pad_b))
    _, pad_h, pad_w, _ = x.shape
    shifts = [0 if window >= pad_h else shift, 0 if window >= pad_w else shift]
    if sum(shifts) > 0:
        x = torch.roll(x, shifts=(-shifts[0], -shifts[1]), dims=(1, 2))
    num_windows = (pad_h // window) * (pad_w // window)
    x = x.view(batch, pad_h // window, window, pad_w // window, window, channels)
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(batch * num_windows, window * window, channels)
    qkv_out = qkv(x)
    qkv_out = qkv_out.reshape(x.size(0), x.size(1), 3, num_heads, channels // num_heads)
    qkv_out = qkv_out.permute(2, 0, 3, 1, 4)
    q, k, v = qkv_out[0], qkv_out[1], qkv_out[2]
    q = q * (channels // num_heads) ** -0.5
    attn = q.matmul(k.transpose(-2, -1))
    attn = attn + relative_position_bias
    if sum(shifts) > 0:
        attn_mask = x.new_zeros((pad_h, pad_w))
        h_slices = ((0, -window), (-window, -shifts[0]), (-shifts[0], None))
        w_slices = ((0, -window), (-window, -shifts[1]), (-shifts[1], None))
        count = 0
        for h in h_slices:
            for w in w_slices:
                attn_mask[h[0] : h[1], w[0] : w[1]] = count
                count += 1
        attn_mask = attn_mask.view(pad_h // window, window, pad_w // window, window)
        attn_mask = attn_mask.permute(0, 2, 1, 3).reshape(num_windows, window * window)
        attn_mask = attn_mask.unsqueeze(1) - attn_mask.unsqueeze(2)
        attn_mask = attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(attn_mask == 0, 0.0)
        attn = attn.view(x.size(0) // num_windows, num_windows, num_heads, x.size(1), x.size(1))
        attn = attn + attn_mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, num_heads, x.size(1), x.size(1))
    attn = F.softmax(attn, dim=-1)
    x = attn.matmul(v).transpose(1, 2).reshape(x.size(0), x.size(1), channels)
    x = proj(x)
    x = x.view(batch, pad_h // window, pad_w // window, window, window, channels)
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(batch, pad_h, pad_w, channels)
    if sum(shifts) > 0:
        x = torch.roll(x, shifts=(shifts[0], shifts[1]), dims=(1, 2))
    return x[:, :height, :width, :].contiguous()


class ShiftedWindowAttention(nn.Module):
    """torchvision's ``ShiftedWindowAttention``: qkv and projection Linears, the relative
    position bias table gathered by a constant index buffer."""

    def __init__(self, dim: int, window: int, shift: int, num_heads: int) -> None:
        super().__init__()
        self.window, self.shift, self.num_heads = window, shift, num_heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        table = torch.randn((2 * window - 1) ** 2, num_heads) * 0.5
        self.relative_position_bias_table = nn.Parameter(table)
        self.register_buffer("relative_position_index", _relative_position_index(window))

    def get_relative_position_bias(self) -> torch.Tensor:
        n = self.window * self.window
        index = self.relative_position_index
        bias = self.relative_position_bias_table[index].view(n, n, -1)
        return bias.permute(2, 0, 1).contiguous().unsqueeze(0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bias = self.get_relative_position_bias()
        return shifted_window_attention(
            x, self.qkv, self.proj, bias, self.window, self.num_heads, self.shift
        )


class SwinBlock(nn.Module):
    """torchvision's ``SwinTransformerBlock``: pre-norm shifted-window attention and a GELU
    MLP, each added back (stochastic depth is the identity in eval)."""

    def __init__(self, dim: int, num_heads: int, window: int, shift: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-5)
        self.attn = ShiftedWindowAttention(dim, window, shift, num_heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-5)
        self.mlp = nn.Sequential(
            nn.Linear(dim, 4 * dim),
            nn.GELU(),
            nn.Dropout(0.0),
            nn.Linear(4 * dim, dim),
            nn.Dropout(0.0),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PatchMerging(nn.Module):
    """torchvision's ``PatchMerging``: the four 2x2 sub-grids (strided slices) concatenated
    on channels, LayerNorm, Linear to twice the width (no bias)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = nn.LayerNorm(4 * dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x0 = x[..., 0::2, 0::2, :]
        x1 = x[..., 1::2, 0::2, :]
        x2 = x[..., 0::2, 1::2, :]
        x3 = x[..., 1::2, 1::2, :]
        x = torch.cat([x0, x1, x2, x3], -1)
        return self.reduction(self.norm(x))


class SwinTransformer(nn.Module):
    """torchvision's Swin Transformer: 4x4/4 patch conv, permute to NHWC, LayerNorm; stages
    of blocks (shift 0, then half a window) with patch merging between; LayerNorm, permute to
    NCHW, global average pool, flatten, Linear."""

    def __init__(
        self,
        dim: int,
        depths: Sequence[int],
        heads: Sequence[int],
        window: int,
        num_classes: int = 10,
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = [
            nn.Sequential(nn.Conv2d(3, dim, 4, 4), Permute([0, 2, 3, 1]), nn.LayerNorm(dim))
        ]
        for i, (depth, num_heads) in enumerate(zip(depths, heads, strict=True)):
            width = dim * 2**i
            blocks = [
                SwinBlock(width, num_heads, window, 0 if k % 2 == 0 else window // 2)
                for k in range(depth)
            ]
            layers.append(nn.Sequential(*blocks))
            if i + 1 < len(depths):
                layers.append(PatchMerging(width))
        self.features = nn.Sequential(*layers)
        width = dim * 2 ** (len(depths) - 1)
        self.norm = nn.LayerNorm(width)
        self.permute = Permute([0, 3, 1, 2])
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.head = nn.Linear(width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm(self.features(x))
        x = self.flatten(self.avgpool(self.permute(x)))
        return self.head(x)


def swin_t() -> tuple[nn.Module, Example]:
    """Swin-T's layout with two stages of two blocks (the second shifted), width 16 then 32,
    2 and 4 heads, 4x4 windows, 32x32 images (an 8x8 then 4x4 token grid)."""
    build = lambda: SwinTransformer(16, (2, 2), (2, 4), 4)  # noqa: E731
    return _make(build, 12), _image(12, 32)


# ------------------------------------------------------------------------------------ ViT


class SelfAttention(nn.Module):
    """Multi-head self-attention written out: one qkv Linear, reshape + permute to heads,
    scaled q @ k^T, [plus a mask], softmax, @ v, heads merged, output Linear."""

    def __init__(self, dim: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, dim = x.shape
        qkv = self.qkv(x).reshape(batch, length, 3, self.num_heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.head_dim**-0.5
        probs = scores.softmax(dim=-1)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(batch, length, dim)
        return self.proj(out)


class ViTBlock(nn.Module):
    """torchvision's ViT ``EncoderBlock``: LayerNorm, self-attention (written out, or
    ``nn.MultiheadAttention`` as torchvision has it), residual; LayerNorm, Linear + GELU +
    Linear, residual."""

    def __init__(self, dim: int, num_heads: int, mlp: int, torch_mha: bool) -> None:
        super().__init__()
        self.torch_mha = torch_mha
        self.ln_1 = nn.LayerNorm(dim, eps=1e-6)
        self.self_attention: nn.Module = (
            nn.MultiheadAttention(dim, num_heads, batch_first=True)
            if torch_mha
            else SelfAttention(dim, num_heads)
        )
        self.ln_2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(
            nn.Linear(dim, mlp), nn.GELU(), nn.Dropout(0.0), nn.Linear(mlp, dim), nn.Dropout(0.0)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.ln_1(x)
        if self.torch_mha:
            y, _ = self.self_attention(y, y, y, need_weights=False)
        else:
            y = self.self_attention(y)
        x = x + y
        return x + self.mlp(self.ln_2(x))


class VisionTransformer(nn.Module):
    """torchvision's ViT: patch-embedding conv, flatten + permute to tokens, the class token
    concatenated in front, the position embedding added, encoder blocks, LayerNorm, the class
    token's features through the head."""

    def __init__(
        self,
        image: int,
        patch: int,
        dim: int,
        layers: int,
        heads: int,
        mlp: int,
        torch_mha: bool,
        num_classes: int = 10,
    ) -> None:
        super().__init__()
        self.patch, self.dim = patch, dim
        self.conv_proj = nn.Conv2d(3, dim, patch, patch)
        tokens = (image // patch) ** 2 + 1
        self.class_token = nn.Parameter(torch.randn(1, 1, dim) * 0.5)
        self.pos_embedding = nn.Parameter(torch.randn(1, tokens, dim) * 0.2)
        self.layers = nn.Sequential(*(ViTBlock(dim, heads, mlp, torch_mha) for _ in range(layers)))
        self.ln = nn.LayerNorm(dim, eps=1e-6)
        self.heads = nn.Linear(dim, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, _, h, w = x.shape
        x = self.conv_proj(x)
        x = x.reshape(n, self.dim, (h // self.patch) * (w // self.patch))
        x = x.permute(0, 2, 1)
        cls = self.class_token.expand(n, -1, -1)
        x = torch.cat([cls, x], dim=1)
        x = x + self.pos_embedding
        x = self.ln(self.layers(x))
        return self.heads(x[:, 0])


def vit() -> tuple[nn.Module, Example]:
    """ViT with two encoder blocks (attention written with Linear + reshape + matmul +
    softmax), hidden 32, 4 heads, MLP 64, 8x8 patches of 32x32 images (17 tokens)."""
    build = lambda: VisionTransformer(32, 8, 32, 2, 4, 64, torch_mha=False)  # noqa: E731
    return _make(build, 13), _image(13, 32)


def vit_mha() -> tuple[nn.Module, Example]:
    """:func:`vit` with ``nn.MultiheadAttention`` as torchvision writes it."""
    build = lambda: VisionTransformer(32, 8, 32, 2, 4, 64, torch_mha=True)  # noqa: E731
    return _make(build, 14), _image(14, 32)


# ---------------------------------------------------------------------- TransformerEncoder


def transformer_encoder() -> tuple[nn.Module, Example]:
    """``nn.TransformerEncoder`` of two ``nn.TransformerEncoderLayer``\\ s (d_model 32, 4
    heads, feed-forward 64, batch first) on a 1x16x32 sequence."""

    def build() -> nn.Module:
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True)
        return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    generator = torch.Generator().manual_seed(15)
    return _make(build, 15), (torch.randn(1, 16, 32, generator=generator),)


# ----------------------------------------------------------------------------------- BERT


def bert_block() -> tuple[nn.Module, Example]:
    """HF BERT's embeddings and one encoder layer (:class:`compiler.zoo.bert.BertEncoder`)
    with vocabulary 64, 16 tokens (the last three padding, masked out), hidden 32, 4 heads,
    intermediate 64."""
    ids = _tokens(16, 64, 16)
    mask = torch.ones(1, 16, dtype=torch.int64)
    mask[:, -3:] = 0
    return _make(lambda: BertEncoder(64, 16, 32, 4, 64, layers=1), 16), (ids, mask)


# ----------------------------------------------------------------------------------- GPT-2


class Conv1D(nn.Module):
    """HF's GPT-2 ``Conv1D``: a Linear with the weight stored (in, out), computed as
    ``addmm(bias, x.view(-1, in), weight)`` viewed back."""

    def __init__(self, nf: int, nx: int) -> None:
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.2)
        self.bias = nn.Parameter(torch.randn(nf) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size_out = (*x.size()[:-1], self.nf)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def gelu_new(x: torch.Tensor) -> torch.Tensor:
    """HF's ``NewGELUActivation``: the tanh approximation of GELU, written out."""
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
    return 0.5 * x * (1.0 + torch.tanh(inner))


class GPT2Block(nn.Module):
    """HF GPT-2 with one block: token + position embeddings; LayerNorm, c_attn (Conv1D) split
    in q, k, v, heads, scores scaled, the causal mask (a constant lower-triangular bool
    buffer, sliced) applied by ``torch.where`` with finfo.min, softmax, heads merged, c_proj,
    residual; LayerNorm, c_fc + gelu_new + c_proj, residual; final LayerNorm; the LM head (a
    Linear without bias tied to the token embedding)."""

    def __init__(self, vocab: int, positions: int, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads, self.head_dim, self.hidden = heads, hidden // heads, hidden
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(positions, hidden)
        self.ln_1 = nn.LayerNorm(hidden, eps=1e-5)
        self.c_attn = Conv1D(3 * hidden, hidden)
        self.attn_proj = Conv1D(hidden, hidden)
        causal = torch.tril(torch.ones((positions, positions), dtype=torch.bool))
        self.register_buffer("bias", causal.view(1, 1, positions, positions), persistent=False)
        self.ln_2 = nn.LayerNorm(hidden, eps=1e-5)
        self.c_fc = Conv1D(4 * hidden, hidden)
        self.mlp_proj = Conv1D(hidden, 4 * hidden)
        self.ln_f = nn.LayerNorm(hidden, eps=1e-5)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        self.lm_head.weight = self.wte.weight
        self.dropout = nn.Dropout(0.1)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        x = x.view((*x.size()[:-1], self.heads, self.head_dim))
        return x.permute(0, 2, 1, 3)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        length = input_ids.size(-1)
        position_ids = torch.arange(0, length, dtype=torch.long).unsqueeze(0)
        hidden = self.dropout(self.wte(input_ids) + self.wpe(position_ids))

        residual = hidden
        query, key, value = self.c_attn(self.ln_1(hidden)).split(self.hidden, dim=2)
        query, key, value = self._split(query), self._split(key), self._split(value)
        weights = torch.matmul(query, key.transpose(-1, -2))
        weights = weights / torch.full([], value.size(-1) ** 0.5, dtype=weights.dtype)
        causal_mask = self.bias[:, :, :length, :length]
        mask_value = torch.full([], torch.finfo(weights.dtype).min, dtype=weights.dtype)
        weights = torch.where(causal_mask, weights.to(weights.dtype), mask_value)
        weights = self.dropout(nn.functional.softmax(weights, dim=-1))
        attended = torch.matmul(weights, value).permute(0, 2, 1, 3).contiguous()
        attended = attended.view((*attended.size()[:-2], self.hidden))
        hidden = residual + self.dropout(self.attn_proj(attended))

        residual = hidden
        inner = gelu_new(self.c_fc(self.ln_2(hidden)))
        hidden = residual + self.dropout(self.mlp_proj(inner))
        return self.lm_head(self.ln_f(hidden))


def gpt2_block() -> tuple[nn.Module, Example]:
    """:class:`GPT2Block` with vocabulary 64, 32 positions, hidden 32, 4 heads, on 16 token
    ids."""
    return _make(lambda: GPT2Block(64, 32, 32, 4), 17), (_tokens(17, 64, 16),)


#: The convolutional networks, by name.
CNNS: dict[str, Factory] = {
    "resnet18": resnet18,
    "resnet50": resnet50,
    "mobilenet_v2": mobilenet_v2,
    "mobilenet_v3_small": mobilenet_v3_small,
    "shufflenet_v2_x0_5": shufflenet_v2_x0_5,
    "squeezenet1_1": squeezenet1_1,
    "efficientnet_b0": efficientnet_b0,
    "regnet_x_400mf": regnet_x_400mf,
    "densenet121": densenet121,
    "googlenet": googlenet,
    "vgg11": vgg11,
    "convnext_tiny": convnext_tiny,
}

#: The transformers, by name.
TRANSFORMERS: dict[str, Factory] = {
    "swin_t": swin_t,
    "vit": vit,
    "vit_mha": vit_mha,
    "transformer_encoder": transformer_encoder,
    "bert_block": bert_block,
    "gpt2_block": gpt2_block,
}

#: Every model, by name, in the order the table lists them.
MODELS: dict[str, Factory] = {**CNNS, **TRANSFORMERS}
