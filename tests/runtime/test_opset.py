"""The operator set: each operator's parts agree, and a definition whose parts disagree is
refused where it is written."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.opset import (
    OPERATORS,
    AxisAttrs,
    ConvAttrs,
    NoAttrs,
    OperandError,
    Operator,
    OperatorError,
    PackAttrs,
    PackWeightsAttrs,
    PoolAttrs,
    QAddAttrs,
    QDenseAttrs,
    TensorType,
)
from runtime.opset.base import MANY
from runtime.opset.blocked import (
    BlockAttrs,
    BlockedConvAttrs,
    PanelAttrs,
    block_channels,
    block_conv_weights,
    block_depthwise_weights,
    pack_panels,
    unblock_channels,
    unblock_conv_weights,
    unblock_depthwise_weights,
    unpack_panels,
)


@pytest.mark.parametrize("name", list(OPERATORS))
def test_every_kernel_takes_its_records_fields_and_admits_its_arity(name):
    cls = OPERATORS[name]
    params = inspect.signature(cls.kernel).parameters.values()
    keywords = {p.name for p in params if p.kind is p.KEYWORD_ONLY}
    assert keywords == {f.name for f in dataclasses.fields(cls.Attrs)}
    positional = [p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    variadic = any(p.kind is p.VAR_POSITIONAL for p in params)
    assert cls.arity[1] == MANY or variadic or len(positional) >= cls.arity[1]
    assert cls.name == name and cls.infer is not Operator.infer


def _define(**body):
    """A new operator class made of ``body`` (registered if its parts agree)."""
    return type("Probe", (Operator,), body)


@dataclass(frozen=True)
class _Scale:
    factor: float


def _infer(attrs, inputs, consts):
    return [inputs[0]]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        # the kernel's keywords are not the record's fields
        (dict(Attrs=_Scale, kernel=staticmethod(lambda x, *, scale: x)), "keyword-only"),
        (dict(Attrs=_Scale, kernel=staticmethod(lambda x: x)), "keyword-only"),
        # the kernel cannot take the inputs the arity admits
        (dict(arity=(1, 2), kernel=staticmethod(lambda x: x)), "do not admit the arity"),
        (dict(arity=(1, 1), kernel=staticmethod(lambda x, y: x)), "do not admit the arity"),
        # no kernel, a name or member taken, a record that is no frozen dataclass
        (dict(), "defines no kernel"),
        (dict(name="Conv", kernel=staticmethod(lambda x: x)), "registered twice"),
        (dict(member="CONV", kernel=staticmethod(lambda x: x)), "is taken"),
        (dict(Attrs=dict, kernel=staticmethod(lambda x: x)), "frozen dataclass"),
    ],
)
def test_a_definition_whose_parts_disagree_is_refused(body, words):
    before = dict(OPERATORS)
    body = {"name": "Probe", "member": "PROBE", "infer": staticmethod(_infer), **body}
    with pytest.raises(TypeError, match=words):
        _define(**body)
    assert before == OPERATORS


def test_a_type_rule_checks_the_record_and_the_arity_first():
    conv = OPERATORS["Conv"]
    x, w = TensorType((1, 3, 8, 8)), TensorType((4, 3, 3, 3))
    with pytest.raises(OperandError, match="needs a ConvAttrs record"):
        conv.output_types(OPERATORS["Gemm"].Attrs(), [x, w])
    with pytest.raises(OperandError, match="takes 2 to 3 inputs, got 1"):
        conv.output_types(conv.Attrs(), [x])
    assert conv.output_types(conv.Attrs(), [x, w]) == [TensorType((1, 4, 6, 6))]


def test_concat_takes_one_input_or_more():
    """ONNX Concat: one input is that input; none is an arity error (not a crash in the type
    rule)."""
    concat, x = OPERATORS["Concat"], TensorType((2, 3))
    assert concat.output_types(AxisAttrs(1), [x]) == [x]
    assert concat.output_types(AxisAttrs(1), [x, TensorType((2, 4))]) == [TensorType((2, 7))]
    with pytest.raises(OperandError, match="takes 1 to any number of inputs, got 0"):
        concat.output_types(AxisAttrs(0), [])


@pytest.mark.parametrize(
    ("a", "b", "words"),
    [
        (TensorType((1, 4), "int8"), TensorType((1, 5), "int8"), "needs operands of one shape"),
        (TensorType((1, 5), "int8"), TensorType((1, 4), "int8"), "needs operands of one shape"),
        (TensorType((1, 4), "int32"), TensorType((1, 4), "int8"), "needs int8 operands"),
        (TensorType((1, 4), "int8"), TensorType((1, 4), "int32"), "needs int8 operands"),
    ],
)
def test_qadd_refuses_operands_unlike_each_other_or_not_int8(a, b, words):
    """QAdd adds two int8 tensors element by element: each operand is checked, either one
    may be the odd one out."""
    qadd, attrs = OPERATORS["QAdd"], QAddAttrs(0, 0, 1)
    with pytest.raises(OperandError, match=words):
        qadd.output_types(attrs, [a, b])
    same = TensorType((1, 4), "int8")
    assert qadd.output_types(attrs, [same, same]) == [same]


def test_types_outside_the_contract_are_refused():
    with pytest.raises(OperatorError, match="dtype 'complex64'"):
        TensorType((1,), "complex64")
    with pytest.raises(OperatorError, match="negative dimension"):
        TensorType((2, -1))


@given(
    n=st.integers(1, 3),
    batch=st.sampled_from([1, 2]),
    c=st.integers(1, 40),
    block=st.sampled_from([1, 4, 16]),
    spatial=st.lists(st.integers(1, 4), max_size=2),
)
def test_pack_and_unpack_invert_each_other_and_their_types_are_their_kernels(
    n, batch, c, block, spatial
):
    x = np.arange(n * batch * c * int(np.prod(spatial)), dtype=np.int32) % 251 - 125
    x = x.astype(np.int8).reshape(n * batch, c, *spatial)
    attrs = PackAttrs(batch, block, c)
    fields = dataclasses.asdict(attrs)
    pack, unpack = OPERATORS["Pack"], OPERATORS["Unpack"]
    packed = pack.kernel(x, **fields)
    (packed_type,) = pack.output_types(attrs, [TensorType(x.shape, "int8")])
    assert packed_type == TensorType(packed.shape, "int8")
    back = unpack.kernel(packed, **fields)
    assert unpack.output_types(attrs, [packed_type]) == [TensorType(x.shape, "int8")]
    np.testing.assert_array_equal(back, x)
    if c % block:  # the last channel block's lanes past the channels are zeros
        assert not packed[:, -1, ..., c % block :].any()


def test_pack_refuses_a_batch_that_its_blocks_do_not_divide():
    with pytest.raises(OperandError, match="not a multiple of 2"):
        OPERATORS["Pack"].output_types(PackAttrs(2, 16, 3), [TensorType((3, 3, 4, 4), "int8")])


@given(
    groups=st.integers(1, 3),
    rows=st.integers(1, 5),
    depth=st.integers(1, 20),
    columns=st.integers(1, 20),
    shift=st.integers(0, 12),
    seed=st.integers(0, 2**16),
)
def test_a_batched_product_is_each_groups_dense_layer(groups, rows, depth, columns, shift, seed):
    """QBatchMatMul against a loop over the groups in Python integers; its type rule and the
    packing of its right operand agree with the kernels."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (groups * rows, depth)).astype(np.int8)
    w = rng.integers(-128, 128, (groups, depth, columns)).astype(np.int8)
    bias = rng.integers(-(2**12), 2**12, columns).astype(np.int32)
    op = OPERATORS["QBatchMatMul"]
    got = op.kernel(x, w, bias, shift=shift, lo=-100, hi=90)
    for g in range(groups):
        for r in range(rows):
            for c in range(columns):
                acc = sum(int(x[g * rows + r, k]) * int(w[g, k, c]) for k in range(depth))
                want = min(90, max(-100, (acc + int(bias[c])) >> shift))
                assert got[g * rows + r, c] == want
    types = [TensorType(x.shape, "int8"), TensorType(w.shape, "int8")]
    assert op.output_types(QDenseAttrs(shift), types) == [TensorType(got.shape, "int8")]
    packed = OPERATORS["PackWeights"].kernel(w, block=4)
    (packed_type,) = OPERATORS["PackWeights"].output_types(PackWeightsAttrs(4), types[1:])
    assert packed_type == TensorType(packed.shape, "int8")


