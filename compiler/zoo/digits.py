"""Small classifiers for scikit-learn's bundled digits (8x8 grayscale, 10 classes), each
trained deterministically on the CPU in seconds (:func:`train_digits`): a CNN
(:func:`train_digits_cnn`), a MobileNet-style network of depthwise-separable blocks with
squeeze-excite (:class:`DigitsMobileNet`) and a transformer classifier whose tokens are the
image's rows (:class:`DigitsTransformer`): :data:`DIGITS_MODELS` names them."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

from compiler.zoo.bert import BertLayer

__all__ = [
    "DIGITS_MODELS",
    "DigitsCNN",
    "DigitsMobileNet",
    "DigitsSplit",
    "DigitsTransformer",
    "load_digits_split",
    "train_digits",
    "train_digits_cnn",
]


class DigitsSplit(NamedTuple):
    """Images as NCHW float32 in [0, 1], labels as int64."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


class DigitsCNN(nn.Module):
    """conv 1->16 3x3 + ReLU, conv 16->32 3x3 stride 2 + ReLU (to 4x4), flatten, fc -> 10."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.relu = nn.ReLU()
        self.fc = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.conv2(self.relu(self.conv1(x))))
        return self.fc(torch.flatten(x, 1))


class _SeparableSE(nn.Module):
    """Depthwise 3x3 + BN + ReLU6, squeeze-excite (average pool, 1x1 conv, ReLU, 1x1 conv,
    hardsigmoid, times the input), pointwise 1x1 + BN + ReLU6."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.depthwise = nn.Sequential(
            nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False),
            nn.BatchNorm2d(cin),
            nn.ReLU6(),
        )
        self.squeeze = nn.Sequential(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(cin, cin // 4, 1),
            nn.ReLU(),
            nn.Conv2d(cin // 4, cin, 1),
            nn.Hardsigmoid(),
        )
        self.pointwise = nn.Sequential(
            nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU6()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.depthwise(x)
        return self.pointwise(x * self.squeeze(x))


class DigitsMobileNet(nn.Module):
    """conv 1->16 3x3 + BN + ReLU6, separable blocks with squeeze-excite 16->32 and 32->48
    (stride 2, to 4x4), global average pool, fc -> 10."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU6()
        )
        self.blocks = nn.Sequential(_SeparableSE(16, 32, 1), _SeparableSE(32, 48, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(48, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.blocks(self.stem(x)))
        return self.fc(torch.flatten(x, 1))


class DigitsTransformer(nn.Module):
    """The image's 8 rows as 8 tokens of 8 pixels: a Linear embedding to 32 plus a learned
    position embedding, one :class:`~compiler.zoo.bert.BertLayer` (2 heads, intermediate 64),
    the tokens averaged, fc -> 10."""

    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.embed = nn.Linear(8, hidden)
        self.position = nn.Parameter(torch.zeros(1, 8, hidden))
        self.layer = BertLayer(hidden, 2, 2 * hidden)
        self.register_buffer("mask", torch.zeros(1, 1, 1, 8))
        self.fc = nn.Linear(hidden, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(x.reshape(x.shape[0], 8, 8)) + self.position
        return self.fc(self.layer(tokens, self.mask).mean(dim=1))


def load_digits_split(seed: int = 0, test_size: float = 0.25) -> DigitsSplit:
    """The digits, scaled to [0, 1], split stratified by class (``seed`` picks the split)."""
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=test_size, random_state=seed, stratify=y
    )
    return DigitsSplit(x_train, y_train, x_test, y_test)


def train_digits(
    build: Callable[[], nn.Module],
    seed: int = 0,
    epochs: int = 8,
    batch: int = 32,
    lr: float = 3e-3,
) -> tuple[nn.Module, np.ndarray, np.ndarray]:
    """``build()`` trained with Adam on :func:`load_digits_split` ``(seed)``'s training part,
    in eval mode, and the test images and labels. Deterministic: one thread, torch's global
    random state forked and seeded (and left as it was)."""
    split = load_digits_split(seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = build()
            optimizer = torch.optim.Adam(model.parameters(), lr=lr)
            x, y = torch.from_numpy(split.x_train), torch.from_numpy(split.y_train)
            for _ in range(epochs):
                for idx in torch.randperm(len(x)).split(batch):
                    optimizer.zero_grad()
                    nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
                    optimizer.step()
    finally:
        torch.set_num_threads(threads)
    return model.eval(), split.x_test, split.y_test


def train_digits_cnn(
    seed: int = 0, epochs: int = 8, batch: int = 32
) -> tuple[DigitsCNN, np.ndarray, np.ndarray]:
    """A :class:`DigitsCNN` trained by :func:`train_digits`."""
    return train_digits(DigitsCNN, seed, epochs, batch)


#: The digits classifiers by name: (the class, the epochs :func:`train_digits` trains it).
DIGITS_MODELS: dict[str, tuple[type[nn.Module], int]] = {
    "cnn": (DigitsCNN, 8),
    "mobilenet": (DigitsMobileNet, 12),
    "transformer": (DigitsTransformer, 20),
}
