"""The PyTorch frontend's arithmetic, math, comparison, logic and composite operators against
torch itself: each aten operator alone as ``torch.export`` gives it, the graph operators it
becomes, and the output of the imported graph against the module's."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from compiler.errors import UnsupportedOperator
from compiler.frontend import from_torch
from tests.compiler.frontend.test_torch import Fn, _import_and_compare, _inputs, _ops

TOL = {"rtol": 1e-5, "atol": 1e-6}
X = [(3, 4, 8)]

#: (id, forward, the IR operators the graph holds)
CASES = [
    ("tanh", lambda m, x: torch.tanh(x), {"Tanh"}),
    ("exp_neg", lambda m, x: torch.exp(-x), {"Exp", "Neg"}),
    ("log_abs", lambda m, x: torch.log(x.abs() + 1), {"Log", "Abs", "Add"}),
    ("sqrt_rsqrt", lambda m, x: torch.sqrt(x.abs()) + torch.rsqrt(x.abs() + 1), None),
    ("reciprocal", lambda m, x: torch.reciprocal(x + 5), {"Reciprocal", "Add"}),
    ("erf", lambda m, x: torch.erf(x), {"Erf"}),
    ("floor_ceil", lambda m, x: torch.floor(x * 3) + torch.ceil(x * 3), None),
    ("div_scalar", lambda m, x: x / 3.0, {"Div"}),
    ("div_tensor", lambda m, x: x / (x.abs() + 1), None),
    ("div_floor", lambda m, x: torch.div(x * 4, 1.5, rounding_mode="floor"), None),
    ("pow_scalar", lambda m, x: x.pow(2) + x.abs().pow(0.5), None),
    ("maximum", lambda m, x: torch.maximum(x, -x * 0.5), {"Max", "Mul", "Neg"}),
    ("minimum", lambda m, x: torch.minimum(x, x.flip(0) if False else x * 0.3), None),
    ("where_gt", lambda m, x: torch.where(x > 0, x, x * 0.1), {"Greater", "Where", "Mul"}),
    ("masked_fill", lambda m, x: x.masked_fill(x < 0.2, -1.5), {"Less", "Where"}),
    ("comparisons_to_float", lambda m, x: (x == 1).float() + (x >= 0).float(), None),
    ("logic", lambda m, x: (~(x > 0) | (x < -1)).float(), None),
    ("cast_round_trip", lambda m, x: (x * 10).to(torch.int64).to(torch.float32), {"Cast", "Mul"}),
    ("clamp_min", lambda m, x: torch.clamp_min(x, 0.1), {"Clip"}),
    ("gelu", lambda m, x: F.gelu(x), None),
    ("gelu_tanh", lambda m, x: F.gelu(x, approximate="tanh"), None),
    ("silu", lambda m, x: F.silu(x), {"Sigmoid", "Mul"}),
    ("hardswish", lambda m, x: F.hardswish(x * 4), None),
    ("hardsigmoid", lambda m, x: F.hardsigmoid(x * 4), None),
]


@pytest.mark.parametrize(("forward", "ops"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_one_operator_equals_torch(forward, ops):
    graph = _import_and_compare(Fn(forward), _inputs(X), TOL)
    if ops is not None:
        assert set(_ops(graph)) == ops


@pytest.mark.parametrize(
    ("module", "shape"),
    [(nn.LayerNorm(8), (3, 4, 8)), (nn.LayerNorm((4, 8)), (3, 4, 8)), (nn.GELU(), (2, 16))],
)
def test_modules_equal_torch(module, shape):
    torch.manual_seed(0)
    if isinstance(module, nn.LayerNorm):
        with torch.no_grad():
            module.weight.normal_()
            module.bias.normal_()
    graph = _import_and_compare(Fn(lambda m, x: m.inner(x), inner=module), _inputs([shape]), TOL)
    assert _ops(graph)[-1] in ("LayerNormalization", "Mul")


def test_a_layer_norm_without_affine_parameters():
    module = Fn(lambda m, x: m.norm(x), norm=nn.LayerNorm(8, elementwise_affine=False))
    graph = _import_and_compare(module, _inputs(X), TOL)
    assert _ops(graph) == ["LayerNormalization"]


def test_integer_arithmetic_and_comparisons_keep_torch_dtypes():
    def forward(m, x):
        ids = (x * 10).to(torch.int64)
        return ((ids + 3) * 2 - ids > 4).to(torch.float32) + (ids / 3).abs()

    _import_and_compare(Fn(forward), _inputs(X), TOL)


def test_unsupported_roundings_are_typed():
    module = Fn(lambda m, x: torch.div((x * 10).to(torch.int64), 3, rounding_mode="floor"))
    with pytest.raises(UnsupportedOperator, match="floor division of integers"):
        from_torch(module, (torch.tensor(np.ones((2, 3), np.float32)),))
    module = Fn(lambda m, x: (x * 10).to(torch.int64) // 3)
    with pytest.raises(UnsupportedOperator, match="floor_divide"):
        from_torch(module, (torch.tensor(np.ones((2, 3), np.float32)),))


@pytest.mark.parametrize(
    ("forward", "shape"),
    [
        (lambda m, x: F.dropout(x, 0.5, training=False, inplace=True) * 2, (3, 8)),
        (lambda m, x: x.unflatten(1, (2, 4)).sum(-1), (3, 8)),
        (lambda m, x: torch.addmm(m.b, x, m.w, beta=0.5, alpha=2.0), (3, 8)),
        (lambda m, x: x + torch.arange(8, dtype=torch.float32), (3, 8)),
        (lambda m, x: x * torch.full((8,), 0.25), (3, 8)),
        (lambda m, x: F.adaptive_avg_pool2d(x, (2, 2)), (1, 3, 4, 6)),
        (lambda m, x: F.adaptive_avg_pool2d(x, (4, 6)), (1, 3, 4, 6)),
        (lambda m, x: sum(x.unbind(1)), (3, 4, 5)),
    ],
    ids=[
        "dropout_",
        "unflatten",
        "addmm",
        "arange",
        "full",
        "adaptive_2x2",
        "adaptive_same",
        "unbind",
    ],
)
def test_more_aten_operators_equal_torch(forward, shape):
    module = Fn(forward)
    module.register_buffer("b", torch.linspace(-1, 1, 5))
    module.register_buffer("w", torch.linspace(-1, 1, 40).reshape(8, 5))
    _import_and_compare(module, _inputs([shape]), TOL)


@pytest.mark.parametrize("mask", ["none", "causal", "bool", "float"])
def test_scaled_dot_product_attention_is_decomposed_and_equals_torch(mask):
    causal = torch.tril(torch.ones(6, 6, dtype=torch.bool))

    def forward(m, q, k, v):
        if mask == "bool":
            return F.scaled_dot_product_attention(q, k, v, attn_mask=causal)
        if mask == "float":
            return F.scaled_dot_product_attention(q, k, v, attn_mask=causal.float() * 0.5)
        return F.scaled_dot_product_attention(q, k, v, is_causal=mask == "causal")

    graph = _import_and_compare(Fn(forward), _inputs([(2, 3, 6, 4)] * 3), TOL)
    assert "MatMul" in _ops(graph) and "Softmax" in _ops(graph)


@pytest.mark.parametrize(("size", "shape"), [((3, 3), (1, 2, 4, 4)), ((2, 5), (2, 3, 7, 9))])
def test_adaptive_pooling_to_any_size_equals_torch(size, shape):
    graph = _import_and_compare(Fn(lambda m, x: F.adaptive_avg_pool2d(x, size)), _inputs([shape]))
    assert "ReduceMean" in _ops(graph)


def test_constants_built_by_assigning_into_slices_are_computed_at_import():
    """A mask made as Swin makes its shifted-window mask (a fresh tensor like the input,
    filled slice by slice, compared) and a table indexed by a constant index: torch computes
    them as the model is read; the graph holds them as parameters."""

    def forward(m, x):
        mask = x.new_zeros((4, 6))
        for k, (rows, cols) in enumerate([(slice(0, 2), slice(0, 3)), (slice(2, 4), slice(3, 6))]):
            mask[rows, cols] = k + 1
        bias = m.table[m.index]
        return x.masked_fill(mask != 0, -1.0) + bias + torch.roll(x, shifts=(1, -2), dims=(0, 1))

    module = Fn(forward)
    module.register_buffer("table", torch.linspace(-1, 1, 10))
    module.register_buffer("index", torch.tensor([[0, 3, 9, 2, 2, 1]] * 4))
    graph = _import_and_compare(module, _inputs([(4, 6)]), TOL)
    # the mask and the table lookup are parameters; the roll of x is two slices per axis
    assert sorted(_ops(graph)) == sorted(["Where", "Add", "Add", *["Slice", "Slice", "Concat"] * 2])
