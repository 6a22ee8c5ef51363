"""A small CNN for scikit-learn's bundled digits (8x8 grayscale, 10 classes), trained
deterministically on the CPU in a few seconds: :func:`train_digits_cnn`."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

__all__ = ["DigitsCNN", "DigitsSplit", "load_digits_split", "train_digits_cnn"]


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


def load_digits_split(seed: int = 0, test_size: float = 0.25) -> DigitsSplit:
    """The digits, scaled to [0, 1], split stratified by class (``seed`` picks the split)."""
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=test_size, random_state=seed, stratify=y
    )
    return DigitsSplit(x_train, y_train, x_test, y_test)


def train_digits_cnn(
    seed: int = 0, epochs: int = 8, batch: int = 32
) -> tuple[DigitsCNN, np.ndarray, np.ndarray]:
    """A :class:`DigitsCNN` trained with Adam on :func:`load_digits_split` ``(seed)``'s
    training part, in eval mode, and the test images and labels. Deterministic: one thread,
    torch's global random state forked and seeded (and left as it was)."""
    split = load_digits_split(seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = DigitsCNN()
            optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
            x, y = torch.from_numpy(split.x_train), torch.from_numpy(split.y_train)
            for _ in range(epochs):
                for idx in torch.randperm(len(x)).split(batch):
                    optimizer.zero_grad()
                    nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
                    optimizer.step()
    finally:
        torch.set_num_threads(threads)
    return model.eval(), split.x_test, split.y_test
