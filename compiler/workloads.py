"""Workloads for :func:`runtime.sweep.sweep`: compiled programs and models as picklable values.

A workload has a ``key`` (its name in a sweep's table and cache) and ``build(cfg)``, which
compiles it for one configuration and returns what the sweep runs:

- :class:`ConvWorkload`: one convolution layer (a :class:`~compiler.accel.templates.ConvLayer`,
  e.g. of :data:`~compiler.accel.templates.RESNET18_LAYERS`) compiled by the CONV2D template with
  its default knobs for the configuration, bound to seeded random packed data: an
  :class:`isa.Program`.
  :func:`resnet18_layers` gives ResNet-18's C2..C12.
- :class:`ModelWorkload`: a small whole model (:data:`MODELS`) compiled by
  :func:`compiler.compile_model`: a :class:`runtime.model.ModelImage`.

Both raise :class:`CompileError` where the configuration cannot hold them (the sweep records the
message). :func:`conv_layer_call` gives a layer's CONV2D arguments for any use (the tuner's
tasks, ``benchmarks/accel_layers.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.accel.env import Env
from compiler.accel.function import AccelFunction
from compiler.accel.templates import CONV2D, RESNET18_LAYERS, ConvLayer
from compiler.build import build
from compiler.errors import CompileError
from compiler.graph import AxisAttrs, ConvAttrs, GemmAttrs, Graph, GraphBuilder, Op
from compiler.model import compile_model
from compiler.te import Tensor, placeholder
from compiler.templates.knobs import KnobSpace
from isa import AccelConfig, Program
from runtime.model import ModelImage

__all__ = [
    "CONV_SHIFT",
    "MODELS",
    "ConvWorkload",
    "ModelWorkload",
    "compile_conv_layer",
    "conv_layer_call",
    "conv_layer_space",
    "resnet18_layers",
    "small_cnn",
]

#: The right shift of the conv layers' requantising epilogue (VTA's benchmark layers).
CONV_SHIFT = 8


# ---------------------------------------------------------------------------------- conv layers
def conv_layer_call(
    layer: ConvLayer, env: Env, shift: int = CONV_SHIFT
) -> tuple[tuple[Tensor, Tensor, Tensor], dict[str, Any]]:
    """The CONV2D template's arguments for ``layer``: the packed data, kernel and bias
    placeholders (batch 1; input channels padded to whole blocks; output channels must be whole
    blocks) and the keyword parameters (``env``, stride, padding and the ``>> shift``, ``+ bias``,
    clip epilogue's shift)."""
    if layer.cout % env.BLOCK_OUT:
        raise CompileError(
            f"{layer.cout} output channels are not whole blocks of {env.BLOCK_OUT}",
            op="conv2d",
        )
    ci = -(-layer.cin // env.BLOCK_IN)
    co = layer.cout // env.BLOCK_OUT
    size, kernel = layer.size, layer.kernel
    data = placeholder((1, ci, size, size, env.BATCH, env.BLOCK_IN), env.inp_dtype, "data")
    weights = placeholder(
        (co, ci, kernel, kernel, env.BLOCK_OUT, env.BLOCK_IN), env.wgt_dtype, "kernel"
    )
    bias = placeholder((1, co, 1, 1, env.BATCH, env.BLOCK_OUT), env.acc_dtype, "bias")
    params = {"env": env, "stride": layer.stride, "padding": layer.padding, "shift": shift}
    return (data, weights, bias), params


def conv_layer_space(layer: ConvLayer, env: Env) -> KnobSpace:
    """The CONV2D template's knob space for ``layer`` (``.default()``: the default knobs)."""
    inputs, params = conv_layer_call(layer, env)
    return CONV2D.space(*inputs, **params)


def compile_conv_layer(
    layer: ConvLayer, env: Env, config: dict[str, Any] | None = None
) -> AccelFunction:
    """``layer`` compiled by the CONV2D template (``config``: its knobs; None: the defaults)
    with the ``>> CONV_SHIFT``, ``+ bias``, clip epilogue."""
    inputs, params = conv_layer_call(layer, env)
    schedule, result = CONV2D(*inputs, **params, config=config)
    return build(schedule, [*inputs, result], target=env.target, name=layer.name)


@dataclass(frozen=True)
class ConvWorkload:
    """One conv layer with the template's default knobs, its data, weights and biases drawn
    uniformly from [-128, 127] with ``seed`` (key ``conv:<layer name>``)."""

    layer: ConvLayer
    seed: int = 0

    @property
    def key(self) -> str:
        return f"conv:{self.layer.name}"

    def build(self, cfg: AccelConfig) -> Program:
        """The compiled layer as a program with its inputs in its DRAM segments."""
        function = compile_conv_layer(self.layer, Env(cfg))
        rng = np.random.default_rng(self.seed)
        arrays = [
            np.zeros(a.shape, a.dtype)
            if a.is_output
            else rng.integers(-128, 127, a.shape, dtype=a.dtype, endpoint=True)
            for a in function.arguments
        ]
        return function.bind(*arrays)


def resnet18_layers(seed: int = 0) -> list[ConvWorkload]:
    """ConvWorkloads of ResNet-18's C2..C12 (VTA's benchmark table without C1)."""
    return [ConvWorkload(layer, seed) for layer in RESNET18_LAYERS if layer.name != "C1"]


# ---------------------------------------------------------------------------------- models
def small_cnn(
    seed: int = 0, *, size: int = 8, channels: int = 16, in_channels: int = 3, classes: int = 10
) -> Graph:
    """A seeded float CNN built directly as a graph (no frontend): conv 3x3 + ReLU, conv 3x3
    stride 2 + ReLU, global average pool, flatten, dense."""
    rng = np.random.default_rng(seed)

    def weights(*shape: int, fan_in: int) -> np.ndarray:
        return (rng.standard_normal(shape) / fan_in**0.5).astype(np.float32)

    b = GraphBuilder(f"small_cnn_{seed}")
    x = b.input("x", (1, in_channels, size, size))
    w1 = b.param("w1", weights(channels, in_channels, 3, 3, fan_in=9 * in_channels))
    b1 = b.param("b1", weights(channels, fan_in=100))
    h = b.add1(Op.CONV, [x, w1, b1], ConvAttrs(pads=(1, 1, 1, 1)), name="conv1")
    h = b.add1(Op.RELU, [h], name="relu1")
    w2 = b.param("w2", weights(2 * channels, channels, 3, 3, fan_in=9 * channels))
    b2 = b.param("b2", weights(2 * channels, fan_in=100))
    stride2 = ConvAttrs(strides=(2, 2), pads=(1, 1, 1, 1))
    h = b.add1(Op.RELU, [b.add1(Op.CONV, [h, w2, b2], stride2, name="conv2")], name="relu2")
    h = b.add1(Op.GLOBAL_AVERAGE_POOL, [h], name="gap")
    h = b.add1(Op.FLATTEN, [h], AxisAttrs(1), name="flatten")
    fc_w = b.param("fc_w", weights(classes, 2 * channels, fan_in=2 * channels))
    fc_b = b.param("fc_b", weights(classes, fan_in=100))
    return b.build([b.add1(Op.GEMM, [h, fc_w, fc_b], GemmAttrs(trans_b=True), name="fc")])


def _digits_cnn(seed: int) -> Any:
    from compiler.zoo import seeded
    from compiler.zoo.digits import DigitsCNN

    return seeded(DigitsCNN, seed)


#: The models a :class:`ModelWorkload` can name: each builds a float model (a graph or a torch
#: module; ``digits_cnn``, untrained with seeded weights, needs torch) from a seed, and the
#: shape of its single input.
MODELS: dict[str, tuple[Callable[[int], Any], tuple[int, ...]]] = {
    "small_cnn": (small_cnn, (1, 3, 8, 8)),
    "digits_cnn": (_digits_cnn, (1, 1, 8, 8)),
}


@dataclass(frozen=True)
class ModelWorkload:
    """The model ``name`` of :data:`MODELS` with weights from ``seed``, quantized on
    ``calibration`` seeded standard-normal samples and compiled whole (CPU steps as numpy
    kernels: they take no accelerator cycles); key ``model:<name>`` (plus ``:s<seed>`` for a
    seed other than 0)."""

    name: str
    seed: int = 0
    calibration: int = 2

    def __post_init__(self) -> None:
        if self.name not in MODELS:
            raise CompileError(f"unknown model {self.name!r}; choose one of {', '.join(MODELS)}")

    @property
    def key(self) -> str:
        return f"model:{self.name}" + (f":s{self.seed}" if self.seed else "")

    def build(self, cfg: AccelConfig) -> ModelImage:
        """The compiled model's image for ``cfg``."""
        make, shape = MODELS[self.name]
        rng = np.random.default_rng(self.seed + 1)
        samples = [rng.standard_normal(shape).astype(np.float32) for _ in range(self.calibration)]
        compiled = compile_model(make(self.seed), cfg, calibration=samples)
        return compiled.image
