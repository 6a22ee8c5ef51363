"""MaxPool and AveragePool over 1, 2 and 3 spatial axes with strides, dilations, pads, ceil mode
and ``count_include_pad``, against onnx's reference implementation
(``onnx.reference.ReferenceEvaluator``) of a one-node model; and QMaxPool, the accelerator's,
refusing what its 2-D undilated window cannot do."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from runtime.opset import OPERATORS, OperandError, TensorType, kernel_kwargs
from runtime.opset.pooling import PoolAttrs

#: (input shape, kernel, strides, dilations, pads): 1-D, 2-D and 3-D windows.
_WINDOWS = [
    ((1, 2, 11), (3,), (2,), (2,), (1, 2)),
    ((2, 3, 7, 8), (2, 3), (1, 2), (2, 1), (1, 0, 0, 2)),
    ((1, 2, 6, 7, 5), (2, 2, 3), (1, 2, 1), (1, 1, 1), (0, 1, 0, 1, 0, 2)),
    ((1, 1, 9, 8, 8), (3, 2, 2), (2, 3, 1), (2, 2, 3), (1, 0, 1, 2, 1, 0)),
]


def _reference(op: str, x: np.ndarray, **attrs: object) -> np.ndarray:
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    return ReferenceEvaluator(model).run(None, {"x": x})[0]


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize(("shape", "kernel", "strides", "dilations", "pads"), _WINDOWS)
@pytest.mark.parametrize(
    ("op", "count_include_pad"), [("MaxPool", False), ("AveragePool", False), ("AveragePool", True)]
)
def test_pooling_of_any_rank_with_dilations(
    op: str,
    count_include_pad: bool,
    shape: tuple[int, ...],
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
    pads: tuple[int, ...],
    ceil_mode: bool,
) -> None:
    x = np.random.default_rng(len(shape)).uniform(-1, 1, shape).astype(np.float32)
    attrs = PoolAttrs(kernel, strides, pads, ceil_mode, count_include_pad, dilations)
    definition = OPERATORS[op]
    (ty,) = definition.output_types(attrs, [TensorType(x.shape)])
    got = definition.kernel(x, **kernel_kwargs(attrs))
    options = dict(
        kernel_shape=kernel, strides=strides, dilations=dilations, pads=pads, ceil_mode=ceil_mode
    )
    if op == "AveragePool":
        options["count_include_pad"] = int(count_include_pad)
    want = _reference(op, x, **options)
    assert got.shape == ty.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_window_tuples_must_match_the_spatial_rank() -> None:
    x = TensorType((1, 2, 6, 6, 6))
    with pytest.raises(OperandError, match="needs 3 strides and dilations and 6 pads"):
        OPERATORS["MaxPool"].output_types(PoolAttrs((2, 2, 2)), [x])
    with pytest.raises(OperandError, match="needs a 4-D input for a 2-D window"):
        OPERATORS["AveragePool"].output_types(PoolAttrs((2, 2)), [x])


@pytest.mark.parametrize(
    ("attrs", "shape", "complaint"),
    [
        (PoolAttrs((2, 2, 2), (1, 1, 1), (0,) * 6, dilations=(1, 1, 1)), (1, 16, 4, 4, 4), "2-D"),
        (PoolAttrs((2, 2), dilations=(2, 2)), (1, 16, 6, 6), "no dilations"),
    ],
)
def test_the_accelerators_max_pool_stays_2d_and_undilated(
    attrs: PoolAttrs, shape: tuple[int, ...], complaint: str
) -> None:
    with pytest.raises(OperandError, match=complaint):
        OPERATORS["QMaxPool"].output_types(attrs, [TensorType(shape, "int8")])
