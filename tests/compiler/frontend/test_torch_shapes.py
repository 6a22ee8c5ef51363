"""The PyTorch frontend's indexing, shape and reduction operators against torch itself: each
aten operator as ``torch.export`` gives it (embedding, index_select, select, slice, split,
chunk, squeeze, unsqueeze, expand, repeat, contiguous, mean, sum, amax, argmax), the graph
operators it becomes, and the imported graph's output against the module's; list-valued
operators (split, chunk) whose parts are graph outputs; and the typed errors for what is not
supported."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from compiler.errors import UnsupportedOperator
from compiler.frontend import from_torch
from compiler.graph.interpret import run_graph
from tests.compiler.frontend.test_torch import Fn, _import_and_compare, _inputs, _ops

TOL = {"rtol": 1e-5, "atol": 1e-5}
X = [(2, 6, 5)]

#: (id, forward of one float32[2, 6, 5] input, the IR operators the graph holds)
CASES = [
    ("slice", lambda m, x: x[:, 1:5:2], {"Slice"}),
    ("slice_negative_and_past_the_end", lambda m, x: x[..., -3:] + x[:, :100, 2:], None),
    ("slice_empty", lambda m, x: x[:, 4:2], {"Slice"}),
    ("select", lambda m, x: x[:, 2] * x[-1, -1], {"Gather", "Mul"}),
    ("squeeze_dim", lambda m, x: x[:, :1].squeeze(1), {"Slice", "Reshape"}),
    ("squeeze_all", lambda m, x: x[:1, :, 2:3].squeeze(), {"Slice", "Reshape"}),
    ("squeeze_dims", lambda m, x: x[:1, :1].squeeze((0, 1)), {"Slice", "Reshape"}),
    ("unsqueeze", lambda m, x: x.unsqueeze(-1).unsqueeze(0), {"Reshape"}),
    ("expand", lambda m, x: x[:, :1].expand(-1, 6, -1) * x, {"Slice", "Expand", "Mul"}),
    ("expand_leading", lambda m, x: x.expand(3, 2, 6, 5), {"Expand"}),
    ("repeat", lambda m, x: x.repeat(1, 2, 1), {"Tile"}),
    ("repeat_leading", lambda m, x: x.repeat(2, 1, 1, 3), {"Reshape", "Tile"}),
    ("contiguous", lambda m, x: x.transpose(1, 2).contiguous(), {"Transpose"}),
    ("mean_dim", lambda m, x: x.mean(dim=1), {"ReduceMean"}),
    ("mean_keepdim", lambda m, x: x.mean(dim=(-1, 0), keepdim=True), {"ReduceMean"}),
    ("mean_all", lambda m, x: x.mean(), {"ReduceMean"}),
    ("sum_dims", lambda m, x: x.sum(dim=[0, 2]), {"ReduceSum"}),
    ("sum_keepdim", lambda m, x: x.sum(1, keepdim=True), {"ReduceSum"}),
    ("sum_all", lambda m, x: x.sum(), {"ReduceSum"}),
    ("amax", lambda m, x: x.amax(1) + x.amax((0, 2), keepdim=True).sum(), None),
    ("argmax", lambda m, x: torch.argmax(x, 1), {"ArgMax"}),
    ("argmax_keepdim", lambda m, x: x.argmax(-1, keepdim=True), {"ArgMax"}),
    ("argmax_all", lambda m, x: x.argmax(), {"Reshape", "ArgMax"}),
    ("argmax_all_keepdim", lambda m, x: x.argmax(keepdim=True), {"Reshape", "ArgMax"}),
    ("argmax_of_ties", lambda m, x: (x * 2).to(torch.int64).argmax(1), {"Mul", "Cast", "ArgMax"}),
    ("sum_of_int64", lambda m, x: (x * 10).to(torch.int64).sum(1), {"Mul", "Cast", "ReduceSum"}),
    ("split", lambda m, x: torch.cat(x.split(2, dim=1)[::-1], 1), {"Slice", "Concat"}),
    ("split_uneven", lambda m, x: x.split(4, dim=1)[1] * 2, {"Slice", "Mul"}),
    ("split_with_sizes", lambda m, x: x.split([1, 4], dim=2)[1], {"Slice"}),
    ("chunk", lambda m, x: x.chunk(4, dim=1)[2], {"Slice"}),  # (3 parts of 2)
]


@pytest.mark.parametrize(("forward", "ops"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_one_operator_equals_torch(forward, ops):
    graph = _import_and_compare(Fn(forward), _inputs(X), TOL)
    if ops is not None:
        assert set(_ops(graph)) == ops


def test_an_embedding_and_mean_over_the_sequence():
    torch.manual_seed(0)
    module = Fn(lambda m, ids: m.emb(ids).mean(dim=1), emb=nn.Embedding(10, 4))
    ids = np.random.default_rng(0).integers(0, 10, (3, 7)).astype(np.int64)
    graph = _import_and_compare(module, [ids], TOL)
    assert _ops(graph) == ["Gather", "ReduceMean"]


def test_index_select_of_computed_indices():
    (x,) = _inputs(X)
    index = np.array([4, 0, 3, 4], np.int64)
    module = Fn(lambda m, x, i: x.index_select(2, i))
    graph = _import_and_compare(module, [x, index], TOL)
    assert _ops(graph) == ["Gather"]


@pytest.mark.parametrize("keepdim", [False, True])
def test_the_mean_over_h_and_w_is_a_global_average_pool(keepdim):
    module = Fn(lambda m, x: x.mean(dim=(-2, -1), keepdim=keepdim))
    graph = _import_and_compare(module, _inputs([(2, 3, 4, 5)]), TOL)
    assert _ops(graph) == ["GlobalAveragePool"] + ([] if keepdim else ["Flatten"])


def test_the_parts_of_a_split_can_all_be_outputs():
    module = Fn(lambda m, x: x.chunk(3, dim=-1))
    (x,) = _inputs([(2, 3, 7)])
    graph = from_torch(module, (torch.tensor(x),))
    with torch.no_grad():
        want = [t.numpy() for t in module(torch.tensor(x))]
    got = run_graph(graph, [x])
    assert [a.shape for a in got] == [(2, 3, 3), (2, 3, 3), (2, 3, 1)]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("forward", "words"),
    [
        (lambda m, x: (x * 10).to(torch.int32).sum(1), "int32 values to int64"),
        (lambda m, x: x.mean(1, dtype=torch.float32), "dtype"),
    ],
)
def test_unsupported_arguments_are_typed(forward, words):
    (x,) = _inputs(X)
    with pytest.raises(UnsupportedOperator, match=words):
        from_torch(Fn(forward), (torch.tensor(x),))
