"""Programs the compiler generates (``compiler.accel``), as conformance cases: every level runs
them bit-exactly (the functional and cycle-level simulators, the Amaranth RTL, Verilator), and
the cycle model is held to the RTL on them.

Each conv2d case compiles the accelerator's conv2d template on seeded random data and checks the
output against an independent numpy convolution with the same requantisation,
``clip(((x * w) >> shift) + bias, 0, 127)`` as int8; the knobs cover both kinds of virtual
threads (rows and output channels), resident and per-step weights, padding and strides.

Each model-step case compiles a small residual CNN with ``compile_model`` and takes one of its
accelerator programs (a requantising convolution with the bias before the shift, the rounding
residual add, the max pooling; and, quantized with the ``per-channel`` scheme, a convolution
and a dense layer requantised per channel by MUL and SHR of accumulator rows): its DRAM holds
the model's parameters and the step's inputs as ``compiler.reference`` computes them, and the
step's output must equal the reference's.
"""

from __future__ import annotations

import numpy as np

from compiler import build, te
from compiler.accel import Env
from compiler.accel.layout import pack_bias, pack_nchw, pack_oihw
from compiler.accel.templates import CONV2D
from compiler.graph.interpret import run_graph
from compiler.model import compile_model
from isa import AccelConfig, DramBuffer, MemId
from runtime.opset import OPERATORS
from tests.compiler.model.graphs import residual_cnn, samples
from tests.conformance.common import Built, ConformanceCase, Expectation, built, random_ints

__all__ = [
    "COMPILED_CASES",
    "build_compiled_conv2d",
    "build_model_step",
    "conv2d_reference_any",
    "requantized_conv2d",
]

SHIFT = 4


def conv2d_reference_any(x: np.ndarray, w: np.ndarray, stride: int, padding: int) -> np.ndarray:
    """numpy's int64 conv2d of NCHW ``x`` and OIHW ``w`` for any kernel, stride and padding."""
    kh, kw = w.shape[2:]
    padded = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (padded.shape[2] - kh) // stride + 1
    ow = (padded.shape[3] - kw) // stride + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow), dtype=np.int64)
    for dy in range(kh):
        for dx in range(kw):
            window = padded[:, :, dy : dy + stride * oh : stride, dx : dx + stride * ow : stride]
            out += np.einsum("nchw,oc->nohw", window, w[:, :, dy, dx])
    return out


def requantized_conv2d(
    x: np.ndarray, w: np.ndarray, bias: np.ndarray, stride: int, padding: int, shift: int
) -> np.ndarray:
    """VTA's epilogue on numpy's conv2d: ``clip((conv >> shift) + bias, 0, 127)``, NCHW, with
    a per-output-channel ``bias``."""
    acc = conv2d_reference_any(x.astype(np.int64), w.astype(np.int64), stride, padding)
    return np.clip((acc >> shift) + bias.astype(np.int64).reshape(1, -1, 1, 1), 0, 127)


def build_compiled_conv2d(
    cfg: AccelConfig,
    seed: int,
    size: int,
    kernel: int,
    stride: int,
    padding: int,
    knobs: dict,
    channels: tuple[int, int] | None = None,
    shift: int = SHIFT,
) -> Built:
    """The compiled conv2d of ``channels`` (default ``2 x BLOCK_IN -> 4 x BLOCK_OUT``) on a
    ``size``-square image, with ``knobs`` (the rest default), on seeded random data, and its
    numpy check."""
    env = Env(cfg)
    rng = np.random.default_rng(seed)
    cin, cout = channels or (2 * cfg.block_in, 4 * cfg.block_out)
    x = random_ints(rng, cfg.inp_width, (cfg.batch, cin, size, size))
    w = random_ints(rng, cfg.wgt_width, (cout, cin, kernel, kernel))
    bias = random_ints(rng, cfg.acc_width, (cout,), -64, 64)
    xp = pack_nchw(x.astype(env.inp_dtype), env)
    wp = pack_oihw(w.astype(env.wgt_dtype), env)
    bp = pack_bias(bias.astype(env.acc_dtype), env)
    data = te.placeholder(xp.shape, env.inp_dtype, "data")
    weights = te.placeholder(wp.shape, env.wgt_dtype, "kernel")
    bias_t = te.placeholder(bp.shape, env.acc_dtype, "bias")
    params = {"env": env, "stride": stride, "padding": padding}
    config = CONV2D.space(data, weights, bias_t, **params).default() | knobs
    s, res = CONV2D(data, weights, bias_t, shift=shift, config=config, **params)
    f = build(s, [data, weights, bias_t, res], target=env.target, name="conv2d")
    program = f.bind(xp, wp, bp, np.zeros(res.shape, env.out_dtype))
    expected = requantized_conv2d(x, w, bias, stride, padding, shift)
    packed = pack_nchw(expected, env, block=cfg.block_out)
    return built(program, [Expectation("compiled_conv2d", f.layout["res"], packed, cfg.out_width)])


