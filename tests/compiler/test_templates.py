"""Every operator template against numpy on random shapes, under several knob configurations
(the same computation scheduled differently must give the same result)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler import CompileError, build, create_schedule, te
from compiler.templates import (
    CONV2D_NCHW,
    CONV2D_NCHWC,
    DEPTHWISE_CONV2D,
    DEPTHWISE_CONV2D_NCHWC,
    ELEMENTWISE,
    MATMUL,
    POOL2D,
    KnobSpace,
)
from compiler.templates.pool import pool2d_compute
from runtime.opset.blocked import block_depthwise_weights
from tests.compiler import reference
from tests.guards import guarded_like

FEW = settings(max_examples=8, deadline=None)


def _configs(space: KnobSpace, draw: st.DrawFn, count: int = 2) -> list[dict]:
    """The default configuration plus ``count`` drawn ones."""
    every = list(space)
    picks = [draw(st.integers(0, len(every) - 1)) for _ in range(count)]
    return [space.default(), *(every[i] for i in picks)]


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    if dtype == "float32":
        return rng.standard_normal(shape).astype(np.float32)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def _run(schedule, args, arrays, threads: int = 2) -> np.ndarray:
    """Run the built function; its output (``arrays[-1]`` gives the shape and dtype) is a
    guarded, poisoned buffer, so a write past it or an element never written is caught."""
    out = guarded_like(arrays[-1])
    build(schedule, args)(*arrays[:-1], out.array, num_threads=threads)
    return out.checked()


@FEW
@given(
    data=st.data(),
    m=st.integers(1, 40),
    n=st.integers(1, 70),
    k=st.integers(1, 40),
    transpose=st.booleans(),
)
def test_matmul_float32(data, m, n, k, transpose):
    rng = np.random.default_rng(m * 10000 + n * 100 + k)
    a = te.placeholder((m, k), name="A")
    b = te.placeholder((n, k) if transpose else (k, n), name="B")
    a_np, b_np = _random(rng, a.shape), _random(rng, b.shape)
    expected = a_np.astype(np.float64) @ (b_np.T if transpose else b_np).astype(np.float64)
    for cfg in _configs(MATMUL.space(a, b, transpose_b=transpose), data.draw):
        s, c = MATMUL(a, b, config=cfg, transpose_b=transpose)
        out = _run(s, [a, b, c], [a_np, b_np, np.zeros((m, n), np.float32)])
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4, err_msg=str(cfg))


@FEW
@given(
    data=st.data(),
    dtype=st.sampled_from(["int8", "int16"]),
    m=st.integers(1, 20),
    n=st.integers(1, 40),
    k=st.integers(1, 30),
)
def test_matmul_integers_accumulate_in_int32(data, dtype, m, n, k):
    rng = np.random.default_rng(m + n + k)
    a, b = te.placeholder((m, k), dtype, "A"), te.placeholder((k, n), dtype, "B")
    a_np, b_np = _random(rng, a.shape, dtype), _random(rng, b.shape, dtype)
    expected = (a_np.astype(np.int64) @ b_np.astype(np.int64)).astype(np.int32)  # wraps like int32
    for cfg in _configs(MATMUL.space(a, b), data.draw, 1):
        s, c = MATMUL(a, b, config=cfg, out_dtype="int32")
        out = _run(s, [a, b, c], [a_np, b_np, np.zeros((m, n), np.int32)])
        np.testing.assert_array_equal(out, expected)


@st.composite
def conv_shapes(draw):
    n = draw(st.integers(1, 2))
    c = draw(st.integers(1, 6))
    h, w = draw(st.integers(3, 12)), draw(st.integers(3, 20))
    kernel = draw(st.integers(1, 3))
    stride = draw(st.integers(1, 2))
    pad = draw(st.integers(0, kernel // 2 + 1))
    return n, c, h, w, kernel, stride, pad


@FEW
@given(data=st.data(), shape=conv_shapes(), out_channels=st.integers(1, 9))
def test_conv2d_nchw(data, shape, out_channels):
    n, c, h, w, kernel, stride, pad = shape
    rng = np.random.default_rng(sum(shape))
    x, wt = (
        te.placeholder((n, c, h, w), name="x"),
        te.placeholder((out_channels, c, kernel, kernel), name="w"),
    )
    x_np, w_np = _random(rng, x.shape), _random(rng, wt.shape)
    expected = reference.conv2d_nchw(x_np, w_np, stride, pad)
    for cfg in _configs(CONV2D_NCHW.space(x, wt, stride=stride, padding=pad), data.draw):
        s, y = CONV2D_NCHW(x, wt, config=cfg, stride=stride, padding=pad)
        out = _run(s, [x, wt, y], [x_np, w_np, np.zeros(y.shape, np.float32)])
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4, err_msg=str(cfg))


@FEW
@given(
    data=st.data(),
    shape=conv_shapes(),
    in_block=st.sampled_from([1, 2, 4]),
    out_block=st.sampled_from([4, 8, 16]),
    blocks=st.integers(1, 2),
)
def test_conv2d_nchwc(data, shape, in_block, out_block, blocks):
    n, c, h, w, kernel, stride, pad = shape
    c = in_block * c
    o = out_block * blocks
    rng = np.random.default_rng(sum(shape) + in_block)
    x_np, w_np = _random(rng, (n, c, h, w)), _random(rng, (o, c, kernel, kernel))
    x = te.placeholder((n, c // in_block, h, w, in_block), name="x")
    wt = te.placeholder(
        (o // out_block, c // in_block, kernel, kernel, in_block, out_block), name="w"
    )
    expected = reference.conv2d_nchw(x_np, w_np, stride, pad)
    blocked = [
        reference.to_nchwc(x_np, in_block),
        reference.kernel_to_nchwc(w_np, in_block, out_block),
    ]
    for cfg in _configs(CONV2D_NCHWC.space(x, wt, stride=stride, padding=pad), data.draw):
        s, y = CONV2D_NCHWC(x, wt, config=cfg, stride=stride, padding=pad)
        out = _run(s, [x, wt, y], [*blocked, np.zeros(y.shape, np.float32)])
        np.testing.assert_allclose(
            reference.from_nchwc(out), expected, rtol=1e-4, atol=1e-4, err_msg=str(cfg)
        )


@FEW
@given(data=st.data(), shape=conv_shapes())
def test_depthwise_conv2d(data, shape):
    n, c, h, w, kernel, stride, pad = shape
    rng = np.random.default_rng(sum(shape))
    x, wt = te.placeholder((n, c, h, w), name="x"), te.placeholder((c, 1, kernel, kernel), name="w")
    x_np, w_np = _random(rng, x.shape), _random(rng, wt.shape)
    expected = reference.depthwise_nchw(x_np, w_np, stride, pad)
    for cfg in _configs(DEPTHWISE_CONV2D.space(x, wt, stride=stride, padding=pad), data.draw):
        s, y = DEPTHWISE_CONV2D(x, wt, config=cfg, stride=stride, padding=pad)
        out = _run(s, [x, wt, y], [x_np, w_np, np.zeros(y.shape, np.float32)])
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4, err_msg=str(cfg))


@FEW
@given(data=st.data(), shape=conv_shapes(), block=st.sampled_from([1, 4, 8, 16]))
def test_depthwise_conv2d_nchwc(data, shape, block):
    n, c, h, w, kernel, stride, pad = shape
    c = block * c
    rng = np.random.default_rng(sum(shape) + block)
    x_np, w_np = _random(rng, (n, c, h, w)), _random(rng, (c, 1, kernel, kernel))
    x = te.placeholder((n, c // block, h, w, block), name="x")
    wt = te.placeholder((c // block, kernel, kernel, block), name="w")
    expected = reference.depthwise_nchw(x_np, w_np, stride, pad)
    blocked = [reference.to_nchwc(x_np, block), block_depthwise_weights(w_np, block)]
    space = DEPTHWISE_CONV2D_NCHWC.space(x, wt, stride=stride, padding=pad)
    for cfg in _configs(space, data.draw):
        s, y = DEPTHWISE_CONV2D_NCHWC(x, wt, config=cfg, stride=stride, padding=pad)
        out = _run(s, [x, wt, y], [*blocked, np.zeros(y.shape, np.float32)])
        np.testing.assert_allclose(
            reference.from_nchwc(out), expected, rtol=1e-4, atol=1e-4, err_msg=str(cfg)
        )


@FEW
@given(data=st.data(), shape=conv_shapes(), kind=st.sampled_from(["max", "avg"]))
def test_pool2d(data, shape, kind):
    n, c, h, w, kernel, stride, pad = shape
    kernel = max(kernel, pad * 2 - 1, 1)
    pad = min(pad, kernel // 2)
    rng = np.random.default_rng(sum(shape))
    x = te.placeholder((n, c, h, w), name="x")
    x_np = _random(rng, x.shape)
    expected = reference.pool2d(x_np, kernel, stride, pad, kind)
    params = {"kernel": kernel, "stride": stride, "padding": pad, "kind": kind}
    for cfg in _configs(POOL2D.space(x, **params), data.draw):
        s, y = POOL2D(x, config=cfg, **params)
        out = _run(s, [x, y], [x_np, np.zeros(y.shape, np.float32)])
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5, err_msg=str(cfg))


def test_max_pool_on_int8_pads_with_the_minimum():
    x = te.placeholder((1, 1, 3, 3), "int8", "x")
    s, y = POOL2D(x, kernel=3, stride=1, padding=1, kind="max")
    x_np = -np.arange(9, dtype=np.int8).reshape(1, 1, 3, 3) - 100
    out = _run(s, [x, y], [x_np, np.zeros(y.shape, np.int8)])
    np.testing.assert_array_equal(out, reference.pool2d(x_np, 3, 1, 1, "max").astype(np.int8))


@pytest.mark.parametrize("width", [6, 7, 8])
def test_pool2d_by_default_is_a_2x2_max_pool_of_stride_2(width):
    """POOL2D (and its declaration) without pooling arguments is PyTorch's ``max_pool2d(x, 2)``:
    a 2x2 window moving by 2, no padding, so the output has ``(width - 2) // 2 + 1`` columns;
    its knob space is the one of those arguments spelled out, and no row tile is wider than
    the output row."""
    x = te.placeholder((1, 2, 4, width), name="x")
    columns = (width - 2) // 2 + 1
    space = POOL2D.space(x)
    assert space == POOL2D.space(x, kernel=2, stride=2, padding=0, kind="max")
    (tile_ow,) = [knob.choices for knob in space.knobs if knob.name == "tile_ow"]
    assert max(tile_ow) <= columns
    s, y = POOL2D(x)
    assert y.shape == (1, 2, 2, columns)
    declared, padded = pool2d_compute(x)
    assert declared.shape == y.shape and padded is x
    x_np = _random(np.random.default_rng(width), x.shape)
    out = _run(s, [x, y], [x_np, np.zeros(y.shape, np.float32)])
    np.testing.assert_array_equal(out, reference.pool2d(x_np, 2, 2, 0, "max"))


@pytest.mark.parametrize("vectorize", [False, True])
def test_max_pool_with_padding_under_every_llvm_transform(vectorize):
    """Regression (found by test_pool2d): LLVM 22's O3 loop vectorizer and unroller together
    miscompiled the scalar schedule's ``llvm.maxnum`` reduction (outputs shifted by a column);
    the backend emits ``llvm.maximum`` instead."""
    x = te.placeholder((1, 1, 3, 16), name="x")
    params = {"kernel": 3, "stride": 1, "padding": 1, "kind": "max"}
    config = {"tile_ow": 16, "vectorize": vectorize, "parallel": False}
    s, y = POOL2D(x, config=config, **params)
    x_np = _random(np.random.default_rng(0), x.shape)
    out = _run(s, [x, y], [x_np, np.zeros(y.shape, np.float32)])
    np.testing.assert_array_equal(out, reference.pool2d(x_np, 3, 1, 1, "max"))


@pytest.mark.parametrize(("op", "np_op"), [(te.maximum, np.maximum), (te.minimum, np.minimum)])
def test_float_max_and_min_propagate_nan_like_numpy(op, np_op):
    a, b = te.placeholder((8,), name="a"), te.placeholder((8,), name="b")
    c = te.compute((8,), lambda i: op(a[i], b[i]), name="c")
    a_np = np.array([np.nan, 1, -np.inf, 0, 2, np.nan, np.inf, -0.0], np.float32)
    b_np = np.array([1, np.nan, 3, -np.inf, np.inf, np.nan, 5, 0.0], np.float32)
    out = _run(create_schedule(c), [a, b, c], [a_np, b_np, np.zeros(8, np.float32)])
    np.testing.assert_array_equal(np.isnan(out), np.isnan(np_op(a_np, b_np)))
    finite = ~np.isnan(out)
    np.testing.assert_array_equal(out[finite], np_op(a_np, b_np)[finite])


_BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "mul": (lambda a, b: a * b, np.multiply),
    "max": (te.maximum, np.maximum),
    "relu_sub": (lambda a, b: te.maximum(a - b, 0.0), lambda a, b: np.maximum(a - b, 0)),
}


@st.composite
def broadcastable(draw):
    shape = draw(st.lists(st.integers(1, 9), min_size=1, max_size=4))
    other = [
        draw(st.sampled_from([extent, 1]))
        for extent in shape[draw(st.integers(0, len(shape) - 1)) :]
    ]
    return tuple(shape), tuple(other)


@FEW
@given(data=st.data(), shapes=broadcastable(), op=st.sampled_from(sorted(_BINARY)))
def test_broadcast_binary(data, shapes, op):
    fn, ref = _BINARY[op]
    rng = np.random.default_rng(len(shapes[0]))
    a, b = te.placeholder(shapes[0], name="a"), te.placeholder(shapes[1], name="b")
    a_np, b_np = _random(rng, a.shape), _random(rng, b.shape)
    expected = ref(a_np, b_np)
    for cfg in _configs(ELEMENTWISE.space(a, b, fn=fn), data.draw):
        s, out = ELEMENTWISE(a, b, config=cfg, fn=fn)
        got = _run(s, [a, b, out], [a_np, b_np, np.zeros(out.shape, np.float32)])
        np.testing.assert_allclose(got, expected, rtol=1e-6, err_msg=str(cfg))


@pytest.mark.parametrize(
    ("fn", "ref"),
    [
        (te.exp, np.exp),
        (te.sqrt, lambda v: np.sqrt(v)),
        (te.log, np.log),
        (lambda v: te.select(v > 1.0, v * 2.0, -v), lambda v: np.where(v > 1, v * 2, -v)),
    ],
)
def test_unary_math(fn, ref):
    x = te.placeholder((3, 37), name="x")
    x_np = np.random.default_rng(1).uniform(0.1, 3, x.shape).astype(np.float32)
    for vectorize in (True, False):
        s, y = ELEMENTWISE(x, config={"vectorize": vectorize}, fn=fn)
        got = _run(s, [x, y], [x_np, np.zeros(y.shape, np.float32)])
        np.testing.assert_allclose(got, ref(x_np), rtol=2e-6)


def test_templates_reject_mismatched_operands():
    with pytest.raises(CompileError, match="inner extents differ"):
        MATMUL(te.placeholder((4, 5), name="A"), te.placeholder((6, 7), name="B"))
    with pytest.raises(CompileError, match="input channels"):
        CONV2D_NCHW(te.placeholder((1, 3, 8, 8), name="x"), te.placeholder((4, 2, 3, 3), name="w"))
    x, w = te.placeholder((1, 3, 8, 8), name="x"), te.placeholder((4, 3, 3, 3), name="w")
    for stride, padding in ((0, 1), (1, -1)):  # a window must move; padding cannot crop
        with pytest.raises(CompileError, match=f"stride {stride} / padding {padding} invalid"):
            CONV2D_NCHW(x, w, stride=stride, padding=padding)
    blocked = te.placeholder((1, 2, 8, 8, 4), name="x")
    with pytest.raises(CompileError, match="does not match 2 blocks of 4"):
        DEPTHWISE_CONV2D_NCHWC(blocked, te.placeholder((2, 3, 3, 8), name="w"))
    with pytest.raises(CompileError, match="needs"):
        DEPTHWISE_CONV2D_NCHWC(x, te.placeholder((2, 3, 3, 4), name="w"))
    with pytest.raises(CompileError, match="do not broadcast"):
        ELEMENTWISE(
            te.placeholder((3, 4), name="a"), te.placeholder((5,), name="b"), fn=lambda a, b: a + b
        )
    panels = te.placeholder((2, 5, 4), name="P")
    with pytest.raises(CompileError, match="2 panels of 4 do not hold 9 columns"):
        MATMUL(te.placeholder((4, 5), name="A"), panels, columns=9)
    with pytest.raises(CompileError, match="inner extents differ: 6 and 5"):
        MATMUL(te.placeholder((4, 6), name="A"), panels, columns=8)
    with pytest.raises(CompileError, match="unknown knob 'tile_q'"):
        MATMUL(
            te.placeholder((4, 5), name="A"), te.placeholder((5, 7), name="B"), config={"tile_q": 1}
        )
    with pytest.raises(CompileError, match="not one of"):
        MATMUL(
            te.placeholder((4, 5), name="A"), te.placeholder((5, 7), name="B"), config={"tile_m": 5}
        )


def test_knob_spaces_enumerate_every_configuration():
    space = MATMUL.space(te.placeholder((64, 64), name="A"), te.placeholder((64, 64), name="B"))
    configs = list(space)
    assert len(configs) == len(space) == len({tuple(sorted(c.items())) for c in configs})
    assert configs[0] == space.default()
