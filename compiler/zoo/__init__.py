"""Reference networks written as torch modules with seeded weights and batch-norm statistics
(torchvision is not installable here): ResNet-18 (:mod:`compiler.zoo.resnet`), a small CNN
trained on scikit-learn's bundled digits (:mod:`compiler.zoo.digits`) and MobileNet-style
depthwise blocks (:mod:`compiler.zoo.mobilenet`). The demo, the benchmarks and the tests compile
them; importing the package needs torch (the ``model`` extra)."""

import numpy as np
import torch

from compiler.zoo.seeded import seeded

__all__ = ["run_torch", "seeded"]


def run_torch(module: torch.nn.Module, *inputs: np.ndarray) -> np.ndarray:
    """``module``'s float output for numpy ``inputs``, by PyTorch (the reference of the
    compiled model's accuracy)."""
    with torch.no_grad():
        return module(*(torch.from_numpy(x) for x in inputs)).numpy()
