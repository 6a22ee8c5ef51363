"""The float32 CPU steps that dominate real models, declared for the LLVM backend from a step's
description (operator, slots' shapes and dtypes, attributes: what a ``.vtaf`` step records):
each declaration returns the schedule and its arguments (one placeholder per input slot, in
order, then the output), or None where the step keeps its numpy kernel.

- ``Conv``: 2-D, float32, equal strides, no dilation. One group: the tuned NCHWc template
  (:data:`~compiler.templates.CONV2D_NCHWC`, channel blocks from
  :func:`~compiler.templates.nchwc_block`), the data blocked and padded and the weights blocked
  inside the kernel, the output unblocked with the bias added; depthwise (a group per input
  channel, multiplier 1): :data:`~compiler.templates.DEPTHWISE_CONV2D` on data padded inside
  the kernel. Any pads (asymmetric ones too).
- The CPU target's blocked operators (:mod:`compiler.model.nchwc`): ``ConvNCHWc`` and
  ``DepthwiseNCHWc`` (the NCHWc templates on blocked data padded inside the kernel, reading
  the weights as the compiler blocked them, the bias and the fused clip added to the blocked
  output), ``MaxPoolNCHWc``, ``ToNCHWc`` and ``FromNCHWc``.
- ``Gemm`` (no ``trans_a``) and ``MatMul`` (a right operand of rank 2): the
  :data:`~compiler.templates.MATMUL` template (the right operand packed into panels inside the
  kernel, constant or not; a dense layer of at most four rows: one dot product per output),
  ``alpha``, ``beta`` and ``C`` (broadcast) as numpy applies them. ``PackedMatMul`` (constant
  weights packed at compile time, :mod:`compiler.model.panels`): the template on its panels,
  its bias added.
- ``MaxPool`` (2-D, a square window, equal strides, no dilation, ``ceil_mode`` either way),
  ``AveragePool`` (the same, where every window's divisor is the window's area) and
  ``GlobalAveragePool``: :data:`~compiler.templates.POOL2D` on data padded inside the kernel
  (``-inf`` for the maximum).
- ``Relu``, ``Clip``, ``Add``, ``Sub``, ``Mul``, ``Div`` over float32 (numpy's broadcasting):
  :data:`~compiler.templates.ELEMENTWISE`, on flat vectors where no operand broadcasts; ``Erf``
  the same way, as a rational function fitted here (:data:`_ERF_P`, :data:`_ERF_Q`).
- ``Flatten`` and ``Reshape`` (of any dtype): a copy of the bytes (a CPU step's output is a
  slot of its own).

The templates are called without knobs, so their defaults for this host apply, or, where the
builder runs inside :func:`compiler.tune.records.apply_history_best`, the tuned ones.

Agreement with the numpy kernels of :mod:`runtime.opset` (what the tests hold them to): the
elementwise operators and the maximum pooling give the same values, bit for bit (for inputs
without NaN), but ``Erf``, within 5e-7 of numpy's (whose values lie in [-1, 1]); the operators
that sum (convolutions, products, average pooling) sum in another order, with fused
multiply-adds, so each output is within ``1e-5`` of numpy's relative to the largest magnitude
of the output (``|ours - numpy| <= 1e-5 * max|numpy|``). Every attribute
combination outside the lists above (dilations, unequal strides, grouped convolutions that are
not depthwise, ``trans_a``, batched right operands, integer dtypes, average windows with
varying divisors) returns None: the numpy kernel runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from compiler import te
from compiler.schedule import Schedule, create_schedule
from compiler.te import Tensor
from compiler.templates import (
    CONV2D_NCHWC,
    DEPTHWISE_CONV2D,
    DEPTHWISE_CONV2D_NCHWC,
    ELEMENTWISE,
    MATMUL,
    POOL2D,
    Template,
    nchwc_block,
)
from runtime.model import TensorSlot

__all__ = ["FLOAT_OPS", "Declared", "template_windows"]

#: A declared kernel: its schedule and its arguments (the inputs' placeholders, the output).
Declared = tuple[Schedule, list[Tensor]]
_F32 = "float32"


def _placeholders(inputs: Sequence[TensorSlot], shapes: Sequence[tuple[int, ...]] | None = None):
    """One placeholder per input slot (``shapes`` replaces a slot's shape by another of the
    same size: a contiguous slot read flat)."""
    return [
        te.placeholder(tuple(shapes[k]) if shapes else slot.shape, slot.dtype, f"in{k}")
        for k, slot in enumerate(inputs)
    ]


def _all_float(inputs: Sequence[TensorSlot], output: TensorSlot) -> bool:
    return all(slot.dtype == _F32 for slot in (*inputs, output))


def _replayed(template: Schedule, out: Tensor) -> Schedule:
    """A schedule of ``out`` (which reads the template's output) that first takes every step of
    the ``template``'s schedule: the template's stages keep their tuned loops, its output
    becomes an intermediate buffer that ``out`` reads."""
    s = create_schedule(out)
    for step in template.steps:
        s.apply(step)
    return s


def _padded(x: Tensor, before: tuple[int, int], size: tuple[int, int], fill: float) -> Tensor:
    """``x`` (N, C, H, W, or blocked N, C/c, H, W, c) padded to ``size`` (H', W'): ``before``
    rows and columns of ``fill`` first, then ``x``, then ``fill`` (or ``x`` cut, where a window
    never reaches its end)."""
    h, w = x.shape[2:4]
    top, left = before
    value = te.const(fill, x.dtype)

    def element(n, c, y, z, *lanes):
        inside = te.all_of(y >= top, y < h + top, z >= left, z < w + left)
        return te.if_then_else(inside, x[(n, c, y - top, z - left, *lanes)], value)

    return te.compute((*x.shape[:2], *size, *x.shape[4:]), element, name="padded")


def _window_size(out: int, kernel: int, stride: int) -> int:
    """The extent of padded input that ``out`` windows of ``kernel`` at ``stride`` read."""
    return (out - 1) * stride + kernel


# --------------------------------------------------------------------------- convolution
def template_windows(strides: Sequence[int], dilations: Sequence[int]) -> bool:
    """Whether a 2-D convolution's windows are those the CPU's convolution templates run (one
    group, or depthwise): no dilation, one stride for both axes."""
    return tuple(dilations) == (1, 1) and strides[0] == strides[1]


def _conv(inputs: Sequence[TensorSlot], output: TensorSlot, attrs: dict[str, Any]):
    if not _all_float(inputs, output) or not template_windows(attrs["strides"], attrs["dilations"]):
        return None
    groups = attrs["groups"]
    x_slot, w_slot = inputs[0], inputs[1]
    if len(x_slot.shape) != 4 or len(w_slot.shape) != 4:
        return None
    c = x_slot.shape[1]
    o, per_group = w_slot.shape[:2]
    args = _placeholders(inputs)
    x, w = args[0], args[1]
    bias = args[2] if len(args) == 3 else None
    if groups == 1:
        ic, oc = nchwc_block(c), nchwc_block(o, out_width=output.shape[3])
        kernel = te.compute(
            (o // oc, c // ic, *w.shape[2:], ic, oc),
            lambda f, k, y, z, i, j: w[f * oc + j, k * ic + i, y, z],
            name="kernel.OIHWio",
        )
        s, out = _conv_nchwc(x, kernel, bias, attrs, output.shape)
    elif groups == c == o and per_group == 1:
        s, out = _depthwise(x, w, bias, attrs, output.shape)
    else:
        return None
    return s, [*args, out]


def _geometry(attrs: dict[str, Any], kernel: tuple[int, int], out_shape: tuple[int, ...]):
    """A convolution's stride, its padding before the data (top, left) and the extent of
    padded data its windows read."""
    stride, pads = attrs["strides"][0], attrs["pads"]
    size = tuple(_window_size(out_shape[2 + k], kernel[k], stride) for k in range(2))
    return stride, (pads[0], pads[1]), size


def _conv_nchwc(x, kernel, bias, attrs, out_shape) -> tuple[Schedule, Tensor]:
    """The NCHWc template over ``x`` (NCHW) blocked and padded inside the kernel and
    ``kernel`` (O/o, C/i, KH, KW, i, o), its output unblocked with the bias added."""
    n, c, _, _ = x.shape
    ic, oc = kernel.shape[4], kernel.shape[5]
    stride, before, size = _geometry(attrs, kernel.shape[2:4], out_shape)
    padded = _padded(x, before, size, 0.0)
    data = te.compute(
        (n, c // ic, *size, ic),
        lambda b, k, y, z, v: padded[b, k * ic + v, y, z],
        name="data.NCHWc",
    )
    template, blocked = CONV2D_NCHWC(data, kernel, stride=stride, padding=0)

    def unblocked(b, f, y, z):
        value = blocked[b, f // oc, y, z, f % oc]
        return value if bias is None else value + bias[f]

    out = te.compute(out_shape, unblocked, name="conv2d")
    s = _replayed(template, out)
    s[padded].compute_inline()
    return s, out


def _depthwise(x, w, bias, attrs, out_shape) -> tuple[Schedule, Tensor]:
    stride, before, size = _geometry(attrs, w.shape[2:4], out_shape)
    padded = _padded(x, before, size, 0.0)
    template, out = DEPTHWISE_CONV2D(padded, w, stride=stride, padding=0)
    if bias is None:
        return template, out
    depthwise = out
    out = te.compute(
        depthwise.shape, lambda b, f, y, z: depthwise[b, f, y, z] + bias[f], name="biased"
    )
    s = _replayed(template, out)
    _vectorized(s, out)
    return s, out


def _blocked_rows(s: Schedule, t: Tensor) -> None:
    """A blocked stage ``t`` (N, C/c, H, W, c, in loop order) vectorized along its block and
    its rows shared among the threads (each a parallel chunk of the native launcher)."""
    b, k, y, *_ = t.op.axis
    s[t].vectorize(t.op.axis[-1])
    s[t].parallel(s[t].fuse(b, k, y))


def _vectorized(s: Schedule, out: Tensor) -> None:
    """``out``'s innermost loop vectorized (its extent is the vector: LLVM handles tails)."""
    if out.op.axis and out.shape[-1] > 1:
        s[out].vectorize(out.op.axis[-1])


# ------------------------------------------------------------------- blocked (NCHWc) values
def _to_nchwc(inputs: Sequence[TensorSlot], output: TensorSlot, attrs: dict[str, Any]):
    (x,) = _placeholders(inputs)
    v = attrs["block"]
    out = te.compute(output.shape, lambda b, k, y, z, i: x[b, k * v + i, y, z], name="NCHWc")
    s = create_schedule(out)
    _blocked_rows(s, out)
    return s, [x, out]


def _from_nchwc(inputs: Sequence[TensorSlot], output: TensorSlot, attrs: dict[str, Any]):
    (x,) = _placeholders(inputs)
    v = inputs[0].shape[4]
    out = te.compute(output.shape, lambda b, c, y, z: x[b, c // v, y, z, c % v], name="NCHW")
    s = create_schedule(out)
    _vectorized(s, out)
    return s, [x, out]


def _blocked_window(template: Template, kernel_axes: slice) -> Callable[..., Declared | None]:
    """``ConvNCHWc`` (``template`` the NCHWc convolution, the kernel's window at axes 2:4) or
    ``DepthwiseNCHWc`` (the depthwise one, at 1:3): the template on the blocked data, padded
    inside the kernel where the convolution pads, the bias added to its blocked output and
    the fused activation's clip applied (``max`` then ``min``, as ``Clip``'s kernel does)."""

    def declare(inputs: Sequence[TensorSlot], output: TensorSlot, attrs: dict[str, Any]):
        windows = template_windows(attrs["strides"], attrs["dilations"])
        if not _all_float(inputs, output) or not windows:
            return None
        args = _placeholders(inputs)
        x, w = args[0], args[1]
        stride, before, size = _geometry(attrs, w.shape[kernel_axes], output.shape)
        data = x
        if before != (0, 0) or size != x.shape[2:4]:
            data = _padded(x, before, size, 0.0)
        s, out = template(data, w, stride=stride, padding=0)
        if data is not x:
            _blocked_rows(s, data)
        lo, hi = attrs["lo"], attrs["hi"]
        if len(args) == 3 or lo > -math.inf or hi < math.inf:
            bias, lanes, convolved = args[2] if len(args) == 3 else None, output.shape[4], out

            def finished(b, f, y, z, v):
                value = convolved[b, f, y, z, v]
                value = value if bias is None else value + bias[f * lanes + v]
                if lo > -math.inf:
                    value = te.max(value, te.const(lo, _F32))
                return value if hi == math.inf else te.min(value, te.const(hi, _F32))

            out = te.compute(output.shape, finished, name="finished")
            s = _replayed(s, out)
            _blocked_rows(s, out)
        return s, [*args, out]

    return declare


def _max_pool_nchwc(inputs: Sequence[TensorSlot], output: TensorSlot, attrs: dict[str, Any]):
    """``MaxPoolNCHWc``: each window's maximum, a vector of the channel block at a time, over
    the data padded with ``-inf`` (and past its end where ceil mode's last windows reach)."""
    (kh, kw), strides = attrs["kernel"], attrs["strides"]
    if not _all_float(inputs, output) or tuple(attrs["dilations"]) != (1, 1):
        return None
    (x,) = _placeholders(inputs)
    oh, ow = output.shape[2:4]
    size = (_window_size(oh, kh, strides[0]), _window_size(ow, kw, strides[1]))
    padded = _padded(x, (attrs["pads"][0], attrs["pads"][1]), size, float("-inf"))
    ry, rx = te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    out = te.compute(
        output.shape,
        lambda b, k, y, z, v: te.max(
            padded[b, k, y * strides[0] + ry, z * strides[1] + rx, v], axis=[ry, rx]
        ),
        name="max_pool_NCHWc",
    )
    s = create_schedule(out)
    b, k, y, z, v = out.op.axis
    s[out].reorder(b, k, y, z, ry, rx, v)
    _blocked_rows(s, out)
    _blocked_rows(s, padded)
    return s, [x, out]


# ------------------------------------------------------------------------------ products
def _gemm(inputs: Sequence[TensorSlot], output: TensorSlot, attrs: dict[str, Any]):
    if not _all_float(inputs, output) or attrs["trans_a"]:
        return None
    alpha, beta = attrs["alpha"], attrs["beta"]
    args = _placeholders(inputs)
    a, b = args[0], args[1]
    if attrs["trans_b"] and a.shape[0] <= _DOT_ROWS:
        template, product = _dots(a, b)
    else:
        template, product = MATMUL(a, b, transpose_b=bool(attrs["trans_b"]))
    if len(args) == 2 and alpha == 1.0:
        return template, [*args, product]
    c = args[2] if len(args) == 3 else None
    m, n = product.shape

    def finished(i, j):
        value = product[i, j]
        if alpha != 1.0:
            value = value * te.const(alpha, _F32)
        if c is not None:
            value = value + _broadcast_read(c, (m, n), (i, j)) * te.const(beta, _F32)
        return value

    out = te.compute((m, n), finished, name="gemm")
    s = _replayed(template, out)
    _vectorized(s, out)
    return s, [*args, out]


#: Rows of a product by a transposed matrix (a dense layer's weights) up to which each output is
#: one dot product of two contiguous rows: at batch 1, packing the weights into the template's
#: panels on every call costs more than the product (ResNet-18's classifier: 0.67 ms, 0.035 ms
#: as dot products, on znver4).
_DOT_ROWS = 4


def _dots(a: Tensor, b: Tensor) -> tuple[Schedule, Tensor]:
    """``a @ b.T`` as one dot product of contiguous rows per output (LLVM vectorizes each)."""
    k = te.reduce_axis(a.shape[1], "k")
    out = te.compute(
        (a.shape[0], b.shape[0]), lambda i, j: te.sum(a[i, k] * b[j, k], axis=k), name="dots"
    )
    return create_schedule(out), out


def _broadcast_read(t: Tensor, shape: tuple[int, ...], index: tuple) -> Any:
    """``t``'s element at ``index`` of the broadcast ``shape`` (numpy's rules)."""
    offset = len(shape) - t.ndim
    at = tuple(0 if extent == 1 else index[offset + d] for d, extent in enumerate(t.shape))
    return t[at] if at else t[()]


def _matmul(inputs: Sequence[TensorSlot], output: TensorSlot, attrs: dict[str, Any]):
    del attrs  # MatMul has none
    a_slot, b_slot = inputs
    if not _all_float(inputs, output) or len(a_slot.shape) < 2 or len(b_slot.shape) != 2:
        return None
    rows = math.prod(a_slot.shape[:-1])
    k, n = b_slot.shape
    if output.shape != (*a_slot.shape[:-1], n) or a_slot.shape[-1] != k:
        return None
    # the leading axes of a contiguous operand (and of the output) read as one
    a, b = _placeholders(inputs, [(rows, k), (k, n)])
    s, out = MATMUL(a, b)
    return s, [a, b, out]


def _packed_matmul(inputs: Sequence[TensorSlot], output: TensorSlot, attrs: dict[str, Any]):
    """``PackedMatMul``: the template on the panels as the compiler packed them (the leading
    axes of the left operand and of the output read as one), the bias added to its output."""
    a_slot, panels_slot = inputs[0], inputs[1]
    if not _all_float(inputs, output):
        return None
    rows, columns = math.prod(a_slot.shape[:-1]), attrs["columns"]
    shapes = [(rows, a_slot.shape[-1]), panels_slot.shape, *(s.shape for s in inputs[2:])]
    args = _placeholders(inputs, shapes)
    s, out = MATMUL(args[0], args[1], columns=columns)
    if len(args) == 3:
        bias, product = args[2], out
        out = te.compute((rows, columns), lambda i, j: product[i, j] + bias[j], name="biased")
        s = _replayed(s, out)
        _vectorized(s, out)
    return s, [*args, out]


# ------------------------------------------------------------------------------- pooling
def _pool(kind: str) -> Callable[..., Declared | None]:
    def declare(inputs: Sequence[TensorSlot], output: TensorSlot, attrs: dict[str, Any]):
        kernel, strides = tuple(attrs["kernel"]), tuple(attrs["strides"])
        pads, dilations = tuple(attrs["pads"]), tuple(attrs["dilations"])
        if not _all_float(inputs, output) or len(kernel) != 2 or len(output.shape) != 4:
            return None
        if kernel[0] != kernel[1] or strides[0] != strides[1] or dilations != (1, 1):
            return None
        _, _, h, w = inputs[0].shape
        _, _, oh, ow = output.shape
        k, stride = kernel[0], strides[0]
        size = (_window_size(oh, k, stride), _window_size(ow, k, stride))
        if kind == "avg":
            # the template divides by the window's area: the numpy kernel's divisor is that
            # only where no window reaches past the explicit padding (ceil mode's overhang),
            # and where the padding counts (or there is none)
            overhang = size[0] > h + pads[0] + pads[2] or size[1] > w + pads[1] + pads[3]
            if overhang or (any(pads) and not attrs["count_include_pad"]):
                return None
        (x,) = _placeholders(inputs)
        fill = float("-inf") if kind == "max" else 0.0
        padded = _padded(x, (pads[0], pads[1]), size, fill)
        s, out = POOL2D(padded, kernel=k, stride=stride, padding=0, kind=kind)
        if not any(pads):  # padding inlined would test every read (2.9 vs 2.1 ms, ResNet-18's)
            s[padded].compute_inline()
        return s, [x, out]

    return declare


def _global_average(inputs: Sequence[TensorSlot], output: TensorSlot, attrs: dict[str, Any]):
    del attrs  # none
    if not _all_float(inputs, output) or len(inputs[0].shape) != 4:
        return None
    (x,) = _placeholders(inputs)
    n, c, h, w = x.shape
    ry, rx = te.reduce_axis(h, "ry"), te.reduce_axis(w, "rx")
    total = te.compute(
        (n, c, 1, 1), lambda b, f, i, j: te.sum(x[b, f, ry, rx], axis=[ry, rx]), name="total"
    )
    # numpy's mean divides the sum by the count (no reciprocal)
    out = te.compute(
        total.shape, lambda *i: total(*i) / te.const(float(h * w), _F32), name="global_average"
    )
    s = create_schedule(out)
    return s, [x, out]


# --------------------------------------------------------------------------- elementwise
def _elementwise(
    fn: Callable[..., Any], name: str, attribute_fn: bool = False
) -> Callable[..., Declared | None]:
    def declare(inputs: Sequence[TensorSlot], output: TensorSlot, attrs: dict[str, Any]):
        if not _all_float(inputs, output):
            return None
        shapes = None
        if all(slot.shape == output.shape for slot in inputs):
            shapes = [(max(1, math.prod(output.shape)),)] * len(inputs)  # read flat
        args = _placeholders(inputs, shapes)
        body = (lambda *v: fn(*v, **attrs)) if attribute_fn else fn
        s, out = ELEMENTWISE(*args, fn=body, name=name)
        if shapes is None and out.shape != output.shape:
            return None
        return s, [*args, out]

    return declare


def _copy(inputs: Sequence[TensorSlot], output: TensorSlot, attrs: dict[str, Any]):
    """A reshape's bytes, copied (numpy's C order is the slots' order)."""
    del attrs  # the output slot's shape says what they say
    size = max(1, math.prod(output.shape))
    if len(inputs) != 1 or inputs[0].dtype != output.dtype or math.prod(inputs[0].shape) != size:
        return None
    (x,) = _placeholders(inputs, [(size,)])
    s, out = ELEMENTWISE(x, fn=lambda v: v, name="copy")
    return s, [x, out]


#: erf(x) = x * P(x^2) / Q(x^2) on [-4, 4] (ascending coefficients; Q's first is 1), fitted
#: here by Sanathanan-Koerner least squares on 4,000 Chebyshev nodes: in float32 arithmetic
#: within 4.8e-7 of the exact erf everywhere (|erf(4)| is 1 - 1.5e-8), with no exponential.
_ERF_P = (
    1.1283791680767727,
    0.18528004756608046,
    0.054354039033529665,
    0.003856483860993002,
    0.0003808602795469856,
    4.715143150485185e-06,
    -1.3360412304911503e-08,
)
_ERF_Q = (
    1.0,
    0.4975335645455991,
    0.11401405954941177,
    0.015479859210932971,
    0.001310694014802704,
    6.34038039258537e-05,
)


def _erf(x: Any) -> Any:
    clamped = te.max(te.min(x, te.const(4.0, _F32)), te.const(-4.0, _F32))
    square = clamped * clamped

    def horner(coefficients: tuple[float, ...]) -> Any:
        value = te.const(coefficients[-1], _F32)
        for c in coefficients[-2::-1]:
            value = value * square + te.const(c, _F32)
        return value

    return clamped * horner(_ERF_P) / horner(_ERF_Q)


def _clip(x: Any, *, lo: float, hi: float) -> Any:
    return te.min(te.max(x, te.const(lo, _F32)), te.const(hi, _F32))


#: The float32 steps declared for the LLVM backend, by operator name: each takes the input
#: slots, the output slot and the step's attributes and returns :data:`Declared` or None.
FLOAT_OPS: dict[str, Callable[..., Declared | None]] = {
    "Conv": _conv,
    "ToNCHWc": _to_nchwc,
    "FromNCHWc": _from_nchwc,
    "ConvNCHWc": _blocked_window(CONV2D_NCHWC, slice(2, 4)),
    "DepthwiseNCHWc": _blocked_window(DEPTHWISE_CONV2D_NCHWC, slice(1, 3)),
    "MaxPoolNCHWc": _max_pool_nchwc,
    "Gemm": _gemm,
    "MatMul": _matmul,
    "PackedMatMul": _packed_matmul,
    "MaxPool": _pool("max"),
    "AveragePool": _pool("avg"),
    "GlobalAveragePool": _global_average,
    "Relu": _elementwise(lambda x: te.max(x, te.const(0.0, _F32)), "relu"),
    "Clip": _elementwise(_clip, "clip", attribute_fn=True),
    "Add": _elementwise(lambda a, b: a + b, "add"),
    "Sub": _elementwise(lambda a, b: a - b, "sub"),
    "Mul": _elementwise(lambda a, b: a * b, "mul"),
    "Div": _elementwise(lambda a, b: a / b, "div"),
    "Erf": _elementwise(_erf, "erf"),
    "Flatten": _copy,
    "Reshape": _copy,
}