def test_a_batched_product_refuses_rows_that_are_not_whole_groups():
    types = [TensorType((5, 4), "int8"), TensorType((2, 4, 3), "int8")]
    with pytest.raises(OperandError, match="5 rows are not 2 groups"):
        OPERATORS["QBatchMatMul"].output_types(QDenseAttrs(0), types)


@given(
    kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    groups=st.integers(1, 3),
    channels=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilations=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    extra=st.tuples(st.integers(0, 4), st.integers(0, 4)),
)
def test_a_convolutions_macs_are_the_products_its_kernel_sums(
    kernel, groups, channels, strides, dilations, extra
):
    """With ones for data and weights (and no padding), each output of Conv's kernel is the
    number of products it sums, so the outputs add up to the operator's MACs: for kernels of
    any aspect, groups, strides and dilations."""
    (kh, kw), (per_group, out_per_group) = kernel, channels
    height, width = ((k - 1) * d + 1 + e for k, d, e in zip(kernel, dilations, extra, strict=True))
    x = TensorType((2, per_group * groups, height, width), "float32")
    w = TensorType((out_per_group * groups, per_group, kh, kw), "float32")
    attrs = ConvAttrs(strides, (0, 0, 0, 0), dilations, groups)
    conv = OPERATORS["Conv"]
    outputs = conv.output_types(attrs, [x, w])
    ones = [np.ones(t.shape, np.float32) for t in (x, w)]
    y = conv.kernel(*ones, **dataclasses.asdict(attrs))
    assert y.shape == outputs[0].shape
    assert conv.macs(attrs, [x, w], outputs) == int(y.sum())


