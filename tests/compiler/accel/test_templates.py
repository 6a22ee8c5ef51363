"""The accelerator's operator templates, compiled with their default knobs and run on the
functional simulator (race detection on), bit-exact against independent numpy references:
every ResNet-18 conv layer of VTA's table, dense, the residual add, max and global average
pooling, at the default and tiny configurations, and at tiny without the ALU multiplier (which
every template but a global average pool of other than a power-of-two pixel count runs without)."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import CompileError, build, te
from compiler.accel import Env
from compiler.accel.layout import pack_nchw, unpack_nchw
from compiler.accel.templates import (
    ADD,
    DENSE,
    GLOBAL_AVG_POOL,
    MAX_POOL,
    RESNET18_LAYERS,
    average_divisor,
)
from isa import AccelConfig
from runtime import open_device
from tests.conformance.compiled_cases import build_compiled_conv2d

DEFAULT = Env(AccelConfig.preset("default"))
TINY = Env(AccelConfig.preset("tiny"))
NOMUL = Env(AccelConfig.preset("tiny").replace(alu_mul=False))
ENVS = pytest.mark.parametrize("env", [DEFAULT, TINY, NOMUL], ids=["default", "tiny", "nomul"])


def _ints(rng: np.random.Generator, shape: tuple, low: int = -128, high: int = 128) -> np.ndarray:
    return rng.integers(low, high, size=shape)


def run_conv(env: Env, size, cin, cout, kernel, stride, padding, shift=8) -> None:
    """The conv2d template with its default knobs, on fsim, against numpy (the conformance
    suite's builder and reference)."""
    built = build_compiled_conv2d(
        env.cfg, 0, size, kernel, stride, padding, {}, channels=(cin, cout), shift=shift
    )
    dram = built.dram.copy()
    open_device("fsim", env.cfg).run(built.program, dram)
    built.check(dram)


@pytest.mark.parametrize("layer", RESNET18_LAYERS, ids=lambda layer: layer.name)
def test_resnet18_layer_default_knobs(layer):
    run_conv(DEFAULT, layer.size, layer.cin, layer.cout, layer.kernel, layer.stride, layer.padding)


@pytest.mark.parametrize(
    "shape", [(8, 8, 8, 3, 1, 1), (9, 3, 8, 3, 2, 1), (8, 8, 16, 1, 2, 0), (6, 4, 4, 5, 1, 2)]
)
def test_conv_at_tiny(shape):
    run_conv(TINY, *shape, shift=4)


def test_conv_without_the_alu_multiplier():
    run_conv(NOMUL, 8, 8, 8, 3, 1, 1, shift=4)


@ENVS
def test_dense(env):
    rng = np.random.default_rng(1)
    n, ci, co = 3, 6, 4
    data = te.placeholder((n, ci, env.BATCH, env.BLOCK_IN), env.inp_dtype, "data")
    weight = te.placeholder((co, ci, env.BLOCK_OUT, env.BLOCK_IN), env.wgt_dtype, "weight")
    bias = te.placeholder((1, co, env.BATCH, env.BLOCK_OUT), env.acc_dtype, "bias")
    d = _ints(rng, data.shape).astype(np.int8)
    w = _ints(rng, weight.shape).astype(np.int8)
    b = _ints(rng, bias.shape, -500, 500).astype(np.int32)
    s, res = DENSE(data, weight, bias, env=env, shift=5)
    f = build(s, [data, weight, bias, res], target=env.target)
    out = np.zeros(res.shape, np.int8)
    f(d, w, b, out)
    # unpacked: rows = n*BATCH samples, columns = channels
    x = d.transpose(0, 2, 1, 3).reshape(n * env.BATCH, ci * env.BLOCK_IN).astype(np.int64)
    wt = w.transpose(0, 2, 1, 3).reshape(co * env.BLOCK_OUT, ci * env.BLOCK_IN).astype(np.int64)
    per_channel = b[0, :, 0, :].reshape(-1)
    expected = np.clip(((x @ wt.T) >> 5) + per_channel, -128, 127)
    got = out.transpose(0, 2, 1, 3).reshape(n * env.BATCH, co * env.BLOCK_OUT)
    np.testing.assert_array_equal(got, expected)


@ENVS
@pytest.mark.parametrize("oc_threads", [1, 2])
def test_batched_dense(env, oc_threads):
    """Each group's output is its own data by its own weights (as attention's products)."""
    rng = np.random.default_rng(2)
    groups, n, ci, co = 3, 2, 3, 4
    data = te.placeholder((groups, n, ci, env.BATCH, env.BLOCK_IN), env.inp_dtype, "data")
    weight = te.placeholder((groups, co, ci, env.BLOCK_OUT, env.BLOCK_IN), env.wgt_dtype, "weight")
    bias = te.placeholder((1, co, env.BATCH, env.BLOCK_OUT), env.acc_dtype, "bias")
    d = _ints(rng, data.shape).astype(np.int8)
    w = _ints(rng, weight.shape).astype(np.int8)
    b = _ints(rng, bias.shape, -500, 500).astype(np.int32)
    s, res = DENSE(
        data,
        weight,
        bias,
        env=env,
        shift=6,
        bias_first=True,
        config={"oc_threads": oc_threads, "tile_co": 2},
    )
    f = build(s, [data, weight, bias, res], target=env.target)
    out = np.zeros(res.shape, np.int8)
    f(d, w, b, out)
    rows, cols, depth = n * env.BATCH, co * env.BLOCK_OUT, ci * env.BLOCK_IN
    x = d.transpose(0, 1, 3, 2, 4).reshape(groups, rows, depth).astype(np.int64)
    wt = w.transpose(0, 1, 3, 2, 4).reshape(groups, cols, depth).astype(np.int64)
    per_channel = b[0, :, 0, :].reshape(-1)
    expected = np.clip((x @ wt.transpose(0, 2, 1) + per_channel) >> 6, -128, 127)
    got = out.transpose(0, 1, 3, 2, 4).reshape(groups, rows, cols)
    np.testing.assert_array_equal(got, expected)


def _activation(env: Env, rng, channels: int, size: int, low=-128) -> np.ndarray:
    return _ints(rng, (env.BATCH, channels, size, size), low).astype(np.int8)


@ENVS
def test_residual_add(env):
    rng = np.random.default_rng(2)
    channels = 3 * env.BLOCK_OUT
    x, y = _activation(env, rng, channels, 8), _activation(env, rng, channels, 8)
    xp = pack_nchw(x, env, block=env.BLOCK_OUT)
    yp = pack_nchw(y, env, block=env.BLOCK_OUT)
    a = te.placeholder(xp.shape, env.out_dtype, "a")
    b = te.placeholder(yp.shape, env.out_dtype, "b")
    s, res = ADD(a, b, env=env, a_shift=1, b_shift=0, shift=1, lo=0)
    f = build(s, [a, b, res], target=env.target)
    out = np.zeros(res.shape, np.int8)
    f(xp, yp, out)
    expected = np.clip(((x.astype(np.int32) << 1) + y) >> 1, 0, 127)
    np.testing.assert_array_equal(unpack_nchw(out, channels, env.BATCH), expected)


@ENVS
@pytest.mark.parametrize(
    ("window", "stride", "padding", "ceil_mode", "size"),
    [(3, 2, 1, False, 9), (2, 2, 0, False, 9), (3, 2, 0, True, 8), (2, 2, 1, True, 9)],
)
def test_max_pool(env, window, stride, padding, ceil_mode, size):
    rng = np.random.default_rng(3)
    channels = 2 * env.BLOCK_OUT
    x = _activation(env, rng, channels, size, low=0)  # after a ReLU: zero padding is exact
    xp = pack_nchw(x, env, block=env.BLOCK_OUT)
    data = te.placeholder(xp.shape, env.out_dtype, "data")
    s, res = MAX_POOL(
        data, env=env, window=window, stride=stride, padding=padding, ceil_mode=ceil_mode
    )
    f = build(s, [data, res], target=env.target)
    out = np.zeros(res.shape, np.int8)
    f(xp, out)
    span = size + 2 * padding - window
    oh = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (oh - 1) * stride >= size + padding:  # ONNX: starts inside the input
        oh -= 1
    far = max(padding, (oh - 1) * stride + window - size - padding)
    padded = np.pad(x, ((0, 0), (0, 0), (padding, far), (padding, far)))
    taps = [
        padded[:, :, dy : dy + stride * oh : stride, dx : dx + stride * oh : stride]
        for dy in range(window)
        for dx in range(window)
    ]
    np.testing.assert_array_equal(unpack_nchw(out, channels, env.BATCH), np.max(taps, axis=0))


@pytest.mark.parametrize(
    ("env", "size"), [(DEFAULT, 7), (TINY, 4), (NOMUL, 4)], ids=["default", "tiny", "nomul"]
)
def test_global_average_pool(env, size):
    rng = np.random.default_rng(4)
    channels = 4 * env.BLOCK_OUT
    x = _activation(env, rng, channels, size)
    xp = pack_nchw(x, env, block=env.BLOCK_OUT)
    data = te.placeholder(xp.shape, env.out_dtype, "data")
    s, res = GLOBAL_AVG_POOL(data, env=env)
    f = build(s, [data, res], target=env.target)
    out = np.zeros(res.shape, np.int8)
    f(xp, out)
    multiplier, shift = average_divisor(size * size, env.cfg.mul_arg_bits)
    total = x.astype(np.int64).sum(axis=(2, 3), keepdims=True)
    expected = ((total * multiplier) >> shift).astype(np.int8)
    np.testing.assert_array_equal(unpack_nchw(out, channels, env.BATCH), expected)
    # the approximation of 1/(H*W) is within one unit of the true (floored) mean
    assert np.all(np.abs(expected.astype(np.int64) - total // (size * size)) <= 1)


def test_global_average_pool_that_multiplies_needs_the_alu_multiplier():
    """3x3 pixels divide by 57 / 512: a MUL, which NOMUL lacks; 4x4 only shift (above)."""
    data = te.placeholder((1, 1, 3, 3, NOMUL.BATCH, NOMUL.BLOCK_OUT), NOMUL.out_dtype, "data")
    for call in (
        lambda: GLOBAL_AVG_POOL.space(data, env=NOMUL),
        lambda: GLOBAL_AVG_POOL(data, env=NOMUL),
    ):
        with pytest.raises(CompileError) as info:
            call()
        assert info.value.op == "global_avg_pool"
        assert "averaging 3x3 pixels multiplies by 57" in info.value.detail
        assert "this configuration has no ALU multiplier (alu_mul=False)" in info.value.detail
    GLOBAL_AVG_POOL(data, env=TINY)


def test_average_divisor_is_the_best_8_bit_approximation():
    multiplier, shift = average_divisor(49, 8)
    assert multiplier < 128 and multiplier / 2**shift == 84 / 4096  # 1/49 = 0.020408...
    best = min(abs(m / 2**k - 1 / 49) for k in range(20) for m in range(1, 128))
    assert abs(multiplier / 2**shift - 1 / 49) == best
    assert average_divisor(64, 8) == (1, 6)
