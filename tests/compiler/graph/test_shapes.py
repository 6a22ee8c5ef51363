"""Type inference refuses what the operators cannot compute, naming the node: a pooling window
that padding fills entirely (ONNX forbids a pad as large as the kernel), or that no window of the
padded input holds."""

from __future__ import annotations

import pytest

from compiler.errors import GraphError
from compiler.graph.ir import GraphBuilder, Op, PoolAttrs


def _pool(pads: tuple[int, int, int, int], kernel: int = 3) -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 4, 8, 8))
    b.add1(Op.MAX_POOL, [x], PoolAttrs((kernel, kernel), (1, 1), pads), name="pool")


@pytest.mark.parametrize("side", range(4))
def test_a_pad_as_large_as_the_window_is_refused_and_one_smaller_accepted(side):
    pads = [0, 0, 0, 0]
    pads[side] = 2
    _pool(tuple(pads))  # 2 < 3: a window always covers one input element
    pads[side] = 3
    with pytest.raises(GraphError, match="padding as large as the window") as info:
        _pool(tuple(pads))
    assert "pool" in str(info.value)


def test_a_window_larger_than_the_padded_input_is_refused():
    with pytest.raises(GraphError, match="larger than the padded input"):
        _pool((0, 0, 0, 0), kernel=9)
