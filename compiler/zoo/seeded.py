"""How the zoo's models draw their parameters and batch-norm statistics, seeded."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

__all__ = ["seeded"]


def seeded(
    build: Callable[[], nn.Module], seed: int, calibration: Sequence[int] | None = None
) -> nn.Module:
    """``build()`` in eval mode with parameters drawn from ``seed`` and torch's global random
    state left as it was.

    Convolutions get Kaiming-normal weights (fan out, as torchvision's ResNet) and zero biases;
    affine batch norms get weights in [0.5, 1.5) and biases in [-0.25, 0.25). With a
    ``calibration`` shape, the running statistics are then those of one batch of
    standard-normal inputs of that shape (a train-mode pass, each layer normalised by the
    statistics it records), so activations keep an O(1) spread through the network in eval
    mode while mean and variance differ from channel to channel.
    """
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        module = build()
        norms = [m for m in module.modules() if isinstance(m, nn.BatchNorm2d)]
        for m in module.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
        for bn in (bn for bn in norms if bn.affine):
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.25, 0.25)
        if calibration is not None:
            for bn in norms:
                bn.reset_running_stats()
                bn.momentum = None  # a cumulative average: one batch's statistics exactly
            module.train()(torch.randn(*calibration))
            for bn in norms:
                bn.momentum = 0.1
    return module.eval()