@given(
    blocks=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    widths=st.tuples(st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 4])),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    stride=st.integers(1, 2),
    pads=st.tuples(*[st.integers(0, 1)] * 4),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_blocked_convolutions_are_the_convolutions_of_their_unblocked_values(
    blocks, widths, kernel, stride, pads, bias, seed
):
    """ConvNCHWc and DepthwiseNCHWc (the CPU target's blocked operators): blocking inverts,
    each element lands where the docstrings say, and type rule, kernel and MACs are Conv's
    over the unblocked values, bit for bit."""
    (cb, ob), (ib, oc) = blocks, widths
    c, o = cb * ib, ob * oc
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, c, 4, 5)).astype(np.float32)
    xb = block_channels(x, block=ib)
    assert xb[0, cb - 1, 3, 4, ib - 1] == x[0, c - 1, 3, 4]
    np.testing.assert_array_equal(unblock_channels(xb), x)
    w = rng.standard_normal((o, c, *kernel)).astype(np.float32)
    wb = block_conv_weights(w, ib, oc)
    assert wb.shape == (ob, cb, *kernel, ib, oc)
    assert wb[ob - 1, cb - 1, 0, 0, ib - 1, oc - 1] == w[o - 1, c - 1, 0, 0]
    np.testing.assert_array_equal(unblock_conv_weights(wb), w)
    dw = rng.standard_normal((c, 1, *kernel)).astype(np.float32)
    dwb = block_depthwise_weights(dw, ib)
    np.testing.assert_array_equal(unblock_depthwise_weights(dwb), dw)
    cases = [("ConvNCHWc", 1, w, wb, o, oc), ("DepthwiseNCHWc", c, dw, dwb, c, ib)]
    clip = [(-np.inf, np.inf), (0.0, np.inf), (0.0, 0.5)][seed % 3]
    for name, groups, plain_w, blocked_w, outs, out_block in cases:
        b = [rng.standard_normal(outs).astype(np.float32)] if bias else []
        plain_attrs = ConvAttrs((stride, stride), pads, (1, 1), groups)
        attrs = BlockedConvAttrs(**dataclasses.asdict(plain_attrs), lo=clip[0], hi=clip[1])
        conv, op = OPERATORS["Conv"], OPERATORS[name]
        types = [TensorType(a.shape, "float32") for a in (x, plain_w, *b)]
        blocked_types = [TensorType(a.shape, "float32") for a in (xb, blocked_w, *b)]
        want = conv.kernel(x, plain_w, *b, **dataclasses.asdict(plain_attrs))
        if clip[0] > -np.inf:  # the fused activation: Relu's, or Clip's
            relu = clip[1] == np.inf
            activation = OPERATORS["Relu"] if relu else OPERATORS["Clip"]
            want = activation.kernel(want, **({} if relu else {"lo": clip[0], "hi": clip[1]}))
        got = op.kernel(xb, blocked_w, *b, **dataclasses.asdict(attrs))
        np.testing.assert_array_equal(got, block_channels(want, block=out_block))
        (out,) = op.output_types(attrs, blocked_types)
        assert out == TensorType(got.shape, "float32")
        plain_out = conv.output_types(plain_attrs, types)
        assert op.macs(attrs, blocked_types, [out]) == conv.macs(plain_attrs, types, plain_out)
    to, back = OPERATORS["ToNCHWc"], OPERATORS["FromNCHWc"]
    assert to.output_types(BlockAttrs(ib), [TensorType(x.shape)]) == [TensorType(xb.shape)]
    assert back.output_types(NoAttrs(), [TensorType(xb.shape)]) == [TensorType(x.shape)]


