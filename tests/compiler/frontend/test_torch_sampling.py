"""The aten converters of interpolation and transposed convolution against torch:
``upsample_nearest2d`` and ``upsample_bilinear2d`` (from ``F.interpolate`` and ``nn.Upsample``,
by scale factors and by sizes, with and without ``align_corners``) and ``conv_transpose2d``
(``nn.ConvTranspose2d`` with strides, padding, output padding, groups and dilation).

Tolerances: ``1e-5`` for the resizes, ``1e-4`` for the transposed convolutions' sums.
"""

from __future__ import annotations

import pytest
import torch.nn.functional as F
from torch import nn

from tests.compiler.frontend.test_torch import Fn, _import_and_compare, _inputs

EXACT = {"rtol": 1e-5, "atol": 1e-5}
SUMS = {"rtol": 1e-4, "atol": 1e-4}

RESIZES = [
    ("upsample-module", lambda: nn.Upsample(scale_factor=2), (2, 3, 5, 6)),
    (
        "upsample-module-bilinear",
        lambda: nn.Upsample(scale_factor=2, mode="bilinear"),
        (1, 2, 4, 5),
    ),
    ("nearest-x2", lambda: Fn(lambda s, x: F.interpolate(x, scale_factor=2)), (1, 3, 4, 4)),
    ("nearest-x3", lambda: Fn(lambda s, x: F.interpolate(x, scale_factor=3)), (1, 2, 5, 3)),
    ("nearest-x1.5", lambda: Fn(lambda s, x: F.interpolate(x, scale_factor=1.5)), (1, 2, 6, 7)),
    (
        "nearest-size",
        lambda: Fn(lambda s, x: F.interpolate(x, size=(7, 11))),
        (1, 2, 5, 6),
    ),
    (
        "nearest-size-down",
        lambda: Fn(lambda s, x: F.interpolate(x, size=(3, 4))),
        (1, 2, 7, 9),
    ),
    (
        "bilinear-x2",
        lambda: Fn(lambda s, x: F.interpolate(x, scale_factor=2, mode="bilinear")),
        (1, 3, 4, 5),
    ),
    (
        "bilinear-x2-align-corners",
        lambda: Fn(
            lambda s, x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
        ),
        (1, 3, 4, 5),
    ),
    (
        "bilinear-size",
        lambda: Fn(lambda s, x: F.interpolate(x, size=(9, 4), mode="bilinear")),
        (2, 2, 5, 6),
    ),
    (
        "bilinear-size-align-corners",
        lambda: Fn(lambda s, x: F.interpolate(x, size=(9, 4), mode="bilinear", align_corners=True)),
        (2, 2, 5, 6),
    ),
    (
        "bilinear-size-1",
        lambda: Fn(lambda s, x: F.interpolate(x, size=(1, 3), mode="bilinear")),
        (1, 2, 5, 6),
    ),
    (
        "bilinear-x0.5",
        lambda: Fn(lambda s, x: F.interpolate(x, scale_factor=0.5, mode="bilinear")),
        (1, 2, 8, 6),
    ),
]


@pytest.mark.parametrize(("make", "shape"), [c[1:] for c in RESIZES], ids=[c[0] for c in RESIZES])
def test_resize(make, shape) -> None:
    graph = _import_and_compare(make(), _inputs([shape]), EXACT)
    assert [node.op.value for node in graph.nodes] == ["Resize"]


CONV_TRANSPOSES = [
    ("plain", lambda: nn.ConvTranspose2d(3, 4, 3), (1, 3, 5, 5)),
    (
        "stride-pad-output-padding",
        lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1),
        (2, 4, 5, 6),
    ),
    ("groups", lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2), (1, 4, 4, 5)),
    (
        "depthwise",
        lambda: nn.ConvTranspose2d(4, 4, 2, stride=2, groups=4, bias=False),
        (1, 4, 3, 3),
    ),
    (
        "dilation",
        lambda: nn.ConvTranspose2d(2, 3, (3, 2), stride=(1, 2), padding=(2, 1), dilation=2),
        (1, 2, 6, 5),
    ),
    (
        "output-padding-dilation",
        lambda: nn.ConvTranspose2d(2, 2, 3, stride=3, output_padding=(2, 1), dilation=(3, 2)),
        (1, 2, 3, 4),
    ),
]


@pytest.mark.parametrize(
    ("make", "shape"), [c[1:] for c in CONV_TRANSPOSES], ids=[c[0] for c in CONV_TRANSPOSES]
)
def test_conv_transpose(make, shape) -> None:
    graph = _import_and_compare(make(), _inputs([shape]), SUMS)
    assert [node.op.value for node in graph.nodes] == ["ConvTranspose"]
