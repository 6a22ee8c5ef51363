"""Reference networks written as torch modules with seeded weights and batch-norm statistics
(torchvision is not installable here): ResNet-18 (:mod:`compiler.zoo.resnet`), a small CNN
trained on scikit-learn's bundled digits (:mod:`compiler.zoo.digits`) and MobileNet-style
depthwise blocks (:mod:`compiler.zoo.mobilenet`). The demo, the benchmarks and the tests compile
them; importing the package needs torch (the ``model`` extra)."""

import io
import warnings
from collections.abc import Sequence

import numpy as np
import torch

from compiler.zoo.seeded import seeded

__all__ = ["onnx_bytes", "run_torch", "seeded"]


def onnx_bytes(
    module: torch.nn.Module,
    *inputs: np.ndarray | torch.Tensor,
    input_names: Sequence[str] | None = None,
) -> bytes:
    """``module`` exported on ``inputs`` by torch.onnx's TorchScript exporter with batch norm
    kept (the dynamo exporter folds it into the convolutions and spells the head with ReduceMean
    and computed shapes), its deprecation notices silenced."""
    tensors = tuple(torch.from_numpy(x) if isinstance(x, np.ndarray) else x for x in inputs)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            tensors,
            buffer,
            input_names=None if input_names is None else list(input_names),
            dynamo=False,
            training=torch.onnx.TrainingMode.PRESERVE,
        )
    return buffer.getvalue()


def run_torch(module: torch.nn.Module, *inputs: np.ndarray) -> np.ndarray:
    """``module``'s float output for numpy ``inputs``, by PyTorch (the reference of the
    compiled model's accuracy)."""
    with torch.no_grad():
        return module(*(torch.from_numpy(x) for x in inputs)).numpy()