def build_model_step(cfg: AccelConfig, seed: int, node: str, scheme: str = "pow2") -> Built:
    """The program of accelerator step ``node`` of a seeded residual CNN compiled for ``cfg``
    (quantized by ``scheme``), on a DRAM image holding the parameters and its inputs as the
    reference computes them."""
    graph = residual_cnn(seed, channels=2 * cfg.block_out, size=6, in_channels=cfg.block_in)
    model = compile_model(graph, cfg, calibration=samples(graph, 2, seed=seed), scheme=scheme)
    values = run_graph(model.graph, samples(graph, 1, seed=seed + 1), keep=True)
    image = model.image
    (step,) = [s for s in image.steps if s.node == node]
    dram = np.zeros(image.dram_bytes, dtype=np.uint8)
    dram[: len(image.params)] = np.frombuffer(image.params, np.uint8)
    layout = {"batch": cfg.batch, "block": cfg.block_out}

    def packed(value: str) -> np.ndarray:
        array = values[value]
        return OPERATORS["Pack"].kernel(array, **layout, channels=array.shape[1])

    source = model.graph.node(node)
    for name, value in zip(step.inputs, source.inputs, strict=True):
        if value not in model.graph.params:  # activations; constants are in the parameters
            image.tensors[name].view(dram)[...] = packed(value)
    out = image.tensors[step.outputs[0]]
    elem = cfg.elem_bytes(MemId.OUT)
    buffer = DramBuffer(out.name, MemId.OUT, out.address, out.nbytes // elem, elem)
    expected = packed(source.outputs[0])
    return Built(
        step.program,
        dram,
        Expectation(f"model step {node}", buffer, expected, cfg.out_width).check,
        (buffer,),
    )


def _case(name: str, size: int, kernel: int, stride: int, padding: int, **knobs) -> ConformanceCase:
    return ConformanceCase(
        name,
        lambda cfg, seed: build_compiled_conv2d(cfg, seed, size, kernel, stride, padding, knobs),
    )


COMPILED_CASES: tuple[ConformanceCase, ...] = (
    _case("compiled_conv3x3_rows_vt2", 6, 3, 1, 1, tile_h=3, h_threads=2, oc_threads=1),
    _case(
        "compiled_conv3x3_steps_oc_vt2",
        4,
        3,
        1,
        1,
        tile_co=2,
        tile_ci=1,
        h_threads=1,
        oc_threads=2,
        weights_resident=False,
    ),
    _case("compiled_conv1x1_stride2", 6, 1, 2, 0, h_threads=1, oc_threads=1),
    *(
        ConformanceCase(f"model_step_{n}", lambda cfg, seed, n=n: build_model_step(cfg, seed, n))
        for n in ("conv2", "add", "pool")
    ),
    *(
        ConformanceCase(
            f"model_step_per_channel_{n}",
            lambda cfg, seed, n=n: build_model_step(cfg, seed, n, "per-channel"),
            uses_mul=True,
        )
        for n in ("conv2", "fc")
    ),
)