def test_a_blocked_max_pool_is_the_max_pool_of_its_unblocked_value():
    x = np.random.default_rng(0).standard_normal((1, 8, 7, 6)).astype(np.float32)
    attrs = PoolAttrs((3, 2), (2, 2), (1, 0, 1, 1), ceil_mode=True)
    fields = dataclasses.asdict(attrs)
    want = OPERATORS["MaxPool"].kernel(x, **fields)
    pool = OPERATORS["MaxPoolNCHWc"]
    got = pool.kernel(block_channels(x, block=4), **fields)
    np.testing.assert_array_equal(got, block_channels(want, block=4))
    assert pool.output_types(attrs, [TensorType((1, 2, 7, 6, 4))]) == [TensorType(got.shape)]


@given(
    rows=st.tuples(st.integers(1, 3), st.integers(1, 6)),
    depth=st.integers(1, 9),
    columns=st.integers(1, 20),
    width=st.sampled_from([1, 4, 8]),
    bias=st.booleans(),
)
def test_a_packed_product_is_the_product_by_the_matrix_its_panels_hold(
    rows, depth, columns, width, bias
):
    rng = np.random.default_rng(depth * columns)
    a = rng.standard_normal((*rows, depth)).astype(np.float32)
    b = rng.standard_normal((depth, columns)).astype(np.float32)
    panels = pack_panels(b, width)
    assert panels.shape == (-(-columns // width), depth, width)
    assert not panels[-1, :, columns - (panels.shape[0] - 1) * width :].any()  # zero tail
    np.testing.assert_array_equal(unpack_panels(panels, columns), b)
    c = [rng.standard_normal(columns).astype(np.float32)] if bias else []
    want = OPERATORS["MatMul"].kernel(a, b)
    if bias:
        want = OPERATORS["Add"].kernel(want, c[0])
    op, attrs = OPERATORS["PackedMatMul"], PanelAttrs(columns)
    got = op.kernel(a, panels, *c, columns=columns)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    types = [TensorType(x.shape) for x in (a, panels, *c)]
    assert op.output_types(attrs, types) == [TensorType(got.shape)]
    assert op.macs(attrs, types, [TensorType(got.shape)]) == got.size * depth


def test_a_packed_product_refuses_panels_that_do_not_hold_its_columns():
    op, a = OPERATORS["PackedMatMul"], TensorType((2, 4))
    with pytest.raises(OperandError, match="panels hold no 9 columns"):
        op.output_types(PanelAttrs(9), [a, TensorType((2, 4, 4))])
    with pytest.raises(OperandError, match="inner dimensions 4 and 5 differ"):
        op.output_types(PanelAttrs(8), [a, TensorType((2, 5, 4))])
    with pytest.raises(OperandError, match="the bias needs 8 values"):
        op.output_types(PanelAttrs(8), [a, TensorType((2, 4, 4)), TensorType((4,))])


def test_blocked_operators_refuse_plain_or_mismatched_operands():
    x, plain = TensorType((1, 4, 5, 5)), TensorType((4, 4, 3, 3))
    blocked_x = TensorType((1, 2, 5, 5, 2))
    conv, attrs = OPERATORS["ConvNCHWc"], BlockedConvAttrs()
    with pytest.raises(OperandError, match="needs blocked data"):
        conv.output_types(attrs, [x, TensorType((2, 2, 3, 3, 2, 2))])
    with pytest.raises(OperandError, match="needs blocked weights"):
        conv.output_types(attrs, [blocked_x, plain])
    with pytest.raises(OperandError, match="needs one group"):
        grouped = BlockedConvAttrs(groups=2)
        conv.output_types(grouped, [blocked_x, TensorType((2, 2, 3, 3, 2, 2))])
    with pytest.raises(OperandError, match="blocks differ"):
        conv.output_types(attrs, [blocked_x, TensorType((2, 1, 3, 3, 4, 2))])
    with pytest.raises(OperandError, match="one group per channel"):
        OPERATORS["DepthwiseNCHWc"].output_types(attrs, [blocked_x, TensorType((2, 3, 3, 2))])
    with pytest.raises(OperandError, match="block 3"):
        OPERATORS["ToNCHWc"].output_types(BlockAttrs(3), [x])
    with pytest.raises(OperandError, match="needs blocked data"):
        OPERATORS["FromNCHWc"].output_types(NoAttrs(), [x])
